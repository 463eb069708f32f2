/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "memgov/sql.h"

/* Whether the server measures each session's memory, which the reset chooses by. MariaDB
 * always does (PROCESSLIST.MEMORY_USED). MySQL does through performance_schema's memory
 * instruments (on by default since 8.0): with performance_schema off, or the instruments off
 * (performance-schema-instrument='memory/%=OFF', or setup_instruments), every session reads as
 * holding nothing, or less than it holds. */
typedef enum SessionMemory {
        SESSION_MEMORY_MEASURED,
        SESSION_MEMORY_PARTIAL, /* some memory instruments off: the figures are short */
        SESSION_MEMORY_OFF,     /* performance_schema or all its memory instruments off */
} SessionMemory;

/* Asks the server over c. Returns 0 and *ret, with a sentence in why (what is off and how to
 * turn it on) unless MEASURED; or a negative errno when the server could not be asked, why
 * saying so. */
int session_memory_check(SqlConn *c, SessionMemory *ret, char *why, size_t why_size);

const char *session_memory_to_string(SessionMemory m);
