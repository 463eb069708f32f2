/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The action thread's SQL session, kept open between actions (sql.keep-open): see sql.h. What
 * it learns of the server (its version, its allocator) is kept for memgov status. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>

#include "memgov/clock.h"
#include "memgov/log.h"
#include "memgov/maps-reader.h"
#include "memgov/session-memory.h"
#include "memgov/sql.h"
#include "memgov/pool-watch.h"
#include "memgov/strutil.h"
#include "memgov/target.h"
#include "anonymous-accounts.h"
#include "put-back.h"
#include "sql-keep.h"

void sql_keep_thread_begin(void *userdata) {
        sql_keep_begin();
}

void sql_keep_thread_end(void *userdata) {
        sql_keep_end();
}

/* Written by the action thread, read by the status; the state also decides what is logged: a
 * state when it changes, a failure once until it heals. */
static struct {
        pthread_mutex_t lock;
        SqlKeepInfo info;
} kept = { .lock = PTHREAD_MUTEX_INITIALIZER };

void sql_keep_info(SqlKeepInfo *ret) {
        pthread_mutex_lock(&kept.lock);
        *ret = kept.info;
        pthread_mutex_unlock(&kept.lock);
}

/* What the kept session's attempt says of the server: it answered (opened, or any refusal: a
 * server that refuses memgov's account still accepts clients), or it listens on nothing yet. A
 * process that is not a database server by name may never listen (a test's memory hog, a
 * wrapper): it is left unknown, and the engine does not wait for it. */
static ServerAccepting accepting_from(SqlKeepState st, int error, pid_t pid, ServerAccepting was) {
        char comm[64];
        if (was == ACCEPTING_YES || st == SQL_KEEP_OPEN)
                return ACCEPTING_YES;
        if (st != SQL_KEEP_FAILED)
                return was;
        if (error != -ENOENT && error != -ECONNREFUSED)
                return ACCEPTING_YES;
        /* Not where memgov looks: a server that listens elsewhere (TCP only, another socket)
         * is up all the same. */
        int r = sql_server_listens(pid);
        if (r > 0)
                return ACCEPTING_YES;
        if (r < 0 || proc_read_comm(AT_FDCWD, pid, comm, sizeof(comm)) < 0 ||
            !name_in_list(comm, TARGET_DEFAULT_PROCESSES))
                return ACCEPTING_UNKNOWN;
        return ACCEPTING_NOT_YET;
}

/* reset.exempt-users match the name a session logged in with: an anonymous account lets any
 * client that reaches it take an exempt name (never reset, never ended by admission). Said once
 * a session; the operator decides. */
static void say_anonymous_accounts(SqlConn *conn) {
        char accounts[256], why[512];
        int n = anonymous_accounts(conn, accounts, sizeof(accounts), why, sizeof(why));
        if (n > 0)
                log_warning("sql: reset.exempt-users are matched by the name a client logs in with, and the server has "
                            "%d anonymous account(s) (%s), through which any client that reaches it may log in under "
                            "an exempt name and never be reset: drop them (DROP USER ''@'host'), or exempt by host",
                            n, accounts);
        else if (n < 0)
                log_notice("sql: reset.exempt-users are matched by the name a client logs in with; whether an "
                           "anonymous account lets any client log in under one cannot be read (%s): SELECT Host FROM "
                           "mysql.user WHERE User = '' tells", why);
}

usec_t sql_keep_idle(void *userdata, const ActionContext *c) {
        char why[512];
        int error;
        bool opened;
        SqlConn conn = {};
        SqlKeepInfo now;

        sql_keep_info(&now);
        SqlKeepState shown = now.state;
        SqlKeepState st = sql_keep_warm(c->policy, c->target->pid, &opened, &conn, &error, why, sizeof(why));

        /* The server as memgov knows it: its allocator from its maps, once a process that
         * accepts clients (before, it may still be systemd's child that has not executed the
         * server yet); its version from the session. */
        if (c->target->pid != now.pid)
                now = (SqlKeepInfo) { .pid = c->target->pid, .first_look = now_clock(CLOCK_MONOTONIC) };
        ServerAccepting was = now.accepting;
        if (was != ACCEPTING_YES) {
                ProcMaps m;
                now.allocator = c->target->pid > 0 && maps_read_summary(AT_FDCWD, c->target->pid, &m) >= 0
                                        ? m.allocator : ALLOCATOR_UNKNOWN;
        }
        now.state = st;
        if (c->target->pid > 0)
                now.accepting = accepting_from(st, error, c->target->pid, now.accepting);

        /* A server that is starting refuses every session: not a failure to warn of, until it
         * accepts clients and the session still fails. */
        bool starting = now.accepting == ACCEPTING_NOT_YET;
        if (st == SQL_KEEP_OPEN && opened)
                log_info("sql: a session kept open for the actions: id %llu on %s (%s)", conn.own_id, conn.endpoint,
                         conn.version);
        else if (st == SQL_KEEP_FAILED && starting && shown != SQL_KEEP_FAILED)
                log_info("sql: process %d listens on no socket yet (the server is starting): the session is kept "
                         "once it accepts clients", (int) c->target->pid);
        else if (st == SQL_KEEP_FAILED && !starting && (shown != SQL_KEEP_FAILED || was == ACCEPTING_NOT_YET))
                log_warning("sql: cannot keep a session open for the actions (tried again every %us): %s",
                            (unsigned) (ACTION_IDLE_EVERY / USEC_PER_SEC), why);
        else if (st == SQL_KEEP_OFF && shown == SQL_KEEP_OPEN)
                log_info("sql: the session kept for the actions is closed (%s)",
                         !c->policy->sql_keep_open      ? "sql.keep-open = no"
                         : !policy_uses_sql(c->policy) ? "no action in the policy uses SQL"
                                                        : "no server process");
        if (st == SQL_KEEP_OPEN && opened) {
                now.session_id = conn.own_id;
                now.mariadb = conn.mariadb;
                snprintf(now.version, sizeof(now.version), "%s", conn.version);
                now.session_memory_known = false;
        }
        /* On the kept session, borrowed once: what the reset will be able to see, said once a
         * session rather than at the first reset, when it is too late to turn the instruments
         * on; and the buffer pool, as the server keeps it between memgov's own steps. */
        _cleanup_sql_ SqlConn kept_conn = {};
        bool filling = false;
        /* Not while the session waits for a reply: the action thread would wait with it. */
        if (st == SQL_KEEP_OPEN && c->target->pid > 0 && !sql_keep_awaiting() &&
            sql_connect(c->policy, c->target->pid, &kept_conn, why, sizeof(why)) >= 0) { /* the one kept */
                if (opened) {
                        now.session_memory_known = session_memory_check(&kept_conn, &now.session_memory,
                                                                        now.session_memory_why,
                                                                        sizeof(now.session_memory_why)) >= 0;
                        if (now.session_memory_known && now.session_memory != SESSION_MEMORY_MEASURED)
                                log_warning("sql: the reset cannot rank the sessions by their memory: %s",
                                            now.session_memory_why);
                        if (c->policy->n_exempt_users > 0)
                                say_anonymous_accounts(&kept_conn);
                }
                filling = pool_watch(&kept_conn, c->target->pid, c->target->starttime);
                sql_close(&kept_conn); /* given back before the put-back below, which takes it */
        }
        /* What the memgov before this one changed and did not put back, once the server takes
         * clients (the state file's inherited changes; nothing once they are put back). */
        if (now.accepting == ACCEPTING_YES)
                put_back_inherited(c);
        if (st == SQL_KEEP_FAILED)
                snprintf(now.why, sizeof(now.why), "%s", why);
        else
                now.why[0] = '\0';
        if (st != SQL_KEEP_OPEN)
                now.session_id = 0; /* none open: the last one's id is gone with it */
        pthread_mutex_lock(&kept.lock);
        kept.info = now;
        pthread_mutex_unlock(&kept.lock);
        /* Every second while the server starts, for its first minutes: a server that takes
         * longer (a long crash recovery, a Galera joiner waiting for its state) is looked at as
         * any other. */
        bool early = now_clock(CLOCK_MONOTONIC) - now.first_look < ACTION_IDLE_STARTING_FOR;
        if (starting && st != SQL_KEEP_OFF && early)
                return ACTION_IDLE_STARTING;
        return filling ? POOL_WATCH_FILLING : ACTION_IDLE_EVERY;
}
