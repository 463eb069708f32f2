/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/parse-proc.h"
#include "memgov/session-memory.h"
#include "memgov/sql.h"

/* The server as the action thread's kept session knows it, for memgov status: the version the
 * server gave at the handshake (kept from the last session opened for this process), the
 * allocator its maps show, and the session's state. */
/* Whether the server process accepts clients yet, as the kept session found it. */
typedef enum ServerAccepting {
        ACCEPTING_UNKNOWN, /* not tried yet, or not a database server (it may never listen) */
        ACCEPTING_NOT_YET, /* a database server that listens on nothing yet: starting */
        ACCEPTING_YES,     /* it answered since it started (a session, or a refusal) */
} ServerAccepting;

typedef struct SqlKeepInfo {
        pid_t pid;
        SqlKeepState state;
        ServerAccepting accepting;
        usec_t first_look; /* CLOCK_MONOTONIC: the first look at this process */
        unsigned long long session_id; /* 0: none open */
        bool mariadb;
        char version[96];
        Allocator allocator;
        char why[256]; /* SQL_KEEP_FAILED: the last failure */
        /* Whether the server measures each session's memory, asked when a session is opened;
         * what is off in session_memory_why. */
        SessionMemory session_memory;
        bool session_memory_known;
        char session_memory_why[384];
} SqlKeepInfo;

void sql_keep_info(SqlKeepInfo *ret);
