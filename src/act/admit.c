/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admit.h"
#include "put-back.h"
#include "memgov/actuator.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/units.h"
#include "session-end.h"
#include "trim.h"

/* Admission control: SET GLOBAL max_connections. A server at its max_connections refuses a new
 * connection with error 1040 "Too many connections" as it logs in; the sessions already there go
 * on. MariaDB 10.11 counts in Connection_errors_max_connections only the connections it refuses
 * as it accepts them (past the one it keeps for SUPER), not those refused at login (measured:
 * a 1040 at login left it at 0). MariaDB and MySQL keep one connection more for an account with
 * SUPER (MariaDB 10.5.2+: CONNECTION ADMIN; MySQL 8: CONNECTION_ADMIN), and MariaDB more on its
 * extra_port (extra_max_connections): memgov's own session still gets in. Setting the variable
 * needs SUPER, or CONNECTION ADMIN on MariaDB 10.5.2+ (measured on 10.11: that alone is enough),
 * SYSTEM_VARIABLES_ADMIN on MySQL 8; lowering it below the sessions connected ends none of them
 * (a carried admission ends them itself: end_excess). */

static const char facts_query[] =
        "SELECT @@GLOBAL.max_connections, "
        "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'THREADS_CONNECTED'), "
        "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
        "WHERE VARIABLE_NAME = 'CONNECTION_ERRORS_MAX_CONNECTIONS')";

/* MySQL 5.7+ keeps the status in performance_schema (information_schema's table is gone in 8.0). */
static const char facts_query_mysql[] =
        "SELECT @@GLOBAL.max_connections, "
        "(SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Threads_connected'), "
        "(SELECT VARIABLE_VALUE FROM performance_schema.global_status "
        "WHERE VARIABLE_NAME = 'Connection_errors_max_connections')";

typedef struct AdmitFacts {
        bool have_max, have_connected, have_errors;
        uint64_t max, connected, errors;
} AdmitFacts;

static int read_facts(void *userdata, unsigned n, char **row) {
        AdmitFacts *f = userdata;
        if (n < 3)
                return 0;
        f->have_max = parse_decimal_u64(row[0], &f->max);
        f->have_connected = parse_decimal_u64(row[1], &f->connected);
        f->have_errors = parse_decimal_u64(row[2], &f->errors);
        return 0;
}

/* Only the variable, for the lowering: the statement a swamped server is asked when it is busiest.
 * The status query above fills a temporary table of every status variable (information_schema) or
 * reads a performance_schema table.
 * Seen: the status query past sql.query-timeout (10 s), 100 sessions on 2 CPUs, MariaDB 10.11. */
static int read_max(void *userdata, unsigned n, char **row) {
        AdmitFacts *f = userdata;
        if (n >= 1)
                f->have_max = parse_decimal_u64(row[0], &f->max);
        return 0;
}

static int max_only(SqlConn *conn, AdmitFacts *ret, char *why, size_t why_size) {
        *ret = (AdmitFacts) {};
        int r = sql_run(conn, "SELECT @@GLOBAL.max_connections", read_max, ret, why, why_size);
        if (r < 0)
                return r;
        if (!ret->have_max) {
                snprintf(why, why_size, "the server did not report max_connections");
                return -EIO;
        }
        return 0;
}

static int facts(SqlConn *conn, AdmitFacts *ret, char *why, size_t why_size) {
        *ret = (AdmitFacts) {};
        int r = sql_run(conn, conn->mariadb ? facts_query : facts_query_mysql, read_facts, ret, why, why_size);
        if (r < 0)
                return r;
        if (!ret->have_max || !ret->have_connected) {
                snprintf(why, why_size, "the server did not report max_connections and Threads_connected");
                return -EIO;
        }
        return 0;
}

static bool same_server(const AdmitMemory *m, const ActionTarget *t) {
        return m->configured > 0 && m->pid == t->pid && m->starttime == t->starttime;
}

static int set_max(SqlConn *conn, uint64_t v, ActionResult *ret, const char *what) {
        char stmt[64], why[512];
        snprintf(stmt, sizeof(stmt), "SET GLOBAL max_connections = %" PRIu64, v);
        int r = sql_run(conn, stmt, NULL, NULL, why, sizeof(why));
        if (r == -EACCES)
                return action_refuse(ret, r,
                              "admission: the account may not set max_connections to %s it (it needs SUPER, or "
                              "CONNECTION ADMIN on MariaDB, SYSTEM_VARIABLES_ADMIN on MySQL 8): %s", what, why);
        if (r < 0)
                return action_refuse(ret, r, "admission: %s failed: %s", stmt, why);
        return 0;
}

/* A carried admission (d->admit_carried) lowers max_connections on a new server process below the
 * clients already in: the storm's clients came back before the lowering could be there. As many
 * as are over it are ended (admit.end-excess), the longest in one statement first, then the
 * newest (sessions_excess(): on a new process the order they came in no longer tells a storm's
 * clients from the application's). The server counts every connection against max_connections,
 * clients or not: memgov's own session where it stays open after the action (sql.keep-open), and a
 * replica's binlog dump. The clients kept are max_connections less those, so that the connection
 * the server keeps for SUPER stays free for an administrator.
 * Measured, MariaDB 10.11: max_connections 12, 12 clients and a root session in: a new root login gets 1040.
 * Never ended: memgov's own session, a server or replication thread, an exempt user or host, or a
 * session in a write transaction, and one of those spared sends no other client in its place.
 * Their memory goes back with a trim, as after a reset: a lowering alone leaves the sessions
 * already in, and they can fill the server. What was done goes into the detail; the lowering
 * stands whatever comes of it. */
static void end_excess(const ActionContext *c, SqlConn *conn, uint64_t max_connections, StrBuf *detail) {
        char why[512], a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        unsigned n = 0, clients = 0;

        _cleanup_free_ Session *s = calloc(SESSIONS_MAX, sizeof(Session));
        _cleanup_free_ unsigned *chosen = calloc(SESSIONS_MAX, sizeof(unsigned));
        if (!s || !chosen) {
                strbuf_printf(detail, "; the clients over it not ended: out of memory");
                return;
        }
        if (sessions_list(conn, false, s, &n, why, sizeof(why)) < 0) {
                strbuf_printf(detail, "; the clients over it not ended: listing the sessions: %s", why);
                return;
        }
        unsigned replicas = sessions_replicas(s, n);
        uint64_t beside = (conn->kept ? 1 : 0) + replicas;
        uint64_t keep = max_connections > beside ? max_connections - beside : 0;
        char kept_what[128] = "";
        if (beside > 0)
                snprintf(kept_what, sizeof(kept_what), " beside %s%s%s", conn->kept ? "memgov's own session" : "",
                         conn->kept && replicas > 0 ? " and " : "", replicas > 0 ? "the replicas' connections" : "");
        SessionSelect q = { .max = SESSIONS_MAX, .own_id = conn->own_id, .policy = c->policy };
        unsigned k = sessions_excess(s, n, &q, keep, chosen, &clients);
        if (clients <= keep) {
                /* An account without PROCESS sees its own sessions only: said, not hidden. */
                strbuf_printf(detail, "; %u client(s) in as the server lists them, none over it", clients);
                return;
        }
        if (k == 0) {
                strbuf_printf(detail, "; %u client(s) in, none of those over it may be ended", clients);
                return;
        }
        /* How many of those chosen were in a statement, and the longest: what the order went by. */
        unsigned busy = 0;
        for (unsigned i = 0; i < k; i++)
                busy += session_statement_seconds(&s[chosen[i]]) > 0;
        char order[160], t[FORMAT_TIMESPAN_MAX];
        if (busy > 0)
                snprintf(order, sizeof(order),
                         "the longest in one statement first (%u of them in one for 1s or more, up to %s), then the newest",
                         busy, format_timespan(t, MIN(session_statement_seconds(&s[chosen[0]]), UINT64_MAX / USEC_PER_SEC) *
                                                          USEC_PER_SEC));
        else
                snprintf(order, sizeof(order), "none in one statement for 1s or more: the newest first");
        if (c->dry_run) {
                strbuf_printf(detail, "; would end %u of the %u client(s) in, %s", k, clients, order);
                return;
        }
        uint64_t rss_before = 0, rss_after = 0;
        (void) process_rss(c->target->pid, &rss_before);
        unsigned ended = sessions_end(conn, s, chosen, k);
        TrimReport tr;
        int r = trim_run(c->policy, c->target->pid, c->target->starttime, 0, c->policy->trim_method, false, -1, &tr, why,
                         sizeof(why));
        (void) process_rss(c->target->pid, &rss_after);
        strbuf_printf(detail, "; ended %u of the %u client(s) in, %s; %u kept%s; %s%s; RSS %s -> %s", ended,
                      clients, order, clients - ended, kept_what, r < 0 ? "trim failed: " : "trimmed", r < 0 ? why : "",
                      format_bytes_change(a, b, rss_before, rss_after), b);
}

static int lower(const ActionContext *c, const Decision *d, AdmitMemory *m, SqlConn *conn, const AdmitFacts *f,
                 ActionResult *ret) {
        char why[512];
        /* The clients: every session but memgov's own. The server may still count memgov's probe of
         * its socket (sql_connect), closed a moment before: one client more, at most. The kernel's
         * count (the daemon's) is of the server's sockets: its listening ones too, a few more than
         * its clients, which only widens the headroom by as many. */
        uint64_t clients = f->connected > 0 ? f->connected - 1 : 0;
        unsigned plus = MAX(d->admit.headroom, d->admit.fit);
        uint64_t target = MAX(clients + plus, (uint64_t) MAX(d->admit.floor, 1u));
        bool ours = same_server(m, c->target) && f->max == m->set;
        uint64_t configured = ours ? m->configured : f->max;
        char errors[64] = "";

        if (f->have_errors)
                snprintf(errors, sizeof(errors), "; Connection_errors_max_connections %" PRIu64 " so far", f->errors);
        ret->value_before = f->max;
        ret->value = f->max;
        ret->baseline = configured;
        bool fit = d->admit.fit > d->admit.headroom;
        if (target >= f->max)
                return action_refuse(ret, -EALREADY,
                              "admission: max_connections is %" PRIu64 " already, not above the %" PRIu64
                              " client(s) %s plus %u %s (or admit.floor %u): nothing to lower%s",
                              f->max, clients, d->admit.carried ? "before the storm" : "connected", plus,
                              fit ? "that fit (admit.fit)" : "admit.headroom",
                              d->admit.floor, errors);
        char plan[256];
        snprintf(plan, sizeof(plan), "max_connections %" PRIu64 " -> %" PRIu64 " (%" PRIu64 " client(s) %s plus %u%s%s)%s",
                 f->max, target, clients,
                 d->admit.carried ? "before the storm on the process before the restart," : "connected", plus,
                 fit ? " that fit" : "", target > clients + plus ? ", at admit.floor" : "",
                 errors);
        bool end = d->admit.carried && c->policy->admit_end_excess;
        StrBuf detail;
        strbuf_init(&detail, ret->detail, sizeof(ret->detail));
        if (c->dry_run) {
                strbuf_printf(&detail, "would lower %s", plan);
                if (end)
                        end_excess(c, conn, target, &detail);
                return 0;
        }
        /* Recorded before it is made: a memgov that dies leaves the next one what to put back. */
        (void) state_file_change(c->state, CHANGE_MAX_CONNECTIONS, c->target->pid, c->target->starttime, configured,
                                 target);
        int r = set_max(conn, target, ret, "lower");
        if (r < 0)
                return r;
        AdmitFacts after;
        if (max_only(conn, &after, why, sizeof(why)) < 0)
                return action_refuse(ret, -EIO, "admission: set max_connections to %" PRIu64 ", reading it back: %s", target,
                              why);
        ret->value = after.max;
        if (after.max != target)
                return action_refuse(ret, -EIO, "admission: the server did not set max_connections to %" PRIu64 ": it is %" PRIu64,
                              target, after.max);
        *m = (AdmitMemory) { .pid = c->target->pid, .starttime = c->target->starttime, .configured = configured,
                             .set = target, .errors = f->have_errors ? f->errors : 0, .errors_known = f->have_errors };
        strbuf_printf(&detail, "lowered %s", plan);
        if (end)
                end_excess(c, conn, target, &detail);
        return 0;
}

static int restore(const ActionContext *c, AdmitMemory *m, SqlConn *conn, const AdmitFacts *f, ActionResult *ret) {
        char why[512];

        ret->value_before = f->max;
        ret->value = f->max;
        if (!same_server(m, c->target)) {
                snprintf(ret->detail, sizeof(ret->detail),
                         "admission: memgov did not lower max_connections of this server process (it is %" PRIu64
                         "): nothing to put back", f->max);
                if (!c->dry_run)
                        (void) state_file_forget(c->state, CHANGE_MAX_CONNECTIONS);
                return 0;
        }
        ret->baseline = m->configured;
        if (f->max != m->set) {
                /* Someone else set it since: theirs, not fought. */
                snprintf(ret->detail, sizeof(ret->detail),
                         "admission: max_connections is %" PRIu64 ", not the %" PRIu64 " memgov set: changed by "
                         "someone else since, left as it is (memgov found %" PRIu64 ")",
                         f->max, m->set, m->configured);
                if (!c->dry_run) {
                        *m = (AdmitMemory) {};
                        (void) state_file_forget(c->state, CHANGE_MAX_CONNECTIONS);
                }
                return 0;
        }
        /* MariaDB counts there only the connections refused as they are accepted (past the one kept
         * for SUPER); those refused at login with error 1040 it does not count. */
        char refused[96] = "";
        if (f->have_errors && m->errors_known)
                snprintf(refused, sizeof(refused), "; Connection_errors_max_connections %" PRIu64 " -> %" PRIu64,
                         m->errors, f->errors);
        else if (f->have_errors)
                snprintf(refused, sizeof(refused), "; Connection_errors_max_connections %" PRIu64, f->errors);
        if (c->dry_run) {
                snprintf(ret->detail, sizeof(ret->detail),
                         "would put max_connections back %" PRIu64 " -> %" PRIu64 " (as memgov found it)%s", f->max,
                         m->configured, refused);
                return 0;
        }
        int r = set_max(conn, m->configured, ret, "put back");
        if (r < 0)
                return r;
        AdmitFacts after;
        if (max_only(conn, &after, why, sizeof(why)) < 0)
                return action_refuse(ret, -EIO, "admission: set max_connections to %" PRIu64 ", reading it back: %s",
                              m->configured, why);
        ret->value = after.max;
        if (after.max != m->configured)
                return action_refuse(ret, -EIO, "admission: the server did not set max_connections back to %" PRIu64
                              ": it is %" PRIu64, m->configured, after.max);
        snprintf(ret->detail, sizeof(ret->detail),
                 "put max_connections back %" PRIu64 " -> %" PRIu64 " (as memgov found it)%s", f->max, m->configured,
                 refused);
        *m = (AdmitMemory) {};
        (void) state_file_forget(c->state, CHANGE_MAX_CONNECTIONS);
        return 0;
}

int admit_run(const ActionContext *c, const Decision *d, AdmitMemory *m, ActionResult *ret) {
        assert(c);
        assert(d);
        assert(m);
        assert(ret);
        char why[512];
        _cleanup_sql_ SqlConn conn = {};
        AdmitFacts f;

        int r = sql_connect(c->policy, c->target->pid, &conn, why, sizeof(why));
        if (r < 0)
                return action_sql_connect_failed(ret, r, "admission", why);
        /* Lowering, with the kernel's count of the server's sockets in the decision: that count
         * and the variable, nothing the server must gather. */
        bool counted = !d->admit.restore && d->admit.connections > 0;
        r = counted ? max_only(&conn, &f, why, sizeof(why)) : facts(&conn, &f, why, sizeof(why));
        if (r >= 0 && counted) {
                f.connected = d->admit.connections;
                f.have_connected = true;
        }
        if (r < 0)
                r = action_refuse(ret, r, "admission: reading max_connections and Threads_connected: %s", why);
        else
                r = d->admit.restore ? restore(c, m, &conn, &f, ret) : lower(c, d, m, &conn, &f, ret);
        return r;
}

/* What memgov found and set, for the server process governed. One action thread calls this,
 * and memgov's way out another: hence the lock. */
static struct {
        pthread_mutex_t lock;
        AdmitMemory m;
} remembered = { .lock = PTHREAD_MUTEX_INITIALIZER };

int admit_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        put_back_inherited_kind(c, CHANGE_MAX_CONNECTIONS);
        pthread_mutex_lock(&remembered.lock);
        int r = admit_run(c, d, &remembered.m, ret);
        pthread_mutex_unlock(&remembered.lock);
        return r;
}
