/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A connection storm held open: N sessions of one account over a server's unix socket, in one
 * process, then commands from standard input, one a line, each answered with one line:
 *   ping     "alive A of N": every session asked SELECT 1, A answered
 *   connect  "connect ok" (the session is kept) or "connect error CODE MESSAGE"
 *   busy K   "busy K": the K oldest sessions sent SELECT SLEEP(300), its answer not read; ping
 *            passes them by (not alive)
 *   busy?    "busy B of K": B of them still in that statement (nothing to read on their socket
 *            within 3 s: neither its end nor the connection's)
 *   quit     (or end of input) closes every session
 *   memgov-conn-storm SOCKET USER PASSWORD N
 * Prints "open K" once K sessions are open (fewer than N: "open K error CODE MESSAGE"). */
#include <mysql.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SESSIONS 4096

static MYSQL *sessions[MAX_SESSIONS];
static unsigned n_sessions, n_busy;

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
                        for (unsigned i = n_busy; i < n_sessions; i++)
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
                } else if (!strncmp(line, "busy ", 5)) {
                        unsigned k = (unsigned) strtoul(line + 5, NULL, 10);
                        while (n_busy < k && n_busy < n_sessions) {
                                const char q[] = "SELECT SLEEP(300)";
                                if (mysql_send_query(sessions[n_busy], q, sizeof(q) - 1) != 0)
                                        break;
                                n_busy++;
                        }
                        printf("busy %u\n", n_busy);
                } else if (!strcmp(line, "busy?")) {
                        /* Within 3 s: a KILL returns before the session's thread closes its
                         * connection. */
                        unsigned still = 0;
                        struct timespec t0, t;
                        clock_gettime(CLOCK_MONOTONIC, &t0);
                        for (unsigned i = 0; i < n_busy; i++) {
                                clock_gettime(CLOCK_MONOTONIC, &t);
                                long spent = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
                                struct pollfd p = { .fd = (int) mysql_get_socket(sessions[i]), .events = POLLIN };
                                still += poll(&p, 1, spent < 3000 ? (int) (3000 - spent) : 0) == 0;
                        }
                        printf("busy %u of %u\n", still, n_busy);
                } else if (!strcmp(line, "quit"))
                        break;
                else
                        printf("unknown command\n");
        }
        for (unsigned i = 0; i < n_sessions; i++)
                mysql_close(sessions[i]);
        return 0;
}
