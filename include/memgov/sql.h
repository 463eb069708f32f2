/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>
#include <sys/types.h>

#include "memgov/macro.h"
#include "memgov/policy.h"

/* Talking to the server over SQL (MariaDB Connector/C; MariaDB and MySQL servers). Every call
 * is bounded by the policy's timeouts; errors come back as a negative errno and a sentence. */

typedef struct SqlConn {
        void *mysql; /* MYSQL * */
        unsigned long long own_id;
        bool mariadb;
        char version[96];
        char endpoint[PATH_MAX + 64]; /* where we connected, for messages */
        bool kept;   /* the thread's kept session (sql_keep_begin): sql_close gives it back */
        bool broken; /* the connection itself failed (not a statement): not kept any longer */
} SqlConn;

/* The unix socket a server process listens on, found with sock_diag in the process's network
 * namespace among the sockets it holds (never from /proc/net/unix, where a path can forge a
 * line). Returns an O_PATH descriptor of the socket's file, opened through the process's root
 * and checked to be the inode the socket is bound to, and its path as the server sees it in buf
 * (/run/mysqld/mysqld.sock). Connect through /proc/self/fd/N. */
int sql_find_socket(pid_t pid, char *buf, size_t size, char *why, size_t why_size);

/* 0 when the peer of a connected unix socket is the server process or a process of its cgroup;
 * -EPERM otherwise. */
int sql_check_peer(int sock, pid_t server, const char *endpoint, char *why, size_t why_size);

/* An option file with a password: refused when others may read it, or (as root) not root's, or
 * when it is a symbolic link or holds !include or !includedir (those would be read unchecked).
 * sql_open_option_file returns the descriptor checked, for the library to read through
 * /proc/self/fd/N. */
int sql_open_option_file(const char *path, char *why, size_t why_size);
int sql_check_option_file(const char *path, char *why, size_t why_size);

/* A connection to the server: the calling thread's kept session when it has one for this server
 * and these connection settings, it is free and it answers a ping (none when it answered within
 * SQL_KEEP_PING and the server has not closed it since); else a new one, which becomes the kept
 * session where the thread keeps one and the policy's sql.keep-open says so. -EBUSY, with why:
 * the kept session still awaits the reply to its last statement after sql.query-timeout more
 * (the server answers nothing: a new connection would wait in the same queue). */
int sql_connect(const Policy *p, pid_t server_pid, SqlConn *ret, char *why, size_t why_size);
/* Closes it, or gives the kept session back; again, or on one never opened ({}), nothing. */
void sql_close(SqlConn *c);
/* A connection closed (given back) when it goes out of scope: declare it = {}. */
#define _cleanup_sql_ _cleanup_(sql_close)

/* The action thread keeps one session open (sql.keep-open): a server swamped by a connection
 * storm may not answer a new handshake within sql.connect-timeout, and the actions that need
 * SQL are needed exactly then. sql_keep_begin/end on the thread that keeps it (the session is
 * the thread's own: a MYSQL handle is never shared between threads). */
void sql_keep_begin(void);
void sql_keep_end(void);

/* Whether the process listens on any socket (unix or TCP): 1 or 0, or why it cannot be told
 * (a negative errno: no such process, no right to copy its descriptors). */
int sql_server_listens(pid_t pid);

typedef enum SqlKeepState {
        SQL_KEEP_OFF,      /* nothing to keep: keep-open off, or no action uses SQL (closed if open) */
        SQL_KEEP_OPEN,     /* it answered a ping, or was opened now */
        SQL_KEEP_FAILED,   /* could not be opened: why */
} SqlKeepState;

/* Between actions, from the keeping thread: opens the session for this server when it has none,
 * pings it when it was idle for SQL_KEEP_PING or more (which also keeps the server's
 * wait_timeout from closing it), and opens it again when it no longer answers. *opened: a new
 * session, with its id and server version in *ret_conn (may be NULL). SQL_KEEP_FAILED: the
 * connection's error in *ret_error (-ENOENT: the server listens on no unix socket,
 * -ECONNREFUSED: nothing listens where the policy says), 0 otherwise. */
#define SQL_KEEP_PING (30 * USEC_PER_SEC)
/* The kept session waits for the reply to a statement that had none within sql.query-timeout
 * (sql_run leaves it open, and sql_connect reads that reply before handing it out): busy. */
bool sql_keep_awaiting(void);
SqlKeepState sql_keep_warm(const Policy *p, pid_t server_pid, bool *opened, SqlConn *ret_conn, int *ret_error,
                           char *why, size_t why_size);

/* Runs a statement; for a query, calls row() with each row's columns (NULL for SQL NULL). */
/* The server's version as a number, from its version string: 10.11.19-MariaDB-... -> 101119,
 * 9.7.4-2 -> 90704; 0 when it cannot be read. */
unsigned sql_server_version(const SqlConn *c);

typedef int (*sql_row_fn)(void *userdata, unsigned n_fields, char **row);
int sql_run(SqlConn *c, const char *statement, sql_row_fn row, void *userdata, char *why, size_t why_size);

/* Once per process, from the main thread, before any thread connects. */
void sql_library_init(void);
