/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "memgov/connect.h"
#include "memgov/log.h"

/* How long a listener at the control socket's path has to accept before it is taken for a stuck one. */
#define CONTROL_PROBE_TIMEOUT USEC_PER_SEC

bool control_peer_allowed(uid_t peer_uid, const gid_t *peer_groups, size_t n_groups, uid_t self_uid,
                          gid_t socket_gid) {
        assert(peer_groups);
        if (peer_uid == 0 || peer_uid == self_uid)
                return true;
        for (size_t i = 0; i < n_groups; i++)
                if (peer_groups[i] == socket_gid)
                        return true;
        return false;
}

ControlRequest control_parse_request(const char *buf, size_t n) {
        assert(buf);
        /* "status", normally followed by a newline; what follows is not looked at. */
        if (n >= STRLEN("status") && memcmp(buf, "status", STRLEN("status")) == 0)
                return CONTROL_REQUEST_STATUS;
        return CONTROL_REQUEST_UNKNOWN;
}

/* A client's groups: the kernel says how many there are when the buffer is too small (ERANGE),
 * so the whole list is read, however long. The primary group counts as a membership too. */
static int peer_groups(int fd, gid_t primary, gid_t **ret, size_t *ret_n) {
        socklen_t len = 64 * sizeof(gid_t);
        for (unsigned attempt = 0; attempt < 4; attempt++) {
                gid_t *g = malloc(len + sizeof(gid_t));
                if (!g)
                        return -ENOMEM;
                g[0] = primary;
                socklen_t got = len;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g + 1, &got) == 0) {
                        *ret = g;
                        *ret_n = 1 + MIN(got, len) / sizeof(gid_t);
                        return 0;
                }
                int r = negative_errno();
                free(g);
                if (r != -ERANGE || got <= len)
                        return r;
                len = got; /* the size the kernel needs */
        }
        return -ERANGE;
}

static bool peer_ok(int fd, gid_t socket_gid) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        _cleanup_free_ gid_t *groups = NULL;
        size_t n = 0;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return false;
        int r = peer_groups(fd, cred.gid, &groups, &n);
        if (r < 0) {
                log_warning_errno(r, "control socket: cannot read the groups of uid %u: %m; judged by its user "
                                  "and primary group alone", (unsigned) cred.uid);
                groups = NULL;
                n = 0;
        }
        gid_t primary = cred.gid;
        bool ok = control_peer_allowed(cred.uid, groups ? groups : &primary, groups ? n : 1, geteuid(), socket_gid);
        if (!ok)
                log_notice("control socket: refused a request from uid %u (not root, not the socket's group)",
                           (unsigned) cred.uid);
        return ok;
}

/* One client: its request read and its reply written without blocking, each on the loop, within
 * CONTROL_CLIENT_TIMEOUT: a slow or silent client holds nothing but its own slot. */
#define CONTROL_CLIENTS_MAX 16
#define CONTROL_CLIENT_TIMEOUT (2 * USEC_PER_SEC)
#define CONTROL_REQUEST_MAX 128
#define CONTROL_REFUSED_MAX 4
#define CONTROL_REFUSED_LINGER (500 * USEC_PER_MSEC)

typedef struct ControlConn {
        Manager *manager;
        int fd;
        bool refused; /* told so already; anything it sends is dropped */
        sd_event_source *io, *timer;
        char request[CONTROL_REQUEST_MAX];
        size_t request_len;
        char *reply;
        size_t reply_len, reply_off;
        struct ControlConn *next;
} ControlConn;

static void conn_free(ControlConn *c) {
        Manager *m = c->manager;
        for (ControlConn **p = &m->control_conns; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        m->n_control_conns--;
        m->n_control_refused -= c->refused;
        c->io = sd_event_source_disable_unref(c->io);
        c->timer = sd_event_source_disable_unref(c->timer);
        close(c->fd);
        free(c->reply);
        free(c);
}

static void conn_reply(ControlConn *c) {
        Manager *m = c->manager;
        json_object *doc = NULL;
        const char *text;

        if (control_parse_request(c->request, c->request_len) == CONTROL_REQUEST_STATUS) {
                doc = manager_status_json(m);
                text = doc ? json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
                           : NULL;
                if (!text)
                        text = "{\"error\":\"out of memory\"}";
        } else
                text = "{\"error\":\"unknown request (expected status)\"}";
        size_t len = strlen(text);
        c->reply = malloc(len + 2);
        if (c->reply) {
                memcpy(c->reply, text, len);
                c->reply[len] = '\n';
                c->reply_len = len + 1;
        }
        json_object_put(doc);
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ControlConn *c = userdata;

        if (c->refused) {
                char drop[CONTROL_REQUEST_MAX];
                ssize_t n = recv(fd, drop, sizeof(drop), MSG_DONTWAIT);
                if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR)))
                        conn_free(c); /* the client is gone */
                return 0;
        }

        if (!c->reply) {
                for (;;) {
                        ssize_t n = recv(fd, c->request + c->request_len, sizeof(c->request) - 1 - c->request_len,
                                         MSG_DONTWAIT);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n < 0 && errno == EAGAIN)
                                return 0;
                        if (n > 0)
                                c->request_len += (size_t) n;
                        /* A whole line, a full buffer, or the end of what the client sends. */
                        if (n <= 0 || memchr(c->request, '\n', c->request_len) ||
                            c->request_len == sizeof(c->request) - 1)
                                break;
                }
                c->request[c->request_len] = '\0';
                conn_reply(c);
                if (!c->reply) {
                        conn_free(c);
                        return 0;
                }
                if (sd_event_source_set_io_events(c->io, EPOLLOUT) < 0) {
                        conn_free(c);
                        return 0;
                }
        }
        while (c->reply_off < c->reply_len) {
                ssize_t k = send(fd, c->reply + c->reply_off, c->reply_len - c->reply_off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k <= 0)
                        break;
                c->reply_off += (size_t) k;
        }
        conn_free(c);
        return 0;
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        ControlConn *c = userdata;
        log_debug("control socket: a client neither asked nor read its reply within %llu s; disconnected",
                  (unsigned long long) (CONTROL_CLIENT_TIMEOUT / USEC_PER_SEC));
        conn_free(c);
        return 0;
}

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        struct stat st;

        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0)
                return 0;
        /* Who asks, before anything it sent is read: its credentials are the connect()'s. */
        gid_t socket_gid = fstat(fd, &st) == 0 ? st.st_gid : 0;
        if (stat(m->socket_path, &st) == 0)
                socket_gid = st.st_gid;
        bool refused = !peer_ok(c, socket_gid);
        if (refused) {
                /* Fits the socket buffer of a new connection: never blocks. */
                const char deny[] = "{\"error\":\"permission denied: root or the socket's group only\"}\n";
                (void) send(c, deny, sizeof(deny) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
                /* Kept open a moment, so that a client still sending its request reads why instead
                 * of a broken pipe; what it sends is dropped unread. A few at a time at most. */
                if (m->n_control_refused >= CONTROL_REFUSED_MAX) {
                        close(c);
                        return 0;
                }
        } else if (m->n_control_conns - m->n_control_refused >= CONTROL_CLIENTS_MAX) {
                const char busy[] = "{\"error\":\"busy: too many clients at once, try again\"}\n";
                (void) send(c, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
                close(c);
                return 0;
        }
        ControlConn *conn = calloc(1, sizeof(ControlConn));
        if (!conn) {
                close(c);
                return 0;
        }
        *conn = (ControlConn) { .manager = m, .fd = c, .refused = refused, .next = m->control_conns };
        m->control_conns = conn;
        m->n_control_conns++;
        m->n_control_refused += refused;
        if (sd_event_add_io(m->event, &conn->io, c, EPOLLIN, on_conn_io, conn) < 0 ||
            sd_event_add_time_relative(m->event, &conn->timer, CLOCK_MONOTONIC,
                                       refused ? CONTROL_REFUSED_LINGER : CONTROL_CLIENT_TIMEOUT, 0, on_conn_timeout,
                                       conn) < 0) {
                conn_free(conn);
                return 0;
        }
        (void) sd_event_source_set_description(conn->io, "control-client");
        (void) sd_event_source_set_description(conn->timer, "control-client-timeout");
        return 0;
}

int control_listen(Manager *m) {
        assert(m);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;

        if (strlen(m->socket_path) >= sizeof(sa.sun_path))
                return log_error_errno(-ENAMETOOLONG, "control socket path %s is too long", m->socket_path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", m->socket_path);

        /* The directory: /run/memgov by default (systemd's RuntimeDirectory= makes it too). */
        char dir[sizeof(sa.sun_path)];
        snprintf(dir, sizeof(dir), "%s", m->socket_path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return log_error_errno(negative_errno(), "cannot create %s: %m", dir);
        }

        m->control_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (m->control_fd < 0)
                return log_error_errno(negative_errno(), "control socket: %m");
        /* A socket left by a previous run that nobody listens on any more. Bounded: a listener
         * that does not accept (its queue full) would hold the start for ever. */
        r = connect_bounded(m->control_fd, (struct sockaddr *) &sa, sizeof(sa), CONTROL_PROBE_TIMEOUT);
        if (r == 0 || r == -ETIMEDOUT) {
                close(m->control_fd);
                m->control_fd = -1;
                if (r == 0)
                        return log_error_errno(-EADDRINUSE, "another memgov already governs this target (%s answers)",
                                               m->socket_path);
                return log_error_errno(-EADDRINUSE, "a process listens on %s and accepts no connection within 1s (a "
                                       "memgov that is stuck?): not taking its place", m->socket_path);
        }
        (void) unlink(m->socket_path);
        mode_t old = umask(0117);
        r = bind(m->control_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ? negative_errno() : 0;
        umask(old);
        if (r >= 0 && listen(m->control_fd, 8) < 0)
                r = negative_errno();
        if (r < 0) {
                r = log_error_errno(r, "cannot listen on %s: %m", m->socket_path);
                close(m->control_fd);
                m->control_fd = -1;
                return r;
        }
        r = sd_event_add_io(m->event, &m->control_source, m->control_fd, EPOLLIN, on_connection, m);
        if (r < 0)
                return log_error_errno(r, "control socket: %m");
        (void) sd_event_source_set_description(m->control_source, "control-socket");
        return 0;
}

void control_close(Manager *m) {
        assert(m);
        while (m->control_conns)
                conn_free(m->control_conns);
        m->control_source = sd_event_source_disable_unref(m->control_source);
        if (m->control_fd >= 0) {
                close(m->control_fd);
                (void) unlink(m->socket_path);
        }
        m->control_fd = -1;
}
