/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "memgov/log.h"

bool control_peer_allowed(uid_t peer_uid, const gid_t *peer_groups, size_t n_groups, uid_t self_uid,
                          gid_t socket_gid) {
        if (peer_uid == 0 || peer_uid == self_uid)
                return true;
        for (size_t i = 0; i < n_groups; i++)
                if (peer_groups[i] == socket_gid)
                        return true;
        return false;
}

ControlRequest control_parse_request(const char *buf, size_t n) {
        /* "status", normally followed by a newline; what follows is not looked at. */
        if (n >= STRLEN("status") && memcmp(buf, "status", STRLEN("status")) == 0)
                return CONTROL_REQUEST_STATUS;
        return CONTROL_REQUEST_UNKNOWN;
}

static bool peer_ok(int fd, gid_t socket_gid) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        gid_t groups[256];
        socklen_t glen = sizeof(groups);
        size_t n = 0;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return false;
        /* The primary group counts as a membership too. */
        groups[n++] = cred.gid;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups + 1, &glen) == 0)
                n += glen / sizeof(gid_t);
        bool ok = control_peer_allowed(cred.uid, groups, MIN(n, ELEMENTSOF(groups)), geteuid(), socket_gid);
        if (!ok)
                log_notice("control socket: refused a request from uid %u (not root, not the socket's group)",
                           (unsigned) cred.uid);
        return ok;
}

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        struct stat st;
        char req[128];

        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return 0;
        /* A client that neither writes nor reads may not hold the loop for more than a second. */
        struct timeval tv = { .tv_sec = 1 };
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

        /* The request first, so that a refused client still reads why. */
        ssize_t n = recv(c, req, sizeof(req) - 1, 0);
        req[n > 0 ? n : 0] = '\0';

        gid_t socket_gid = fstat(fd, &st) == 0 ? st.st_gid : 0;
        if (stat(m->socket_path, &st) == 0)
                socket_gid = st.st_gid;
        if (!peer_ok(c, socket_gid)) {
                const char deny[] = "{\"error\":\"permission denied: root or the socket's group only\"}\n";
                (void) send(c, deny, sizeof(deny) - 1, MSG_NOSIGNAL);
                close(c);
                return 0;
        }
        const char *reply;
        json_object *doc = NULL;
        if (control_parse_request(req, n > 0 ? (size_t) n : 0) == CONTROL_REQUEST_STATUS) {
                doc = manager_status_json(m);
                reply = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        } else
                reply = "{\"error\":\"unknown request (expected status)\"}";
        size_t len = strlen(reply), off = 0;
        while (off < len) {
                ssize_t k = send(c, reply + off, len - off, MSG_NOSIGNAL);
                if (k <= 0)
                        break;
                off += (size_t) k;
        }
        (void) send(c, "\n", 1, MSG_NOSIGNAL);
        json_object_put(doc);
        close(c);
        return 0;
}

int control_listen(Manager *m) {
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
        /* A socket left by a previous run that nobody listens on any more. */
        if (connect(m->control_fd, (struct sockaddr *) &sa, sizeof(sa)) == 0) {
                close(m->control_fd);
                m->control_fd = -1;
                return log_error_errno(-EADDRINUSE, "another memgov already governs this target (%s answers)",
                                       m->socket_path);
        }
        (void) unlink(m->socket_path);
        mode_t old = umask(0117);
        r = bind(m->control_fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (r < 0 || listen(m->control_fd, 8) < 0) {
                r = log_error_errno(negative_errno(), "cannot listen on %s: %m", m->socket_path);
                close(m->control_fd);
                m->control_fd = -1;
                return r;
        }
        r = sd_event_add_io(m->event, &m->control_source, m->control_fd, EPOLLIN, on_connection, m);
        if (r < 0)
                return log_error_errno(r, "control socket: %m");
        return 0;
}

void control_close(Manager *m) {
        m->control_source = sd_event_source_disable_unref(m->control_source);
        if (m->control_fd >= 0) {
                close(m->control_fd);
                (void) unlink(m->socket_path);
        }
        m->control_fd = -1;
}
