/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memgov/scan.h"
#include "memgov/sessions.h"

/* A cell holding a plain non-negative decimal number. The server's columns are signed, and
 * strtoull() would take "-1" for 2^64 - 1 (the largest session of all) and "12abc" for 12. */
static bool cell_to_u64(const char *cell, uint64_t *ret) {
        return cell && span_to_u64(span_from_str(cell), ret) == 0;
}

int session_from_row(unsigned n_fields, char *const *row, Session *ret) {
        uint64_t id, v;

        /* Without an ID there is nothing to KILL. */
        if (n_fields < 7 || !cell_to_u64(row[0], &id))
                return 0;
        *ret = (Session) { .id = id };
        snprintf(ret->user, sizeof(ret->user), "%s", row[1] ? row[1] : "");
        snprintf(ret->host, sizeof(ret->host), "%s", row[2] ? row[2] : "");
        snprintf(ret->command, sizeof(ret->command), "%s", row[3] ? row[3] : "");
        /* Unknown figures count as nothing: not idle, no memory. */
        ret->time_s = cell_to_u64(row[4], &v) ? v : 0;
        ret->memory = cell_to_u64(row[5], &v) ? v : 0;
        /* Rows changed or locks held: a write transaction whose rollback would cost. A figure that
         * is not a number counts as one: such a session is better spared. */
        ret->in_write_trx = row[6] && !(cell_to_u64(row[6], &v) && v == 0);
        return 1;
}

bool session_is_idle(const Session *s, const SessionSelect *q) {
        /* Seconds against microseconds, without the product wrapping around. */
        return streq(s->command, "Sleep") &&
               (s->time_s > UINT64_MAX / USEC_PER_SEC || s->time_s * USEC_PER_SEC >= q->min_idle);
}

static bool host_matches(const char *session_host, const char *exempt) {
        /* The processlist shows "host:port" for TCP clients. */
        size_t n = strlen(exempt);
        return strncasecmp(session_host, exempt, n) == 0 && (session_host[n] == '\0' || session_host[n] == ':');
}

/* A replica's connection to this server (its binlog dump): counted against max_connections by the
 * server, not a client to end. */
static bool session_is_replica(const Session *s) {
        static const char *const replica_commands[] = { "Binlog Dump", "Binlog Dump GTID", "Register Slave" };
        for (size_t i = 0; i < ELEMENTSOF(replica_commands); i++)
                if (streq(s->command, replica_commands[i]))
                        return true;
        return false;
}

unsigned sessions_replicas(const Session *s, unsigned n) {
        unsigned k = 0;
        for (unsigned i = 0; i < n; i++)
                k += session_is_replica(&s[i]);
        return k;
}

/* Why a session is not a client's: memgov's own, a replication or server thread (NULL for a client). */
static const char *session_not_client(const Session *s, const SessionSelect *q) {
        static const char *const system_commands[] = { "Daemon", "Connect", "Slave_IO", "Slave_SQL", "Slave_worker",
                                                        "Killed" };
        if (s->id == q->own_id)
                return "memgov's own session";
        if (session_is_replica(s))
                return "a replication or server thread";
        for (size_t i = 0; i < ELEMENTSOF(system_commands); i++)
                if (streq(s->command, system_commands[i]))
                        return "a replication or server thread";
        /* By name only with no client host: the server's own threads have none, and a client of an
         * anonymous account shows the name it logged in with, whatever it is ("system user",
         * "unauthenticated user"). A connection still logging in shows the command Connect. */
        if ((streq(s->user, "system user") || streq(s->user, "event_scheduler") || s->user[0] == '\0') &&
            s->host[0] == '\0')
                return "a system thread";
        return NULL;
}

const char *session_exempt(const Session *s, const SessionSelect *q) {
        const char *why = session_not_client(s, q);
        if (why)
                return why;
        for (unsigned i = 0; q->policy && i < q->policy->n_exempt_users; i++)
                if (streq(s->user, q->policy->exempt_users[i]))
                        return "an exempt user";
        for (unsigned i = 0; q->policy && i < q->policy->n_exempt_hosts; i++)
                if (host_matches(s->host, q->policy->exempt_hosts[i]))
                        return "an exempt host";
        if (s->in_write_trx && !q->allow_write_trx)
                return "inside a write transaction";
        return NULL;
}

/* In an emergency, the sessions that grow: one that holds what it held at the last listing
 * (seconds before, in an emergency) did not bring the server there, and ending it frees once what
 * the growth takes again within moments, unless it holds more than the growth until the emergency
 * is over. Measured: MySQL 9.7, a read-write client's session at 32.6M at two listings 8 s apart,
 * ended (6.5M freed against 5G/h) while 24 sessions grew out of the server's sight. A hundredth
 * of slack: a session's count moves by a few K between two statements.
 * But a storm's newcomer still in the statement it ran then: what brought the server there is
 * the storm's coming, and what that statement took stays held until it ends. Seen passed over:
 * MySQL 9.7, 15 of a storm's sessions holding 16.3M as 3.6 s before, each in a query of 37 s; 8
 * ended (25.8M), and the server went on to restart.at. A newcomer between statements holds what
 * it holds across them, as any session does (an ordinary client that connected with the storm:
 * sysbench's at 32.7M). */
static bool newcomer_in_one_statement(const Session *s, const SessionSelect *q) {
        return q->newcomers_from > 0 && s->id >= q->newcomers_from && !streq(s->command, "Sleep") &&
               (s->time_s > UINT64_MAX / USEC_PER_SEC || s->time_s * USEC_PER_SEC >= q->seen_ago);
}

bool session_not_growing(const Session *s, const SessionSelect *q) {
        if (!q->growing_only || s->memory >= q->still_enough || newcomer_in_one_statement(s, q))
                return false;
        for (unsigned i = 0; i < q->n_seen; i++)
                if (q->seen[i].id == s->id)
                        return s->memory <= q->seen[i].memory + q->seen[i].memory / 100;
        return false;
}

uint64_t sessions_newcomers_from(const Session *s, unsigned n, const SessionSelect *q, unsigned newcomers) {
        uint64_t from = 0, below = UINT64_MAX;
        for (unsigned c = 0; c < newcomers; c++) {
                unsigned best = n;
                for (unsigned i = 0; i < n; i++)
                        if (s[i].id < below && (best == n || s[i].id > s[best].id) && !session_not_client(&s[i], q))
                                best = i;
                if (best == n)
                        break;
                from = below = s[best].id;
        }
        return from;
}

unsigned sessions_passed_over(const Session *s, unsigned n, const SessionSelect *q) {
        unsigned c = 0;
        for (unsigned i = 0; i < n; i++)
                if (s[i].memory >= q->min_memory && !session_exempt(&s[i], q) && session_not_growing(&s[i], q))
                        c++;
        return c;
}

uint64_t sessions_largest(const Session *s, unsigned n, const SessionSelect *q) {
        uint64_t m = 0;
        for (unsigned i = 0; i < n; i++)
                if (s[i].memory > m && !session_exempt(&s[i], q))
                        m = s[i].memory;
        return m;
}

unsigned sessions_select(const Session *s, unsigned n, const SessionSelect *q, unsigned *chosen) {
        unsigned k = 0;

        /* Two passes: idle sessions, then the others; each by memory, largest first. Newest
         * first: one pass, by ID. */
        int passes = q->newest_first ? 1 : 2;
        for (int pass = 0; pass < passes && k < q->max; pass++) {
                unsigned start = k;
                for (unsigned i = 0; i < n; i++) {
                        if (s[i].memory < q->min_memory || session_exempt(&s[i], q) ||
                            session_not_growing(&s[i], q))
                                continue;
                        if (passes == 2 && session_is_idle(&s[i], q) != (pass == 0))
                                continue;
                        /* Insertion into this pass's part of chosen, by memory (or ID). */
                        unsigned j = k;
                        while (j > start && (q->newest_first ? s[chosen[j - 1]].id < s[i].id
                                                             : s[chosen[j - 1]].memory < s[i].memory)) {
                                if (j < q->max)
                                        chosen[j] = chosen[j - 1];
                                j--;
                        }
                        if (j < q->max) {
                                chosen[j] = i;
                                if (k < q->max)
                                        k++;
                        }
                }
        }
        return k;
}

/* The order the clients over a carried lowering go in: the longest in one statement first, then
 * the newest. On a new server process every client connected moments before, the storm's and the
 * application's alike, and the order they came in tells them apart no longer; what does is the
 * statement: a storm's client sits in the one it came for, holding what it took until it ends,
 * where an application's short transactions are in and out of theirs. Seen by connection order:
 * MySQL 9.7, 92 clients on the new process, 82 ended, and 2 of the 10 kept sat in storm queries
 * of 32 s (the next reset's). */
uint64_t session_statement_seconds(const Session *s) {
        return streq(s->command, "Sleep") ? 0 : s->time_s;
}

static bool ends_before(const Session *a, const Session *b) {
        uint64_t ta = session_statement_seconds(a), tb = session_statement_seconds(b);
        return ta != tb ? ta > tb : a->id > b->id;
}

unsigned sessions_excess(const Session *s, unsigned n, const SessionSelect *q, uint64_t keep, unsigned *chosen,
                         unsigned *ret_clients) {
        unsigned clients = 0, k = 0;

        for (unsigned i = 0; i < n; i++)
                if (!session_not_client(&s[i], q))
                        clients++;
        if (ret_clients)
                *ret_clients = clients;
        if (clients <= keep)
                return 0;
        /* The first clients - keep in the order go, but those that may not be ended: a spared one
         * does not send another client in its place. */
        unsigned last = n;
        for (uint64_t j = keep; j < clients && k < q->max; j++) {
                unsigned next = n;
                for (unsigned i = 0; i < n; i++)
                        if (!session_not_client(&s[i], q) && (last == n || ends_before(&s[last], &s[i])) &&
                            (next == n || ends_before(&s[i], &s[next])))
                                next = i;
                last = next; /* there are more than j clients */
                if (!session_exempt(&s[next], q))
                        chosen[k++] = next;
        }
        return k;
}
