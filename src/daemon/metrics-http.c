/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manager.h"
#include "metrics-http.h"
#include "memgov/clock.h"
#include "memgov/fileio.h"
#include "memgov/log.h"
#include "memgov/metrics.h"

/* The HTTP server runs inside the event loop (libmicrohttpd without a thread of its own, driven
 * through its epoll descriptor): a scrape reads the manager's state between two ticks, with no
 * lock and no second thread touching it. */

#define METRICS_BUFFER (64 * 1024)
/* A connection's whole life, however it trickles: a scrape takes milliseconds. */
#define METRICS_CONNECTION_LIFE (10 * USEC_PER_SEC)
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The exposition's buffer, taken when metrics are first configured, not when memory is short. */
static int metrics_buffer(Manager *m) {
        if (!m->metrics_buf && !(m->metrics_buf = malloc(METRICS_BUFFER)))
                return log_error_errno(-ENOMEM, "metrics: out of memory");
        return 0;
}

static int render(Manager *m) {
        _cleanup_free_ ExplainWatchInfo *w = malloc(sizeof(ExplainWatchInfo));
        _cleanup_free_ Explanation *e = malloc(sizeof(Explanation));
        bool explained = w && e && manager_explanation(m, w, e);
        MetricsView v = {
                .instance = m->instance,
                .version = MEMGOV_VERSION,
                .dry_run = m->opts.dry_run,
                .target_present = m->target.resolved && m->target.pid > 0,
                .sample = m->have_last ? &m->last_sample : NULL,
                .out = m->have_last ? &m->last : NULL,
                .counters = &m->metrics,
                .uptime = now_clock(CLOCK_MONOTONIC) - m->started,
                .explanation = explained ? e : NULL,
        };
        int n = metrics_render(&v, m->metrics_buf, METRICS_BUFFER);
        if (n < 0)
                log_warning("the metrics do not fit in %d bytes; the exposition is cut short", METRICS_BUFFER);
        return n < 0 ? (int) strlen(m->metrics_buf) : n;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
                             size_t len, const char *allow) {
        struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *) body, MHD_RESPMEM_MUST_COPY);
        if (!r)
                return MHD_NO;
        MHD_add_response_header(r, "Content-Type", type);
        if (allow)
                MHD_add_response_header(r, "Allow", allow);
        enum MHD_Result ret = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
        Manager *m = cls;
        static const char index_page[] = "memgov: the metrics are at /metrics\n";
        static const char not_found[] = "not found: the metrics are at /metrics\n";
        static const char not_allowed[] = "only GET and HEAD are served\n";

        if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
                return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", not_allowed, sizeof(not_allowed) - 1,
                             "GET, HEAD");
        if (*upload_data_size > 0) {
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (streq(url, "/metrics")) {
                int n = render(m);
                return reply(c, MHD_HTTP_OK, METRICS_CONTENT_TYPE, m->metrics_buf, (size_t) n, NULL);
        }
        if (streq(url, "/"))
                return reply(c, MHD_HTTP_OK, "text/plain", index_page, sizeof(index_page) - 1, NULL);
        return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", not_found, sizeof(not_found) - 1, NULL);
}

/* Each connection as libmicrohttpd starts and closes it: its socket and when it came. Everything
 * here runs on the event loop's thread, libmicrohttpd too: a connection recorded is open. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        Manager *m = cls;
        struct MetricsConnection *slot = *socket_context;

        if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
                if (slot)
                        slot->connection = NULL;
                *socket_context = NULL;
                return;
        }
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        for (unsigned i = 0; info && i < METRICS_CONNECTIONS; i++)
                if (!m->http_conns[i].connection) {
                        m->http_conns[i] = (struct MetricsConnection) {
                                .connection = c, .fd = info->connect_fd, .since = now_clock(CLOCK_MONOTONIC) };
                        *socket_context = &m->http_conns[i];
                        return;
                }
}

/* Connections past their life are shut down: libmicrohttpd sees the end of the stream at its
 * next run and closes them. Returns when the next one is due (USEC_INFINITY: none), and in
 * ret_ended whether one was shut down. */
static usec_t end_old_connections(Manager *m, bool *ret_ended) {
        usec_t now = now_clock(CLOCK_MONOTONIC), next = USEC_INFINITY;
        *ret_ended = false;
        for (unsigned i = 0; i < METRICS_CONNECTIONS; i++) {
                struct MetricsConnection *c = &m->http_conns[i];
                if (!c->connection)
                        continue;
                if (now - c->since >= METRICS_CONNECTION_LIFE) {
                        (void) shutdown(c->fd, SHUT_RDWR); /* again at each run until it is closed */
                        *ret_ended = true;
                } else
                        next = MIN(next, c->since + METRICS_CONNECTION_LIFE);
        }
        return next;
}

static unsigned open_connections(Manager *m) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        return info ? info->num_connections : 0;
}

static void run_http(Manager *m) {
        MHD_UNSIGNED_LONG_LONG ms;
        bool ended;
        MHD_run(m->httpd);
        usec_t next = end_old_connections(m, &ended);
        /* Again while connections close: those shut down above close at the next run, and at its
         * connection limit libmicrohttpd watches its listening socket again only at the run after
         * the one that closed some (nothing else would wake it: a new client stayed unanswered). */
        for (unsigned i = 0; i < 3; i++) {
                unsigned n = open_connections(m);
                MHD_run(m->httpd);
                if (open_connections(m) == n && !(i == 0 && ended))
                        break;
        }
        usec_t now = now_clock(CLOCK_MONOTONIC);
        usec_t due = next == USEC_INFINITY ? USEC_INFINITY : next > now ? next - now : 0;
        if (MHD_get_timeout(m->httpd, &ms) == MHD_YES)
                due = MIN(due, (usec_t) ms * USEC_PER_MSEC);
        if (due != USEC_INFINITY) {
                (void) sd_event_source_set_time_relative(m->http_timer, due);
                (void) sd_event_source_set_enabled(m->http_timer, SD_EVENT_ONESHOT);
        } else
                (void) sd_event_source_set_enabled(m->http_timer, SD_EVENT_OFF);
}

static int on_http_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        run_http(userdata);
        return 0;
}

static int on_http_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        run_http(userdata);
        return 0;
}

static int listen_socket(const char *address, unsigned port) {
        union {
                struct sockaddr sa;
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } sa = {};
        socklen_t len;
        int family = strchr(address, ':') ? AF_INET6 : AF_INET;

        if (family == AF_INET6) {
                sa.in6.sin6_family = AF_INET6;
                sa.in6.sin6_port = htons((uint16_t) port);
                if (inet_pton(AF_INET6, address, &sa.in6.sin6_addr) != 1)
                        return -EINVAL;
                len = sizeof(sa.in6);
        } else {
                sa.in.sin_family = AF_INET;
                sa.in.sin_port = htons((uint16_t) port);
                if (inet_pton(AF_INET, address, &sa.in.sin_addr) != 1)
                        return -EINVAL;
                len = sizeof(sa.in);
        }
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        int one = 1;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (family == AF_INET6)
                (void) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, &sa.sa, len) < 0 || listen(fd, 16) < 0) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        return fd;
}

int metrics_http_start(Manager *m) {
        assert(m);
        const Policy *p = &m->policy;
        char where[96];
        int r;

        if (!p->metrics_address[0])
                return 0;
        snprintf(where, sizeof(where), strchr(p->metrics_address, ':') ? "[%s]:%u" : "%s:%u", p->metrics_address,
                 p->metrics_port);
        int fd = listen_socket(p->metrics_address, p->metrics_port);
        if (fd < 0) {
                if (fd == -EAFNOSUPPORT || fd == -EPERM)
                        return log_error_errno(fd, "metrics: cannot listen on %s: %m (under memgov@.service, add the "
                                               "memgov-network.conf drop-in: see memgov(8))", where);
                return log_error_errno(fd, "metrics: cannot listen on %s: %m (expected a free port in metrics.listen)",
                                       where);
        }
        unsigned flags = MHD_USE_EPOLL | (strchr(p->metrics_address, ':') ? MHD_USE_IPv6 : 0);
        memset(m->http_conns, 0, sizeof(m->http_conns));
        m->httpd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET, fd,
                                    MHD_OPTION_CONNECTION_LIMIT, (unsigned) METRICS_CONNECTIONS,
                                    /* No authentication: one client may not hold every slot. */
                                    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned) METRICS_CONNECTIONS_PER_ADDRESS,
                                    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) (METRICS_CONNECTION_LIFE / USEC_PER_SEC),
                                    MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
                                    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) 32 * 1024, MHD_OPTION_END);
        if (!m->httpd) {
                close(fd);
                return log_error_errno(-EIO, "metrics: cannot start the HTTP server on %s", where);
        }
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info) {
                r = log_error_errno(-EIO, "metrics: the HTTP server has no epoll descriptor");
                goto fail;
        }
        if ((r = metrics_buffer(m)) < 0)
                goto fail;
        r = sd_event_add_io(m->event, &m->http_io, info->epoll_fd, EPOLLIN, on_http_io, m);
        if (r >= 0)
                r = sd_event_add_time_relative(m->event, &m->http_timer, CLOCK_MONOTONIC, USEC_PER_SEC, 0, on_http_timer,
                                               m);
        if (r < 0) {
                log_error_errno(r, "metrics: cannot watch the HTTP server: %m");
                goto fail;
        }
        (void) sd_event_source_set_description(m->http_io, "metrics-http");
        (void) sd_event_source_set_description(m->http_timer, "metrics-http-timer");
        run_http(m);
        snprintf(m->metrics_listening, sizeof(m->metrics_listening), "%s", where);
        log_info("metrics: serving http://%s/metrics", where);
        return 0;
fail:
        metrics_http_stop(m);
        return r;
}

void metrics_http_stop(Manager *m) {
        assert(m);
        m->http_io = sd_event_source_disable_unref(m->http_io);
        m->http_timer = sd_event_source_disable_unref(m->http_timer);
        if (m->httpd) {
                /* The listening socket was ours; libmicrohttpd closes it with the daemon. */
                MHD_stop_daemon(m->httpd);
                m->httpd = NULL;
        }
        m->metrics_listening[0] = '\0';
}

int metrics_http_reload(Manager *m, const Policy *old) {
        assert(m);
        assert(old);
        if (streq(old->metrics_address, m->policy.metrics_address) && old->metrics_port == m->policy.metrics_port &&
            (m->httpd != NULL) == (m->policy.metrics_address[0] != '\0'))
                return 0;
        metrics_http_stop(m);
        return metrics_http_start(m);
}

/* node_exporter reads every *.prom file of its directory: the text is written to a new file of
 * a name it ignores and renamed over the old file, so that it never reads half a file. */
void metrics_textfile_write(Manager *m) {
        assert(m);
        const char *path = m->policy.metrics_textfile;
        char dir[PATH_MAX];

        if (!path[0])
                return;
        if (metrics_buffer(m) < 0)
                return;
        int n = render(m);
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof(dir), "%.*s", slash ? (int) MAX(slash - path, 1) : 1, slash ? path : ".");
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = dfd < 0 ? negative_errno()
                        : write_file_replace_at(dfd, slash ? slash + 1 : path, m->metrics_buf, (size_t) MAX(n, 0), 0644,
                                                false);
        if (r < 0) {
                if (r != m->textfile_error)
                        log_warning_errno(r, "metrics: cannot write %s: %m", path);
        } else if (m->textfile_error)
                log_info("metrics: %s written again", path);
        m->textfile_error = r;
}
