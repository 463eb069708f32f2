/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooks.h"
#include "memgov/actuator.h"
#include "reset.h"
#include "memgov/session-memory.h"
#include "memgov/sessions.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/units.h"
#include "trim.h"

#define MAX_SESSIONS 4096

/* MariaDB: information_schema.PROCESSLIST has each session's memory. */
static const char mariadb_sessions[] =
        "SELECT p.ID, p.USER, p.HOST, p.COMMAND, p.TIME, p.MEMORY_USED, "
        "IFNULL(t.trx_rows_modified, 0) + IFNULL(t.trx_lock_structs, 0) "
        "FROM information_schema.PROCESSLIST p "
        "LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID";

/* MySQL: performance_schema's memory by thread, joined with its threads. */
static const char mysql_sessions[] =
        "SELECT t.PROCESSLIST_ID, t.PROCESSLIST_USER, t.PROCESSLIST_HOST, t.PROCESSLIST_COMMAND, "
        "t.PROCESSLIST_TIME, IFNULL(m.bytes, 0), IFNULL(x.trx_rows_modified, 0) + IFNULL(x.trx_lock_structs, 0) "
        "FROM performance_schema.threads t "
        "LEFT JOIN (SELECT THREAD_ID, SUM(CURRENT_NUMBER_OF_BYTES_USED) AS bytes "
        "FROM performance_schema.memory_summary_by_thread_by_event_name GROUP BY THREAD_ID) m "
        "ON m.THREAD_ID = t.THREAD_ID "
        "LEFT JOIN information_schema.INNODB_TRX x ON x.trx_mysql_thread_id = t.PROCESSLIST_ID "
        "WHERE t.TYPE = 'FOREGROUND' AND t.PROCESSLIST_ID IS NOT NULL";

typedef struct List {
        Session *s;
        unsigned n;
} List;

static int add_session(void *userdata, unsigned n, char **row) {
        List *l = userdata;
        if (l->n < MAX_SESSIONS && session_from_row(n, row, &l->s[l->n]) > 0)
                l->n++;
        return 0;
}

static int count_alive(void *userdata, unsigned n, char **row) {
        (*(unsigned *) userdata)++;
        return 0;
}

static void sleep_ms(long ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
        nanosleep(&ts, NULL);
}

static int reset_by_sql(const ActionContext *c, const Decision *d, ActionResult *ret) {
        const ActionTarget *t = c->target;
        char why[512], m[FORMAT_BYTES_MAX], ti[FORMAT_TIMESPAN_MAX];
        SqlConn conn;
        int r;

        r = sql_connect(c->policy, t->pid, &conn, why, sizeof(why));
        if (r < 0) {
                snprintf(ret->detail, sizeof(ret->detail), "reset: %s", why);
                return r;
        }
        _cleanup_free_ Session *sessions = calloc(MAX_SESSIONS, sizeof(Session));
        List list = { .s = sessions };
        if (!sessions) {
                sql_close(&conn);
                return -ENOMEM;
        }
        r = sql_run(&conn, conn.mariadb ? mariadb_sessions : mysql_sessions, add_session, &list, why, sizeof(why));
        if (r < 0) {
                sql_close(&conn);
                snprintf(ret->detail, sizeof(ret->detail), "reset: listing the sessions: %s", why);
                return r;
        }

        /* MySQL measures a session's memory only with performance_schema's memory instruments
         * on: without them every session reads as holding nothing, and "none holds enough"
         * would hide why. */
        SessionMemory measured;
        char unmeasured[384];
        r = session_memory_check(&conn, &measured, unmeasured, sizeof(unmeasured));
        if (r < 0)
                measured = SESSION_MEMORY_MEASURED; /* not known: the figures speak for themselves */
        if (measured == SESSION_MEMORY_OFF) {
                sql_close(&conn);
                snprintf(ret->detail, sizeof(ret->detail), "reset: cannot choose among the %u sessions: %s", list.n,
                         unmeasured);
                ret->explained = true;
                return -ENODATA;
        }

        SessionSelect q = {
                .max = d->reset_max,
                .min_memory = d->reset_min_memory,
                .min_idle = d->reset_min_idle,
                .allow_write_trx = d->reset_in_trx,
                .own_id = conn.own_id,
                .policy = c->policy,
        };
        unsigned chosen[1000];
        unsigned k = sessions_select(sessions, list.n, &q, chosen);
        if (k == 0) {
                sql_close(&conn);
                char largest[FORMAT_BYTES_MAX];
                snprintf(ret->detail, sizeof(ret->detail), "reset: none of the %u sessions holds %s or more and may be "
                         "reset (the largest that may: %s)%s%s", list.n, format_bytes(m, d->reset_min_memory),
                         format_bytes(largest, sessions_largest(sessions, list.n, &q)),
                         measured == SESSION_MEMORY_PARTIAL ? "; " : "", measured == SESSION_MEMORY_PARTIAL ? unmeasured : "");
                ret->explained = true; /* not a file that was missing */
                return -ENOENT;
        }

        /* Who, and why them: the log and status say it. */
        StrBuf detail;
        strbuf_init(&detail, ret->detail, sizeof(ret->detail));
        strbuf_printf(&detail, "%s %u of %u session(s):", c->dry_run ? "would reset" : "reset", k, list.n);
        uint64_t rss_before = 0;
        (void) process_rss(t->pid, &rss_before);
        unsigned killed = 0;
        for (unsigned i = 0; i < k; i++) {
                const Session *s = &sessions[chosen[i]];
                strbuf_printf(&detail, " #%" PRIu64 " %s@%s (%s %s, %s)", s->id, s->user, s->host,
                              session_is_idle(s, &q) ? "idle" : s->command, format_timespan(ti, s->time_s * USEC_PER_SEC),
                              format_bytes(m, s->memory));
                if (c->dry_run)
                        continue;
                char stmt[64];
                snprintf(stmt, sizeof(stmt), "KILL CONNECTION %" PRIu64, s->id);
                r = sql_run(&conn, stmt, NULL, NULL, why, sizeof(why));
                if (r == 0 || r == -ESRCH) /* gone already: just as good */
                        killed++;
        }
        if (c->dry_run) {
                sql_close(&conn);
                return 0;
        }

        /* The killed threads end on their own; their memory goes back to the allocator, which a
         * trim then gives back to the kernel. */
        for (unsigned tries = 0; tries < 40; tries++) {
                unsigned alive = 0;
                char stmt[4096];
                size_t so = (size_t) snprintf(stmt, sizeof(stmt), "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID IN (0");
                for (unsigned i = 0; i < k && so < sizeof(stmt) - 32; i++)
                        so += (size_t) snprintf(stmt + so, sizeof(stmt) - so, ",%" PRIu64, sessions[chosen[i]].id);
                snprintf(stmt + so, sizeof(stmt) - so, ")");
                if (sql_run(&conn, stmt, count_alive, &alive, why, sizeof(why)) < 0 || alive == 0)
                        break;
                sleep_ms(50);
        }
        sql_close(&conn);

        TrimReport tr;
        r = trim_run(c->policy, t->pid, t->starttime, 0, c->policy->trim_method, false, -1, &tr, why, sizeof(why));
        uint64_t rss_after = 0;
        (void) process_rss(t->pid, &rss_after);
        ret->has_freed = true;
        ret->freed = rss_before > rss_after ? rss_before - rss_after : 0;
        strbuf_printf(&detail, "; %u ended; %s%s; RSS %s -> %s", killed, r < 0 ? "trim failed: " : "trimmed",
                      r < 0 ? why : "", format_bytes(m, rss_before), format_bytes(ti, rss_after));
        if (measured == SESSION_MEMORY_PARTIAL)
                strbuf_printf(&detail, "; %s", unmeasured);
        return killed > 0 ? 0 : -EIO;
}

int reset_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        assert(c);
        assert(d);
        assert(ret);
        const Policy *p = c->policy;
        char why[512], out[256];
        int r;

        switch (p->reset_method) {
        case RESET_SQL:
                return reset_by_sql(c, d, ret);
        case RESET_EXEC: {
                HookContext h = {
                        .event = "reset",
                        .reason = d->reason,
                        .target = c->target->description,
                        .level = level_to_string(d->level),
                        .working_set = d->working_set,
                        .budget = d->budget,
                        .max_sessions = d->reset_max,
                        .min_memory = d->reset_min_memory,
                        .min_idle = d->reset_min_idle,
                };
                r = hook_run(p->reset_exec, &h, p->hook_timeout, c->dry_run, out, sizeof(out), why, sizeof(why));
                if (r < 0)
                        snprintf(ret->detail, sizeof(ret->detail), "reset: %s", why);
                else /* "would ..." as the hook's dry run says it, or "ran CMD: its last line" */
                        snprintf(ret->detail, sizeof(ret->detail), "reset: %s%s%s%s", c->dry_run ? "" : "ran ",
                                 c->dry_run ? out : p->reset_exec, !c->dry_run && out[0] ? ": " : "",
                                 c->dry_run ? "" : out);
                return r;
        }
        case RESET_SIGNAL:
                r = signal_processes(p->reset_signal_process, p->reset_signal, c->target, c->dry_run, why, sizeof(why));
                if (r < 0) {
                        snprintf(ret->detail, sizeof(ret->detail), "reset: %s", why);
                        return r;
                }
                snprintf(ret->detail, sizeof(ret->detail), "reset: %s signal %d to %d process(es) named %s in %s",
                         c->dry_run ? "would send" : "sent", p->reset_signal, r, p->reset_signal_process,
                         c->target->description);
                return 0;
        default:
                return -EINVAL;
        }
}
