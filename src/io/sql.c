/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <mysql.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memgov/clock.h"
#include "memgov/connect.h"
#include "memgov/fileio.h"
#include "memgov/parse-proc.h"
#include "memgov/sql.h"
#include "memgov/target.h"
#include "memgov/unix-diag.h"
#include "memgov/units.h"

/* Connector/C reads an option file in pieces of this many bytes. */
#define OPTION_LINE_MAX 4094U

void sql_library_init(void) {
        mysql_library_init(0, NULL, NULL);
}

/* The inodes of the sockets a process holds, and their descriptor numbers: its /proc/PID/fd
 * links, "socket:[N]". */
static int socket_inodes(pid_t pid, uint64_t *inodes, int *fds, size_t max, size_t *ret_n, char *why, size_t why_size) {
        char path[64], link[128];
        size_t n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        DIR *d = opendir(path);
        if (!d) {
                int r = negative_errno();
                snprintf(why, why_size, "cannot list the descriptors of process %d: %s", (int) pid, strerror(-r));
                return r;
        }
        struct dirent *de;
        while ((de = readdir(d)) && n < max) {
                ssize_t k = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
                if (k <= 0)
                        continue;
                link[k] = '\0';
                unsigned long long ino;
                if (sscanf(link, "socket:[%llu]", &ino) == 1) {
                        fds[n] = atoi(de->d_name);
                        inodes[n++] = ino;
                }
        }
        closedir(d);
        *ret_n = n;
        return 0;
}

/* The child's answer: an errno, and the descriptor alongside when it is 0. */
static void send_fd(int sock, int fd, int error) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = &error, .iov_len = sizeof(error) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (fd >= 0) {
                mh.msg_control = control.buf;
                mh.msg_controllen = sizeof(control.buf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        (void) sendmsg(sock, &mh, MSG_NOSIGNAL);
}

static int recv_fd(int sock) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        int error = 0;
        struct iovec iov = { .iov_base = &error, .iov_len = sizeof(error) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf) };
        ssize_t k;
        do
                k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return negative_errno();
        int fd = -1;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (k != sizeof(error) || (error == 0 && fd < 0)) {
                if (fd >= 0)
                        close(fd);
                return -EBADMSG;
        }
        if (error != 0) {
                if (fd >= 0)
                        close(fd);
                return -error;
        }
        return fd;
}

/* A sock_diag socket in the network namespace of pid: sock_diag lists only the sockets of the
 * namespace its socket was made in, and a socket keeps that namespace. setns() would move the
 * whole calling thread (the worker, or the daemon's main thread), so a short-lived child enters
 * the namespace, makes the socket and hands it back over SCM_RIGHTS. */
static int diag_socket_of(pid_t pid, char *why, size_t why_size) {
        struct stat self, target;
        char path[64];
        int r;

        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) pid);
        _cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
        if (ns < 0 || fstat(ns, &target) < 0) {
                r = negative_errno();
                snprintf(why, why_size, "cannot open the network namespace of process %d: %s", (int) pid, strerror(-r));
                return r;
        }
        if (stat("/proc/thread-self/ns/net", &self) == 0 && self.st_dev == target.st_dev &&
            self.st_ino == target.st_ino) {
                int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
                if (fd < 0) {
                        r = negative_errno();
                        snprintf(why, why_size, "cannot open a sock_diag socket: %s", strerror(-r));
                        return r;
                }
                return fd;
        }

        int pair[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0) {
                r = negative_errno();
                snprintf(why, why_size, "socketpair: %s", strerror(-r));
                return r;
        }
        pid_t child = fork();
        if (child < 0) {
                r = negative_errno();
                close(pair[0]);
                close(pair[1]);
                snprintf(why, why_size, "fork: %s", strerror(-r));
                return r;
        }
        if (child == 0) {
                /* Only system calls here: the parent may have other threads. */
                int fd = -1;
                if (setns(ns, CLONE_NEWNET) == 0)
                        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
                send_fd(pair[1], fd, fd < 0 ? errno : 0);
                _exit(0);
        }
        close(pair[1]);
        int fd = recv_fd(pair[0]);
        close(pair[0]);
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
                ;
        if (fd < 0)
                snprintf(why, why_size, "cannot open a sock_diag socket in the network namespace of process %d: %s",
                         (int) pid, strerror(-fd));
        return fd;
}

/* Asks the kernel for the listening unix sockets of the namespace and keeps the server's. */
static int diag_find(int fd, pid_t pid, const uint64_t *inodes, size_t n, UnixDiagSocket *ret, char *why,
                     size_t why_size) {
        struct {
                struct nlmsghdr h;
                struct unix_diag_req r;
        } req = {
                .h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
                       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
                .r = { .sdiag_family = AF_UNIX, .udiag_states = 1U << 10 /* TCP_LISTEN */,
                       .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS },
        };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        struct timeval tv = { .tv_sec = 5 };
        int r;

        *ret = (UnixDiagSocket) {};
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0) {
                r = negative_errno();
                snprintf(why, why_size, "sock_diag request: %s", strerror(-r));
                return r;
        }
        _cleanup_free_ char *buf = malloc(32768);
        if (!buf) {
                snprintf(why, why_size, "out of memory");
                return -ENOMEM;
        }
        do {
                ssize_t k = recv(fd, buf, 32768, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = k < 0 ? negative_errno() : -EBADMSG;
                        snprintf(why, why_size, "sock_diag reply: %s", strerror(-r));
                        return r;
                }
                r = unix_diag_parse(buf, (size_t) k, inodes, n, ret);
                if (r < 0) {
                        snprintf(why, why_size, "sock_diag reply: %s", strerror(-r));
                        return r;
                }
        } while (r == 0);
        if (!ret->found) {
                snprintf(why, why_size, "process %d listens on no unix socket (give [sql] socket or host)", (int) pid);
                return -ENOENT;
        }
        return 0;
}

/* Without the right to enter the server's network namespace (setns needs CAP_SYS_ADMIN, which
 * the daemon drops, and memgov@.service has RestrictNamespaces=yes), the server's own sockets
 * are asked one by one: a copy of each descriptor (pidfd_getfd, allowed by ptrace access) says
 * whether it is a listening stream socket and gives its name with an explicit length. The
 * socket file's inode is unknown this way (vfs_inode 0): the peer check binds it to the
 * server instead. */
static int find_by_descriptors(pid_t pid, const int *fds, size_t n, UnixDiagSocket *ret, char *why, size_t why_size) {
        _cleanup_close_ int pidfd = pidfd_open(pid, 0);
        int r;

        *ret = (UnixDiagSocket) {};
        if (pidfd < 0) {
                r = negative_errno();
                snprintf(why, why_size, "process %d: %s", (int) pid, strerror(-r));
                return r;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int fd = pidfd_getfd(pidfd, fds[i], 0);
                if (fd < 0) {
                        r = negative_errno();
                        if (r == -EBADF)
                                continue; /* closed since */
                        snprintf(why, why_size, "cannot read the sockets of process %d: %s", (int) pid, strerror(-r));
                        return r;
                }
                int domain = 0, type = 0, listening = 0;
                socklen_t l = sizeof(int);
                struct sockaddr_un sa = {};
                socklen_t sl = sizeof(sa);
                if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &l) < 0 || domain != AF_UNIX ||
                    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) < 0 || type != SOCK_STREAM ||
                    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) < 0 || !listening ||
                    getsockname(fd, (struct sockaddr *) &sa, &sl) < 0 || sl <= offsetof(struct sockaddr_un, sun_path))
                        continue;
                size_t len = strnlen(sa.sun_path, sl - offsetof(struct sockaddr_un, sun_path));
                if (len == 0 || sa.sun_path[0] != '/' || len >= sizeof(ret->path))
                        continue;
                memcpy(ret->path, sa.sun_path, len);
                ret->path[len] = '\0';
                ret->found = true;
                return 0;
        }
        snprintf(why, why_size, "process %d listens on no unix socket (give [sql] socket or host)", (int) pid);
        return -ENOENT;
}

int sql_server_listens(pid_t pid) {
        uint64_t inodes[256];
        int fds[256];
        size_t n = 0;
        char why[256];
        int r = socket_inodes(pid, inodes, fds, ELEMENTSOF(inodes), &n, why, sizeof(why));
        if (r < 0)
                return r;
        _cleanup_close_ int pidfd = pidfd_open(pid, 0);
        if (pidfd < 0)
                return negative_errno();
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int fd = pidfd_getfd(pidfd, fds[i], 0);
                if (fd < 0) {
                        if (errno == EBADF)
                                continue; /* closed since */
                        return negative_errno();
                }
                int listening = 0;
                socklen_t l = sizeof(listening);
                if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l) == 0 && listening)
                        return 1;
        }
        return 0;
}

/* The server's socket file, opened by its path inside the server's root and checked to be the
 * very inode the server's listening socket is bound to (sock_diag's VFS attribute): a path of
 * someone else's choosing cannot stand in for it. The O_PATH descriptor pins that inode, and
 * /proc/self/fd/N reaches the socket through it whatever the length of the path. */
static int open_server_socket_file(pid_t pid, const UnixDiagSocket *s, char *why, size_t why_size) {
        struct stat st;
        int r;

        int fd = open_in_process_root(pid, s->path, O_PATH);
        if (fd < 0 || fstat(fd, &st) < 0) {
                r = fd < 0 ? fd : negative_errno();
                if (fd >= 0)
                        close(fd);
                snprintf(why, why_size, "cannot open the socket %s of process %d: %s", s->path, (int) pid,
                         strerror(-r));
                return r;
        }
        /* The kernel reports its own dev_t (major << 20 | minor), not stat's encoding. */
        dev_t dev = makedev((unsigned) (s->vfs_dev >> 20), (unsigned) (s->vfs_dev & 0xfffff));
        if (!S_ISSOCK(st.st_mode) || (s->vfs_inode != 0 && (st.st_ino != s->vfs_inode || st.st_dev != dev))) {
                close(fd);
                snprintf(why, why_size, "%s in the root of process %d is not the socket the process listens on",
                         s->path, (int) pid);
                return -ESTALE;
        }
        return fd;
}

int sql_find_socket(pid_t pid, char *buf, size_t size, char *why, size_t why_size) {
        assert(buf);
        assert(why);
        uint64_t inodes[256];
        int fds[256];
        size_t n = 0;
        UnixDiagSocket s;
        int r;

        r = socket_inodes(pid, inodes, fds, ELEMENTSOF(inodes), &n, why, why_size);
        if (r < 0)
                return r;
        _cleanup_close_ int diag = diag_socket_of(pid, why, why_size);
        if (diag == -EPERM)
                r = find_by_descriptors(pid, fds, n, &s, why, why_size);
        else if (diag < 0)
                return diag;
        else
                r = diag_find(diag, pid, inodes, n, &s, why, why_size);
        if (r < 0)
                return r;
        int fd = open_server_socket_file(pid, &s, why, why_size);
        if (fd < 0)
                return fd;
        snprintf(buf, size, "%s", s.path);
        return fd;
}

/* Whether the listener is a process of the server's own: the same user, and the same cgroup v2
 * cgroup, which must be one of its own (the root cgroup, or none at all on a host that does not
 * place processes by service, holds everybody: no sign of belonging). */
static bool same_server(pid_t listener, uid_t listener_uid, pid_t server) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d", (int) server);
        if (stat(path, &st) < 0 || st.st_uid != listener_uid)
                return false;
        _cleanup_free_ ProcCgroup *a = malloc(sizeof(ProcCgroup)), *b = malloc(sizeof(ProcCgroup));
        return a && b && proc_read_cgroup(AT_FDCWD, listener, a) == 0 && proc_read_cgroup(AT_FDCWD, server, b) == 0 &&
               a->has_unified && b->has_unified && streq(a->unified, b->unified) && !streq(a->unified, "/");
}

int sql_check_peer(int sock, pid_t server, const char *endpoint, char *why, size_t why_size) {
        assert(endpoint);
        assert(why);
        struct ucred cred;
        socklen_t len = sizeof(cred);

        if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                int r = negative_errno();
                snprintf(why, why_size, "%s: cannot read who listens: %s", endpoint, strerror(-r));
                return r;
        }
        if (cred.pid == server || (cred.pid > 0 && same_server(cred.pid, cred.uid, server)))
                return 0;
        snprintf(why, why_size,
                 "%s is served by process %d (uid %u), neither the server (process %d) nor a process of its user in "
                 "its cgroup: not connecting",
                 endpoint, (int) cred.pid, (unsigned) cred.uid, (int) server);
        return -EPERM;
}

/* Connects to the socket behind fd_path and checks who listens there, before the client
 * library sends anything. Connector/C cannot adopt a descriptor we connected ourselves, so it
 * connects again, to /proc/self/fd/N: that reaches the socket file our O_PATH descriptor pins,
 * and a socket file belongs to one listening socket for its whole life (a later bind() makes a
 * new file), so the library reaches the very socket checked here. */
static int probe_peer(const char *fd_path, pid_t server, const char *endpoint, usec_t timeout, char *why,
                      size_t why_size) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char t[FORMAT_TIMESPAN_MAX];
        int r;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fd_path);
        _cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        /* Bounded: a listener that never accepts (its queue full) would hold every action. */
        r = s < 0 ? negative_errno() : connect_bounded(s, (struct sockaddr *) &sa, sizeof(sa), timeout);
        if (r < 0) {
                if (r == -ETIMEDOUT)
                        snprintf(why, why_size, "cannot connect to %s: not accepted within sql.connect-timeout %s "
                                                "(its queue of connections full)", endpoint, format_timespan(t, timeout));
                else
                        snprintf(why, why_size, "cannot connect to %s: %s", endpoint, strerror(-r));
                return r == -ENOENT ? -ECONNREFUSED : r;
        }
        return sql_check_peer(s, server, endpoint, why, why_size);
}

int sql_open_option_file(const char *path, char *why, size_t why_size) {
        assert(path);
        assert(why);
        _cleanup_free_ char *text = NULL;
        char trusted[256], dir[PATH_MAX];
        struct stat st;
        size_t len;
        int r;

        /* Its directory as given; the file below it, through the symbolic links that stay
         * inside (a Kubernetes Secret volume: client.cnf -> ..data/client.cnf, ..data ->
         * ..2026_12_05_...), none that leads out. */
        const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
        if (!slash)
                strcpy(dir, ".");
        else if (slash == path)
                strcpy(dir, "/");
        else if ((size_t) (slash - path) < sizeof(dir))
                snprintf(dir, sizeof(dir), "%.*s", (int) (slash - path), path);
        else {
                snprintf(why, why_size, "option file %s: too long a path", path);
                return -ENAMETOOLONG;
        }
        if (!*base || streq(base, ".") || streq(base, "..")) {
                snprintf(why, why_size, "option file %s: not a file name", path);
                return -EINVAL;
        }
        _cleanup_close_ int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                r = negative_errno();
                snprintf(why, why_size, "option file %s: %s: %s", path, dir, strerror(-r));
                return r;
        }
        _cleanup_close_ int pathfd = open_beneath(dirfd, base, O_PATH, false);
        if (pathfd < 0) {
                r = pathfd;
                snprintf(why, why_size, "option file %s: %s", path,
                         r == -EXDEV  ? "is a symbolic link that leads out of its directory (give the file itself, or "
                                        "a link to a file beside it)"
                         : r == -ELOOP ? "is a symbolic link that cannot be followed (a loop, or a /proc link)"
                                       : strerror(-r));
                return r;
        }
        _cleanup_close_ int fd = reopen_regular(pathfd, O_RDONLY, &st);
        if (fd == -EBADFD) {
                snprintf(why, why_size, "option file %s is not a regular file", path);
                return -EINVAL;
        }
        if (fd < 0) {
                r = fd;
                snprintf(why, why_size, "option file %s: %s", path, strerror(-r));
                return r;
        }
        if (st.st_mode & (S_IRGRP | S_IROTH)) {
                /* A pod's fsGroup makes a Secret's files readable by that group (mode | 0440). */
                snprintf(why, why_size, "option file %s is readable by %s (mode %04o; expected chmod 600%s): it "
                                        "holds a password", path, (st.st_mode & S_IROTH) ? "everyone" : "its group",
                         (unsigned) (st.st_mode & 07777),
                         st.st_gid != 0 && !(st.st_mode & S_IROTH) ? "; in Kubernetes, a Secret volume of a pod with "
                                                                      "fsGroup set is readable by that group"
                                                                    : "");
                return -EPERM;
        }
        if (check_trusted_file(&st, geteuid(), trusted, sizeof(trusted)) < 0) {
                snprintf(why, why_size, "option file %s: %s", path, trusted);
                return -EPERM;
        }
        r = read_full_fd(fd, 1U << 20, &text, &len);
        if (r < 0) {
                snprintf(why, why_size, "option file %s: %s", path, strerror(-r));
                return r;
        }
        /* The library would open an !include or !includedir by its path, later, unchecked: the
         * one file read is the one checked here. */
        unsigned line = 1;
        for (const char *p = text; p < text + len; line++) {
                const char *end = memchr(p, '\n', (size_t) (text + len - p));
                const char *q = p;
                /* Skipped as the library skips it (isspace: \f, \v, \r too), and no line longer
                 * than the library reads at once: the rest of one would start a line of its own. */
                if ((size_t) ((end ? end : text + len) - p) >= OPTION_LINE_MAX) {
                        snprintf(why, why_size, "option file %s:%u: a line longer than %u bytes", path, line,
                                 OPTION_LINE_MAX - 1);
                        return -EPERM;
                }
                while (q < (end ? end : text + len) && isspace((unsigned char) *q))
                        q++;
                if (q < text + len && *q == '!') {
                        snprintf(why, why_size,
                                 "option file %s:%u: !include and !includedir are not allowed (put the options in "
                                 "the file itself)",
                                 path, line);
                        return -EPERM;
                }
                if (!end)
                        break;
                p = end + 1;
        }
        return TAKE_FD(fd);
}

int sql_check_option_file(const char *path, char *why, size_t why_size) {
        assert(path);
        assert(why);
        int fd = sql_open_option_file(path, why, why_size);
        if (fd < 0)
                return fd;
        close(fd);
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
        case 1046: /* ER_NO_DB_ERROR: MySQL's answer to a function it does not know, looked for as a
                    * stored one in the default database (memgov's statements name their tables
                    * with their databases) */
        case 1146: /* ER_NO_SUCH_TABLE */
                return -ENOENT;
        case 1094: /* ER_NO_SUCH_THREAD */
                return -ESRCH;
        case 1040: /* ER_CON_COUNT_ERROR: "Too many connections" */
                return -EUSERS;
        default:
                return -EIO;
        }
}

static unsigned seconds(usec_t t) {
        return (unsigned) MAX(t / USEC_PER_SEC, (usec_t) 1);
}

/* The authentication plugins a governor's account may use. Never mysql_clear_password or dialog,
 * which hand the password over as it is. caching_sha2_password, for MySQL 8's accounts, sends it
 * in clear over a unix socket, which the peer check has tied to the server by then, and over TCP
 * encrypted with a public key the listener itself hands out: not over TCP, where nothing checks
 * who listens. */
#define SQL_AUTH_PLUGINS_SOCKET "mysql_native_password,client_ed25519,caching_sha2_password"
#define SQL_AUTH_PLUGINS_TCP "mysql_native_password,client_ed25519"


static int connect_new(const Policy *p, pid_t server_pid, SqlConn *ret, char *why, size_t why_size) {
        _cleanup_close_ int sock_fd = -1, opt_fd = -1;
        char sock[PATH_MAX], fd_path[64] = "", opt_path[64] = "";
        const char *host = NULL;
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
                        sock_fd = sql_find_socket(server_pid, sock, sizeof(sock), why, why_size);
                        if (sock_fd < 0)
                                return sock_fd;
                        snprintf(ret->endpoint, sizeof(ret->endpoint), "/proc/%d/root%s", (int) server_pid, sock);
                } else {
                        struct stat st;
                        snprintf(ret->endpoint, sizeof(ret->endpoint), "%s", p->sql_socket);
                        sock_fd = open(p->sql_socket, O_PATH | O_CLOEXEC);
                        if (sock_fd < 0 || fstat(sock_fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
                                r = sock_fd < 0 ? negative_errno() : -ENOTSOCK;
                                snprintf(why, why_size, "cannot connect to %s: %s", ret->endpoint, strerror(-r));
                                return r == -ENOENT ? -ECONNREFUSED : r;
                        }
                }
                /* Short whatever the socket's path, and reaching the file opened above only. */
                snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", sock_fd);
                /* With a server process known, whoever listens must be it, even behind a socket
                 * path given in the policy; without one ([sql] socket alone), the policy's path
                 * is trusted as it is. */
                if (server_pid > 0 && (r = probe_peer(fd_path, server_pid, ret->endpoint, p->sql_connect_timeout, why, why_size)) < 0)
                        return r;
        }
        if (p->sql_option_file[0]) {
                opt_fd = sql_open_option_file(p->sql_option_file, why, why_size);
                if (opt_fd < 0)
                        return opt_fd;
                /* The library reads the descriptor checked, not the path again. */
                snprintf(opt_path, sizeof(opt_path), "/proc/self/fd/%d", opt_fd);
        }

        /* A server at max_connections keeps one connection more for an account with SUPER (or
         * CONNECTION ADMIN): memgov's. The probe above takes that very slot until the server's
         * thread for it has seen it close, a moment later: a connection right after it is
         * refused with 1040 "Too many connections". Tried again a few times, 10 ms to 80 ms apart.
         * Measured: 1040 right after the probe, MariaDB 10.11 at its max_connections. */
        const char *user = p->sql_option_file[0] ? NULL : p->sql_user;
        MYSQL *m = NULL;
        for (unsigned attempt = 0;; attempt++) {
                m = mysql_init(NULL);
                if (!m) {
                        snprintf(why, why_size, "out of memory");
                        return -ENOMEM;
                }
                unsigned ct = seconds(p->sql_connect_timeout), qt = seconds(p->sql_query_timeout);
                mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
                mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &qt);
                mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &qt);
                if (opt_path[0]) {
                        mysql_optionsv(m, MYSQL_READ_DEFAULT_FILE, opt_path);
                        mysql_optionsv(m, MYSQL_READ_DEFAULT_GROUP, "client");
                }
                mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
                /* "localhost" would mean the library's default socket, unchecked: a host is TCP. */
                unsigned protocol = MYSQL_PROTOCOL_TCP;
                if (host)
                        mysql_optionsv(m, MYSQL_OPT_PROTOCOL, &protocol);
                if (mysql_optionsv(m, MARIADB_OPT_RESTRICTED_AUTH, host ? SQL_AUTH_PLUGINS_TCP : SQL_AUTH_PLUGINS_SOCKET) != 0) {
                        snprintf(why, why_size, "the client library cannot restrict its authentication plugins");
                        mysql_close(m);
                        return -EOPNOTSUPP;
                }
                if (mysql_real_connect(m, host, user, NULL, NULL, host ? p->sql_port : 0, fd_path[0] ? fd_path : NULL, 0))
                        break;
                unsigned err = mysql_errno(m);
                if (err == 1040 /* ER_CON_COUNT_ERROR */ && attempt < 4) {
                        mysql_close(m);
                        struct timespec ts = { .tv_nsec = (long) (10 * USEC_PER_MSEC << attempt) * 1000 };
                        nanosleep(&ts, NULL);
                        continue;
                }
                r = classify(err);
                snprintf(why, why_size, "cannot connect to %s: %s", ret->endpoint, mysql_error(m));
                mysql_close(m);
                return r;
        }
        /* Once more on the library's own connection: the same socket, the same listener. */
        if (fd_path[0] && server_pid > 0 &&
            (r = sql_check_peer((int) mysql_get_socket(m), server_pid, ret->endpoint, why, why_size)) < 0) {
                mysql_close(m);
                return r;
        }
        ret->mysql = m;
        ret->own_id = mysql_thread_id(m);
        snprintf(ret->version, sizeof(ret->version), "%s", mysql_get_server_info(m));
        ret->mariadb = strstr(ret->version, "MariaDB") != NULL;
        return 0;
}

/* ---- the session a thread keeps open ---- */

/* What a kept session was opened with: it serves only a caller with the same. */
typedef struct KeptWith {
        pid_t pid;
        char socket[sizeof(((Policy *) 0)->sql_socket)];
        char host[sizeof(((Policy *) 0)->sql_host)];
        unsigned port;
        char user[sizeof(((Policy *) 0)->sql_user)];
        char option_file[sizeof(((Policy *) 0)->sql_option_file)];
        usec_t connect_timeout, query_timeout;
} KeptWith;

static _Thread_local struct {
        bool on;      /* this thread keeps a session */
        bool in_use;  /* handed out by sql_connect, not given back yet */
        SqlConn conn; /* conn.mysql == NULL: none open */
        KeptWith with;
        usec_t last_used;
        bool announced; /* sql_keep_warm told of this session (*opened), whoever opened it */
        /* A statement's reply did not come within sql.query-timeout: the session stays, and the
         * reply is read (and dropped) before its next statement. */
        bool awaiting;
        usec_t awaiting_since;
} kept;

static void kept_with(KeptWith *w, const Policy *p, pid_t pid) {
        *w = (KeptWith) { .pid = pid, .port = p->sql_port, .connect_timeout = p->sql_connect_timeout,
                          .query_timeout = p->sql_query_timeout };
        snprintf(w->socket, sizeof(w->socket), "%s", p->sql_socket);
        snprintf(w->host, sizeof(w->host), "%s", p->sql_host);
        snprintf(w->user, sizeof(w->user), "%s", p->sql_user);
        snprintf(w->option_file, sizeof(w->option_file), "%s", p->sql_option_file);
}

static bool kept_matches(const Policy *p, pid_t pid) {
        KeptWith w;
        kept_with(&w, p, pid);
        return kept.conn.mysql && w.pid == kept.with.pid && w.port == kept.with.port &&
               w.connect_timeout == kept.with.connect_timeout && w.query_timeout == kept.with.query_timeout &&
               streq(w.socket, kept.with.socket) && streq(w.host, kept.with.host) && streq(w.user, kept.with.user) &&
               streq(w.option_file, kept.with.option_file);
}

static void kept_close(void) {
        if (kept.conn.mysql)
                mysql_close(kept.conn.mysql);
        kept.conn = (SqlConn) {};
        kept.in_use = kept.awaiting = false;
}

/* Waits up to timeout for something to read on the connection's socket (a reply, or the end):
 * 1, 0 when none came, or a negative errno. */
static int reply_wait(MYSQL *m, usec_t timeout) {
        struct pollfd pfd = { .fd = (int) mysql_get_socket(m), .events = POLLIN | POLLRDHUP };
        if (pfd.fd < 0)
                return -ENOTCONN;
        usec_t deadline = now_clock(CLOCK_MONOTONIC) + timeout;
        for (;;) {
                usec_t now = now_clock(CLOCK_MONOTONIC);
                int ms = now >= deadline ? 0 : (int) MIN((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (usec_t) INT_MAX);
                int r = poll(&pfd, 1, ms);
                if (r >= 0)
                        return r > 0;
                if (errno != EINTR)
                        return negative_errno();
        }
}

/* The reply to the statement that had none within sql.query-timeout, read and dropped, every
 * result of it. A server's error is a reply like any other; a connection's error (2000-2999)
 * ends the session. */
static int kept_drain(void) {
        MYSQL *m = kept.conn.mysql;
        if (mysql_read_query_result(m) != 0)
                return mysql_errno(m) >= 2000 && mysql_errno(m) < 3000 ? -ECONNRESET : 0;
        do {
                MYSQL_RES *res = mysql_store_result(m);
                if (res)
                        mysql_free_result(res);
        } while (mysql_next_result(m) == 0);
        return 0;
}

/* Nothing to read on the kept session, no hang-up, no error: the server has not closed it (an
 * idle session is sent nothing; a server that ends it closes the socket, after an error packet
 * or not). A session the library gave up on (a timeout) has no socket. */
static bool kept_silent(void) {
        return reply_wait(kept.conn.mysql, 0) == 0;
}

/* A reply awaited (kept.awaiting): waits for it up to `wait`; read and dropped when it came
 * (the session answered), the session closed when the connection failed. -ETIMEDOUT, with why,
 * while it still has not come. */
static int kept_settle(usec_t wait, char *why, size_t why_size) {
        if (!kept.awaiting)
                return 0;
        int w = reply_wait(kept.conn.mysql, wait);
        if (w == 0) {
                char t[FORMAT_TIMESPAN_MAX];
                snprintf(why, why_size, "%s: the session kept for the actions has had no reply to its last statement "
                         "for %s (the server answers nothing within sql.query-timeout); kept, its reply read when "
                         "it comes", kept.conn.endpoint,
                         format_timespan(t, now_clock(CLOCK_MONOTONIC) - kept.awaiting_since));
                return -ETIMEDOUT;
        }
        if (w < 0 || kept_drain() < 0)
                kept_close();
        else {
                kept.awaiting = false;
                kept.last_used = now_clock(CLOCK_MONOTONIC); /* it answered */
        }
        return 0;
}

bool sql_keep_awaiting(void) {
        return kept.conn.mysql && kept.awaiting;
}

void sql_keep_begin(void) {
        kept.on = true;
}

void sql_keep_end(void) {
        kept_close();
        kept.on = false;
}

int sql_connect(const Policy *p, pid_t server_pid, SqlConn *ret, char *why, size_t why_size) {
        assert(p);
        assert(ret);
        assert(why);
        bool keep = kept.on && p->sql_keep_open && server_pid > 0;

        /* The last statement's reply not in yet: waited for, as long as a statement's. A new
         * connection to a server that has not answered is no better (its handshake waits in the
         * same queue), and the session kept is the one already in. */
        if (keep && !kept.in_use && kept.conn.mysql && kept_matches(p, server_pid) &&
            kept_settle(p->sql_query_timeout, why, why_size) < 0)
                return -EBUSY;
        if (keep && !kept.in_use && kept.conn.mysql) {
                /* A session that no longer answers (the server closed it, or is gone) is opened
                 * again; one for another server or other settings is closed. One that answered
                 * within SQL_KEEP_PING, and that the server has not closed since (its socket
                 * still silent), goes without a ping: on a server swamped by a storm each round
                 * trip waits its turn among the clients' threads, and the action's statements
                 * are what is urgent. Measured: MySQL 9.7 in a storm, 2 to over 10 s a
                 * statement; a ping over sql.query-timeout lost the session, and the handshake
                 * of the next was not answered within sql.connect-timeout. */
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (kept_matches(p, server_pid) &&
                    ((now - kept.last_used < SQL_KEEP_PING && kept_silent()) || mysql_ping(kept.conn.mysql) == 0)) {
                        kept.in_use = true;
                        kept.last_used = now;
                        *ret = kept.conn;
                        return 0;
                }
                kept_close();
        }
        int r = connect_new(p, server_pid, ret, why, why_size);
        if (r < 0 || !keep || kept.in_use)
                return r;
        ret->kept = true;
        kept.conn = *ret;
        kept.announced = false;
        kept_with(&kept.with, p, server_pid);
        kept.in_use = true;
        kept.last_used = now_clock(CLOCK_MONOTONIC);
        return 0;
}

unsigned sql_server_version(const SqlConn *c) {
        unsigned major = 0, minor = 0, patch = 0;
        if (sscanf(c->version, "%u.%u.%u", &major, &minor, &patch) < 2 || minor > 99 || patch > 99)
                return 0;
        return major * 10000 + minor * 100 + patch;
}

void sql_close(SqlConn *c) {
        assert(c);
        if (c->kept && c->mysql == kept.conn.mysql) {
                kept.in_use = false;
                if (c->broken)
                        kept_close();
        } else if (c->mysql)
                mysql_close(c->mysql);
        c->mysql = NULL;
}

SqlKeepState sql_keep_warm(const Policy *p, pid_t server_pid, bool *opened, SqlConn *ret_conn, int *ret_error,
                           char *why, size_t why_size) {
        assert(p);
        assert(opened);
        assert(ret_error);
        assert(why);
        *opened = false;
        *ret_error = 0;
        if (!kept.on || !p->sql_keep_open || !policy_uses_sql(p) || server_pid <= 0) {
                if (!kept.in_use)
                        kept_close();
                return SQL_KEEP_OFF;
        }
        if (kept.in_use)
                return SQL_KEEP_OPEN;
        /* Its reply read if it came; not waited for here, nor pinged: open, and busy. */
        if (kept.conn.mysql && kept_matches(p, server_pid) && kept_settle(0, why, why_size) < 0)
                return SQL_KEEP_OPEN;
        usec_t now = now_clock(CLOCK_MONOTONIC);
        if (!kept.conn.mysql || !kept_matches(p, server_pid) || now - kept.last_used >= SQL_KEEP_PING) {
                SqlConn c;
                int r = sql_connect(p, server_pid, &c, why, why_size); /* pings it, or opens a new one */
                if (r < 0) {
                        *ret_error = r;
                        return SQL_KEEP_FAILED;
                }
                sql_close(&c);
        }
        /* New since the last call: opened here, or by an action that needed it first. */
        if (kept.conn.mysql && !kept.announced) {
                kept.announced = true;
                *opened = true;
                if (ret_conn) {
                        *ret_conn = kept.conn;
                        ret_conn->mysql = NULL; /* the figures only: the handle stays the keeper's */
                }
        }
        return SQL_KEEP_OPEN;
}

int sql_run(SqlConn *c, const char *statement, sql_row_fn row, void *userdata, char *why, size_t why_size) {
        assert(c);
        assert(statement);
        assert(why);
        MYSQL *m = c->mysql;
        int r = 0;

        /* On the kept session, a reply that does not come within sql.query-timeout leaves the
         * session open (the library would close it): on a server swamped by a storm the next
         * connection's handshake is not answered either, and the actions that follow would
         * have no way in. Its reply is read before the next statement (sql_connect). */
        bool on_kept = c->kept && m && m == kept.conn.mysql;
        if (on_kept && kept.awaiting) {
                /* A statement of this action had no reply: the next would read that reply as
                 * its own. The session is handed out again once it came (sql_connect). */
                snprintf(why, why_size, "%s: the session still waits for the reply to an earlier statement",
                         c->endpoint);
                return -ETIMEDOUT;
        }
        if (on_kept) {
                int w;
                if (mysql_send_query(m, statement, strlen(statement)) != 0)
                        w = -EIO;
                else if ((w = reply_wait(m, kept.with.query_timeout)) == 0) {
                        char t[FORMAT_TIMESPAN_MAX];
                        kept.awaiting = true;
                        kept.awaiting_since = now_clock(CLOCK_MONOTONIC);
                        snprintf(why, why_size, "%s: no reply within sql.query-timeout %s (the session is kept, its "
                                 "reply read before its next statement)", c->endpoint,
                                 format_timespan(t, kept.with.query_timeout));
                        return -ETIMEDOUT;
                }
                if (w < 0 || mysql_read_query_result(m) != 0) {
                        r = classify(mysql_errno(m));
                        c->broken = c->broken || r == -ECONNRESET || r == -ECONNREFUSED || w < 0;
                        snprintf(why, why_size, "%s: %s", c->endpoint, w < 0 && !mysql_errno(m) ? strerror(-w)
                                                                                                 : mysql_error(m));
                        return r;
                }
        } else if (mysql_query(m, statement) != 0) {
                r = classify(mysql_errno(m));
                c->broken = c->broken || r == -ECONNRESET || r == -ECONNREFUSED;
                snprintf(why, why_size, "%s: %s", c->endpoint, mysql_error(m));
                return r;
        }
        MYSQL_RES *res = mysql_store_result(m);
        if (!res) {
                if (mysql_field_count(m) != 0) {
                        r = classify(mysql_errno(m));
                        c->broken = c->broken || r == -ECONNRESET || r == -ECONNREFUSED;
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
