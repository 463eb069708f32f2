/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/policy.h"

/* Choosing the sessions to reset (pure): idle sessions first, the ones holding the most memory
 * first (or, in a connection storm, the newest first), above a minimum size; never replication
 * threads, the event scheduler, system threads, memgov's own session or exempt users and hosts;
 * sessions inside a write transaction only when allowed. */

typedef struct Session {
        uint64_t id;
        char user[POLICY_USER_MAX];
        char host[POLICY_HOST_MAX]; /* "10.0.0.5:51234", "localhost" */
        char command[32];           /* Sleep, Query, Binlog Dump, Daemon... */
        uint64_t time_s;            /* seconds in the current command: idle time when Sleep */
        uint64_t memory;            /* bytes the session holds */
        bool in_write_trx;
} Session;

/* A session as an earlier listing of the same server process saw it. */
typedef struct SessionSeen {
        uint64_t id;
        uint64_t memory;
} SessionSeen;

typedef struct SessionSelect {
        unsigned max;
        uint64_t min_memory;
        usec_t min_idle;
        bool allow_write_trx;
        bool newest_first; /* by ID, the highest (the last to connect) first, idle or not */
        uint64_t own_id;
        const Policy *policy; /* exempt users and hosts */
        /* With growing_only (the emergency reset), a session in seen (the last listing of this
         * server process) that holds no more now than it did then, give or take a hundredth,
         * is passed over unless it holds still_enough or more: it is not what grows, and ending
         * it buys less than that (session_not_growing). */
        bool growing_only;
        uint64_t still_enough;
        const SessionSeen *seen;
        unsigned n_seen;
        /* A storm's newcomers, the sessions from this ID up (sessions_newcomers_from()), that run
         * the statement they ran when seen (not idle, in it at least seen_ago) are not passed over
         * by growing_only; 0: none (IDs start at 1). */
        uint64_t newcomers_from;
        usec_t seen_ago; /* how long ago seen was listed */
} SessionSelect;

/* One row of the session list query (act/reset.c): ID, USER, HOST, COMMAND, TIME, memory in bytes,
 * rows modified plus locks held by its transaction; NULL cells are SQL NULL. Numbers are plain
 * non-negative decimals; a TIME or memory cell that is not one counts as 0, a transaction cell
 * that is not one as a write transaction. Returns 1 with *ret filled, 0 for a row that names no
 * session (fewer than 7 columns, an ID that is NULL or not a number). */
int session_from_row(unsigned n_fields, char *const *row, Session *ret);

/* Why a session is never reset (NULL when it may be). */
const char *session_exempt(const Session *s, const SessionSelect *q);
/* With q->growing_only: the session was in q->seen, holds no more than it did then, and less
 * than q->still_enough, and is not one of a storm's newcomers still in the statement it ran
 * then (q->newcomers_from). */
bool session_not_growing(const Session *s, const SessionSelect *q);
/* The lowest ID of the newcomers newest clients (by ID: the last to connect), for
 * q->newcomers_from; all clients when there are fewer; 0 for none. */
uint64_t sessions_newcomers_from(const Session *s, unsigned n, const SessionSelect *q, unsigned newcomers);
/* The sessions at q->min_memory that could be reset but for session_not_growing(). */
unsigned sessions_passed_over(const Session *s, unsigned n, const SessionSelect *q);
bool session_is_idle(const Session *s, const SessionSelect *q);

/* Fills chosen with up to q->max indexes into s, in the order to reset them: idle ones first,
 * each part by memory, the largest first; with q->newest_first, by ID, the newest first. None
 * that session_not_growing() passes over. */
unsigned sessions_select(const Session *s, unsigned n, const SessionSelect *q, unsigned *chosen);

/* How long the session has been in its current statement, in seconds: 0 when idle. */
uint64_t session_statement_seconds(const Session *s);

/* The clients over keep, for an admission lowered below the clients connected: clients - keep of
 * them, the longest in one statement first (an idle one counts as in none), then the newest (the
 * highest IDs: the last to connect); of those, up to q->max indexes into s go into chosen, none
 * exempt (session_exempt; q->min_memory and q->min_idle do not apply). The clients are the
 * sessions but memgov's own and the server's and replication threads; exempt ones and those in
 * a write transaction are clients, counted among those kept when the order puts them there, and
 * never ended. *ret_clients (if not NULL) says how many clients there are. */
unsigned sessions_excess(const Session *s, unsigned n, const SessionSelect *q, uint64_t keep, unsigned *chosen,
                         unsigned *ret_clients);

/* The sessions of another server's replica (its binlog dump): connections the server counts
 * against max_connections as a client's, that are not clients to end. */
unsigned sessions_replicas(const Session *s, unsigned n);

/* The memory of the largest session that may be reset, whatever q->min_memory and whether it
 * grows (0: none may):
 * what a reset that found none at min-memory says, so that the floor can be judged. */
uint64_t sessions_largest(const Session *s, unsigned n, const SessionSelect *q);
