/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "memgov/clock.h"
#include "memgov/macro.h"
#include "session-end.h"

/* MariaDB: information_schema.PROCESSLIST has each session's memory. */
static const char mariadb_sessions[] =
        "SELECT p.ID, p.USER, p.HOST, p.COMMAND, p.TIME, p.MEMORY_USED, "
        "IFNULL(t.trx_rows_modified, 0) + IFNULL(t.trx_lock_structs, 0) "
        "FROM information_schema.PROCESSLIST p "
        "LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID";

/* MySQL: performance_schema's threads, with their memory or without it. The memory by thread is
 * summed over every instrument of every thread, the heaviest part of the query, on a server that
 * is busiest when its sessions are to be ended by their order of arrival: left out then. */
#define MYSQL_SESSIONS(memory_column, memory_join)                                                      \
        "SELECT t.PROCESSLIST_ID, t.PROCESSLIST_USER, t.PROCESSLIST_HOST, t.PROCESSLIST_COMMAND, "    \
        "t.PROCESSLIST_TIME, " memory_column ", "                                                      \
        "IFNULL(x.trx_rows_modified, 0) + IFNULL(x.trx_lock_structs, 0) "                             \
        "FROM performance_schema.threads t " memory_join                                               \
        "LEFT JOIN information_schema.INNODB_TRX x ON x.trx_mysql_thread_id = t.PROCESSLIST_ID "      \
        "WHERE t.TYPE = 'FOREGROUND' AND t.PROCESSLIST_ID IS NOT NULL"

static const char mysql_sessions[] = MYSQL_SESSIONS(
        "IFNULL(m.bytes, 0)",
        "LEFT JOIN (SELECT THREAD_ID, SUM(CURRENT_NUMBER_OF_BYTES_USED) AS bytes "
        "FROM performance_schema.memory_summary_by_thread_by_event_name GROUP BY THREAD_ID) m "
        "ON m.THREAD_ID = t.THREAD_ID ");
/* MySQL 8.0.31 and later keep that sum with each thread (threads.TOTAL_MEMORY): one row a thread
 * instead of one a thread and instrument (MySQL 9.7, 32 threads: 12,192 rows, 57 ms more a query,
 * idle), the same figure (52,476,587 bytes both ways for a session holding 50M).
 * Seen with the sum: a listing that lost its connection mid-query beside 128 client threads. */
static const char mysql_sessions_total[] = MYSQL_SESSIONS("IFNULL(t.TOTAL_MEMORY, 0)", "");
static const char mysql_sessions_light[] = MYSQL_SESSIONS("0", "");

typedef struct List {
        Session *s;
        unsigned n;
} List;

static int add_session(void *userdata, unsigned n, char **row) {
        List *l = userdata;
        if (l->n < SESSIONS_MAX && session_from_row(n, row, &l->s[l->n]) > 0)
                l->n++;
        return 0;
}

int sessions_list(SqlConn *conn, bool memory, Session *s, unsigned *ret_n, char *why, size_t why_size) {
        List list = { .s = s };
        /* MariaDB keeps each session's memory with the session: the same query either way. */
        const char *query = conn->mariadb                          ? mariadb_sessions
                            : !memory                              ? mysql_sessions_light
                            : sql_server_version(conn) >= 80031 ? mysql_sessions_total
                                                                   : mysql_sessions;
        int r = sql_run(conn, query, add_session, &list, why, why_size);
        *ret_n = list.n;
        return r;
}

static int count_alive(void *userdata, unsigned n, char **row) {
        (*(unsigned *) userdata)++;
        return 0;
}

unsigned sessions_end(SqlConn *conn, const Session *s, const unsigned *chosen, unsigned k) {
        char why[512];
        unsigned ended = 0;

        for (unsigned i = 0; i < k; i++) {
                char stmt[64];
                snprintf(stmt, sizeof(stmt), "KILL CONNECTION %" PRIu64, s[chosen[i]].id);
                int r = sql_run(conn, stmt, NULL, NULL, why, sizeof(why));
                if (r == 0 || r == -ESRCH) /* gone already: just as good */
                        ended++;
        }
        /* The killed threads end on their own; their memory goes back to the allocator, which a
         * trim then gives back to the kernel. */
        for (unsigned tries = 0; tries < 40; tries++) {
                unsigned alive = 0;
                char stmt[4096];
                size_t so = (size_t) snprintf(stmt, sizeof(stmt), "SELECT 1 FROM information_schema.PROCESSLIST WHERE ID IN (0");
                for (unsigned i = 0; i < k && so < sizeof(stmt) - 32; i++)
                        so += (size_t) snprintf(stmt + so, sizeof(stmt) - so, ",%" PRIu64, s[chosen[i]].id);
                snprintf(stmt + so, sizeof(stmt) - so, ")");
                if (sql_run(conn, stmt, count_alive, &alive, why, sizeof(why)) < 0 || alive == 0)
                        break;
                sleep_usec(50 * USEC_PER_MSEC);
        }
        return ended;
}
