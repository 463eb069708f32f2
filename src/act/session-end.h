/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/sessions.h"
#include "memgov/sql.h"

/* The server's sessions over [sql], and ending them: what the reset rung and a carried admission
 * share. */

#define SESSIONS_MAX 4096

/* Fills s (room for SESSIONS_MAX) with the server's sessions and whether each is in a write
 * transaction (information_schema on MariaDB, performance_schema on MySQL); with memory, each one's
 * memory too (on MySQL a heavier query; without, MySQL's sessions show 0). */
int sessions_list(SqlConn *conn, bool memory, Session *s, unsigned *ret_n, char *why, size_t why_size);

/* KILL CONNECTION each chosen session, then waits (up to 2 s) for their threads to end, so that
 * their memory is back with the allocator. Returns how many were ended (a session gone already
 * counts). */
unsigned sessions_end(SqlConn *conn, const Session *s, const unsigned *chosen, unsigned k);
