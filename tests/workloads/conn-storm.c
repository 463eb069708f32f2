/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A connection storm held open: N sessions of one account over a server's unix socket, in one
 * process, then commands from standard input, one a line, each answered with one line:
 *   ping     "alive A of N": every session asked SELECT 1, A answered
 *   connect  "connect ok" (the session is kept) or "connect error CODE MESSAGE"
 *   quit     (or end of input) closes every session
 *   memgov-conn-storm SOCKET USER PASSWORD N
 * Prints "open K" once K sessions are open (fewer than N: "open K error CODE MESSAGE"). */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SESSIONS 4096

static MYSQL *sessions[MAX_SESSIONS];
static unsigned n_sessions;

static MYSQL *open_one(const char *sock, const char *user, const char *password, unsigned *err, char *msg,
                       size_t size) {
        MYSQL *m = mysql_init(NULL);
        if (!m) {
                *err = 0;
                snprintf(msg, size, "out of memory");
                return NULL;
        }
        unsigned timeout = 10;
        mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
        if (!mysql_real_connect(m, NULL, user, password, NULL, 0, sock, 0)) {
                *err = mysql_errno(m);
                snprintf(msg, size, "%s", mysql_error(m));
                mysql_close(m);
                return NULL;
        }
        return m;
}

int main(int argc, char **argv) {
        char line[64], msg[512];
        unsigned err;

        if (argc != 5) {
                fprintf(stderr, "usage: memgov-conn-storm SOCKET USER PASSWORD N\n");
                return 2;
        }
        unsigned want = (unsigned) strtoul(argv[4], NULL, 10);
        if (want > MAX_SESSIONS)
                want = MAX_SESSIONS;
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (n_sessions < want) {
                MYSQL *m = open_one(argv[1], argv[2], argv[3], &err, msg, sizeof(msg));
                if (!m)
                        break;
                sessions[n_sessions++] = m;
        }
        if (n_sessions < want)
                printf("open %u error %u %s\n", n_sessions, err, msg);
        else
                printf("open %u\n", n_sessions);

        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\n")] = 0;
                if (!strcmp(line, "ping")) {
                        unsigned alive = 0;
                        for (unsigned i = 0; i < n_sessions; i++)
                                if (mysql_query(sessions[i], "SELECT 1") == 0) {
                                        MYSQL_RES *r = mysql_store_result(sessions[i]);
                                        MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
                                        alive += row && row[0] && !strcmp(row[0], "1");
                                        mysql_free_result(r);
                                }
                        printf("alive %u of %u\n", alive, n_sessions);
                } else if (!strcmp(line, "connect")) {
                        MYSQL *m = n_sessions < MAX_SESSIONS
                                           ? open_one(argv[1], argv[2], argv[3], &err, msg, sizeof(msg))
                                           : NULL;
                        if (m) {
                                sessions[n_sessions++] = m;
                                printf("connect ok\n");
                        } else
                                printf("connect error %u %s\n", err, msg);
                } else if (!strcmp(line, "quit"))
                        break;
                else
                        printf("unknown command\n");
        }
        for (unsigned i = 0; i < n_sessions; i++)
                mysql_close(sessions[i]);
        return 0;
}
