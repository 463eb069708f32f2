/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/parse-proc.h"
#include "memgov/sql.h"

void sql_library_init(void) {
        mysql_library_init(0, NULL, NULL);
}

int sql_find_socket(pid_t pid, char *buf, size_t size, char *why, size_t why_size) {
        char path[96], link[128];
        uint64_t inodes[256];
        size_t n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        DIR *d = opendir(path);
        if (!d) {
                snprintf(why, why_size, "cannot list the descriptors of process %d: %m", (int) pid);
                return negative_errno();
        }
        struct dirent *de;
        while ((de = readdir(d)) && n < ELEMENTSOF(inodes)) {
                ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
                if (k <= 0)
                        continue;
                link[k] = '\0';
                unsigned long long ino;
                if (sscanf(link, "socket:[%llu]", &ino) == 1)
                        inodes[n++] = ino;
        }
        closedir(d);

        _cleanup_free_ char *text = NULL;
        size_t len;
        char sock[PATH_MAX];
        snprintf(path, sizeof(path), "/proc/%d/net/unix", (int) pid);
        int r = read_full_file_at(AT_FDCWD, path, 16U << 20, &text, &len);
        if (r >= 0)
                r = proc_net_unix_listening(text, len, inodes, n, sock, sizeof(sock));
        if (r < 0) {
                snprintf(why, why_size, "process %d listens on no unix socket%s", (int) pid,
                         r == -ENOENT ? " (give [sql] socket or host)" : "");
                return r;
        }
        /* Through its root, so that a server in another mount namespace is reached too. */
        snprintf(buf, size, "/proc/%d/root%s", (int) pid, sock);
        if (strlen(buf) >= sizeof(((struct sockaddr_un *) 0)->sun_path))
                snprintf(buf, size, "%s", sock);
        return 0;
}

int sql_check_option_file(const char *path, char *why, size_t why_size) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        char trusted[256];

        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = negative_errno();
                snprintf(why, why_size, "option file %s: %s", path, strerror(-r));
                return r;
        }
        if (st.st_mode & (S_IRGRP | S_IROTH)) {
                snprintf(why, why_size, "option file %s is readable by %s (mode %04o; expected chmod 600): it "
                                        "holds a password", path, (st.st_mode & S_IROTH) ? "everyone" : "its group",
                         (unsigned) (st.st_mode & 07777));
                return -EPERM;
        }
        if (check_trusted_file(&st, geteuid(), trusted, sizeof(trusted)) < 0) {
                snprintf(why, why_size, "option file %s: %s", path, trusted);
                return -EPERM;
        }
        return 0;
}

static int classify(unsigned err) {
        switch (err) {
        case 2002: /* CR_CONNECTION_ERROR: no server on the socket */
        case 2003: /* CR_CONN_HOST_ERROR */
                return -ECONNREFUSED;
        case 2013: /* CR_SERVER_LOST */
        case 2006: /* CR_SERVER_GONE_ERROR */
                return -ECONNRESET;
        case 1045: /* ER_ACCESS_DENIED_ERROR */
        case 1698: /* ER_ACCESS_DENIED_NO_PASSWORD_ERROR */
        case 1227: /* ER_SPECIFIC_ACCESS_DENIED_ERROR */
        case 1044:
                return -EACCES;
        case 1305: /* ER_SP_DOES_NOT_EXIST: a function not installed */
        case 1146: /* ER_NO_SUCH_TABLE */
                return -ENOENT;
        case 1094: /* ER_NO_SUCH_THREAD */
                return -ESRCH;
        default:
                return -EIO;
        }
}

static unsigned seconds(usec_t t) {
        return (unsigned) MAX(t / USEC_PER_SEC, (usec_t) 1);
}

int sql_connect(const Policy *p, pid_t server_pid, SqlConn *ret, char *why, size_t why_size) {
        char sock[PATH_MAX];
        const char *socket_path = NULL, *host = NULL;
        int r;

        *ret = (SqlConn) {};
        if (p->sql_host[0]) {
                host = p->sql_host;
                snprintf(ret->endpoint, sizeof(ret->endpoint), "%s:%u", host, p->sql_port);
        } else {
                if (streq(p->sql_socket, "auto") || !p->sql_socket[0]) {
                        if (server_pid <= 0) {
                                snprintf(why, why_size, "no server process to find the socket of (give [sql] socket)");
                                return -ESRCH;
                        }
                        r = sql_find_socket(server_pid, sock, sizeof(sock), why, why_size);
                        if (r < 0)
                                return r;
                        socket_path = sock;
                } else
                        socket_path = p->sql_socket;
                snprintf(ret->endpoint, sizeof(ret->endpoint), "%s", socket_path);
        }
        if (p->sql_option_file[0] && (r = sql_check_option_file(p->sql_option_file, why, why_size)) < 0)
                return r;

        MYSQL *m = mysql_init(NULL);
        if (!m) {
                snprintf(why, why_size, "out of memory");
                return -ENOMEM;
        }
        unsigned ct = seconds(p->sql_connect_timeout), qt = seconds(p->sql_query_timeout);
        mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
        mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &qt);
        mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &qt);
        if (p->sql_option_file[0]) {
                mysql_optionsv(m, MYSQL_READ_DEFAULT_FILE, p->sql_option_file);
                mysql_optionsv(m, MYSQL_READ_DEFAULT_GROUP, "client");
        }
        mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
        const char *user = p->sql_option_file[0] ? NULL : p->sql_user;
        if (!mysql_real_connect(m, host, user, NULL, NULL, host ? p->sql_port : 0, socket_path, 0)) {
                r = classify(mysql_errno(m));
                snprintf(why, why_size, "cannot connect to %s: %s", ret->endpoint, mysql_error(m));
                mysql_close(m);
                return r;
        }
        ret->mysql = m;
        ret->own_id = mysql_thread_id(m);
        snprintf(ret->version, sizeof(ret->version), "%s", mysql_get_server_info(m));
        ret->mariadb = strstr(ret->version, "MariaDB") != NULL;
        return 0;
}

void sql_close(SqlConn *c) {
        if (c->mysql)
                mysql_close(c->mysql);
        c->mysql = NULL;
}

int sql_run(SqlConn *c, const char *statement, sql_row_fn row, void *userdata, char *why, size_t why_size) {
        MYSQL *m = c->mysql;
        int r = 0;

        if (mysql_query(m, statement) != 0) {
                r = classify(mysql_errno(m));
                snprintf(why, why_size, "%s: %s", c->endpoint, mysql_error(m));
                return r;
        }
        MYSQL_RES *res = mysql_store_result(m);
        if (!res) {
                if (mysql_field_count(m) != 0) {
                        r = classify(mysql_errno(m));
                        snprintf(why, why_size, "%s: reading the result: %s", c->endpoint, mysql_error(m));
                }
                return r;
        }
        unsigned n = mysql_num_fields(res);
        MYSQL_ROW rw;
        while ((rw = mysql_fetch_row(res)))
                if (row && (r = row(userdata, n, rw)) < 0)
                        break;
        mysql_free_result(res);
        return r;
}
