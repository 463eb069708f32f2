/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The action thread's SQL session, kept open between actions (sql.keep-open): see sql.h. */
#include "memgov/log.h"
#include "memgov/sql.h"
#include "sql-keep.h"

void sql_keep_thread_begin(void *userdata) {
        sql_keep_begin();
}

void sql_keep_thread_end(void *userdata) {
        sql_keep_end();
}

/* What was logged last: a state is logged when it changes, a failure once until it heals. The
 * action thread is the only caller. */
static SqlKeepState shown = SQL_KEEP_OFF;

void sql_keep_idle(void *userdata, const ActionContext *c) {
        char why[512];
        bool opened;
        SqlConn conn;

        SqlKeepState st = sql_keep_warm(c->policy, c->target->pid, &opened, &conn, why, sizeof(why));
        if (st == SQL_KEEP_OPEN && opened)
                log_info("sql: a session kept open for the actions: id %llu on %s (%s)", conn.own_id, conn.endpoint,
                         conn.version);
        else if (st == SQL_KEEP_FAILED && shown != SQL_KEEP_FAILED)
                log_warning("sql: cannot keep a session open for the actions (tried again every %us): %s",
                            (unsigned) (ACTION_IDLE_EVERY / USEC_PER_SEC), why);
        else if (st == SQL_KEEP_OFF && shown == SQL_KEEP_OPEN)
                log_info("sql: the session kept for the actions is closed (%s)",
                         !c->policy->sql_keep_open      ? "sql.keep-open = no"
                         : !policy_uses_sql(c->policy) ? "no action in the policy uses SQL"
                                                        : "no server process");
        shown = st;
}
