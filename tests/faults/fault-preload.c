/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An LD_PRELOAD interposer that makes chosen calls of memgov fail, for the daemon-level fault
 * tests (tests/faults/daemon-faults.py). No change to memgov: it only replaces, for the process
 * it is loaded into, the libc, libsystemd and libmariadb functions memgov calls through its
 * dynamic symbol table.
 *
 *   MEMGOV_FAULT="CLASS:PATTERN:WHICH:ERRNO[,CLASS:PATTERN:WHICH:ERRNO...]"
 *   MEMGOV_FAULT_LOG=FILE   one line per failure injected, and at exit how many calls matched
 *                           each spec (appended)
 *
 * CLASS and what PATTERN is matched against (a substring; "*" matches everything):
 *   open      openat/open: the path as memgov gives it ("memory.current", "4242/stat")
 *   read      the first read() after the matching open: that file cannot be read this time
 *   write     the first write() after the matching open (memory.high, memory.max)
 *   connect   connect(): the unix socket's path, or "inet" for a TCP connection (SQL)
 *   sql       mysql_real_connect ("connect") and mysql_query (the statement)
 *   dbus      sd_bus_call (the method), sd_bus_call_method, sd_bus_get_property_* (the member),
 *             sd_bus_open_system / sd_bus_default_system ("open")
 *   ptrace    ptrace(): the request ("SEIZE", "INTERRUPT", "GETREGS", ...). "*" leaves out
 *             DETACH: a real detach fails only for a thread that is gone, and a fake failure
 *             would leave the thread stopped until memgov exits.
 *   vm_readv, vm_writev   process_vm_readv / process_vm_writev
 * WHICH: the matching calls (1-based) that fail: "3", "2-4", or "5-" (every one from the 5th).
 * ERRNO: EIO, ENOENT, EPERM, EAGAIN, ETIMEDOUT, EFAULT, ESRCH, EACCES, ECONNREFUSED, ... */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mysql.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#define MAX_SPECS 16
#define MAX_FDS 4096

typedef enum Class {
        C_OPEN,
        C_READ,
        C_WRITE,
        C_CONNECT,
        C_SQL,
        C_DBUS,
        C_PTRACE,
        C_VM_READV,
        C_VM_WRITEV,
        _C_MAX,
} Class;

static const char *const class_names[_C_MAX] = {
        [C_OPEN] = "open",     [C_READ] = "read",     [C_WRITE] = "write",         [C_CONNECT] = "connect",
        [C_SQL] = "sql",       [C_DBUS] = "dbus",     [C_PTRACE] = "ptrace",       [C_VM_READV] = "vm_readv",
        [C_VM_WRITEV] = "vm_writev",
};

typedef struct Spec {
        Class cls;
        char pattern[128];
        unsigned from, to; /* calls from..to fail; to = 0: no end */
        int error;
        unsigned calls;    /* matching calls so far (atomic) */
} Spec;

static Spec specs[MAX_SPECS];
static unsigned n_specs;
static int log_fd = -1;
/* fd -> errno for its next read (low 16 bits) or write (high 16 bits) */
static int fd_fail[MAX_FDS];

static const struct {
        const char *name;
        int value;
} errno_names[] = {
        { "EIO", EIO },         { "ENOENT", ENOENT },   { "EPERM", EPERM },       { "EAGAIN", EAGAIN },
        { "ETIMEDOUT", ETIMEDOUT }, { "EFAULT", EFAULT }, { "ESRCH", ESRCH },     { "EACCES", EACCES },
        { "ECONNREFUSED", ECONNREFUSED }, { "EROFS", EROFS }, { "ENOSPC", ENOSPC }, { "EBUSY", EBUSY },
        { "EINTR", EINTR },     { "ENODEV", ENODEV },   { "ENOMEM", ENOMEM },
};

static const char *errno_name(int e) {
        for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
                if (errno_names[i].value == e)
                        return errno_names[i].name;
        return "E?";
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
        char buf[512];
        va_list ap;
        if (log_fd < 0)
                return;
        va_start(ap, fmt);
        int n = vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (n > 0)
                (void) !syscall(SYS_write, log_fd, buf, (size_t) (n < (int) sizeof(buf) ? n : (int) sizeof(buf) - 1));
}

__attribute__((constructor)) static void setup(void) {
        const char *env = getenv("MEMGOV_FAULT"), *logp = getenv("MEMGOV_FAULT_LOG");
        char text[2048];

        if (logp)
                log_fd = (int) syscall(SYS_openat, AT_FDCWD, logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (!env)
                return;
        snprintf(text, sizeof(text), "%s", env);
        char *save = NULL;
        for (char *tok = strtok_r(text, ",", &save); tok && n_specs < MAX_SPECS; tok = strtok_r(NULL, ",", &save)) {
                char *f[4], *s2 = NULL;
                unsigned n = 0;
                while (*tok == ' ')
                        tok++;
                for (char *p = strtok_r(tok, ":", &s2); p && n < 4; p = strtok_r(NULL, ":", &s2))
                        f[n++] = p;
                Spec *s = &specs[n_specs];
                bool ok = n == 4;
                for (Class c = 0; ok && c < _C_MAX; c++)
                        if (strcmp(f[0], class_names[c]) == 0) {
                                s->cls = c;
                                break;
                        } else if (c == _C_MAX - 1)
                                ok = false;
                if (!ok) {
                        say("fault-preload: cannot parse \"%s\"\n", tok);
                        continue;
                }
                snprintf(s->pattern, sizeof(s->pattern), "%s", f[1]);
                char *dash = strchr(f[2], '-');
                s->from = (unsigned) strtoul(f[2], NULL, 10);
                s->to = !dash ? s->from : dash[1] ? (unsigned) strtoul(dash + 1, NULL, 10) : 0;
                s->error = EIO;
                for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
                        if (strcmp(f[3], errno_names[i].name) == 0)
                                s->error = errno_names[i].value;
                n_specs++;
        }
}

/* How many calls matched, so that a test can tell a fault that did not fire from one that could not. */
__attribute__((destructor)) static void finish(void) {
        for (unsigned i = 0; i < n_specs; i++)
                say("calls %s:%s %u\n", class_names[specs[i].cls], specs[i].pattern,
                    __atomic_load_n(&specs[i].calls, __ATOMIC_SEQ_CST));
}

static bool matches(const Spec *s, const char *what) {
        if (strcmp(s->pattern, "*") == 0)
                return true;
        return what && strstr(what, s->pattern);
}

/* The error to fail this call with, 0 to let it through. */
static int check(Class c, const char *what) {
        for (unsigned i = 0; i < n_specs; i++) {
                Spec *s = &specs[i];
                if (s->cls != c || !matches(s, what))
                        continue;
                unsigned n = __atomic_add_fetch(&s->calls, 1, __ATOMIC_SEQ_CST);
                if (n >= s->from && (s->to == 0 || n <= s->to)) {
                        say("fault %s:%s call %u -> %s (%s)\n", class_names[c], s->pattern, n, errno_name(s->error),
                            what ? what : "");
                        return s->error;
                }
        }
        return 0;
}

#define REAL(name, type)                                                   \
        static type real_##name;                                          \
        if (!real_##name)                                                 \
                real_##name = (type) dlsym(RTLD_NEXT, #name)

/* ---- files ---- */

static void mark(int fd, int flags, const char *path) {
        if (fd < 0 || fd >= MAX_FDS)
                return;
        int acc = flags & O_ACCMODE, v = 0, e;
        if ((acc == O_RDONLY || acc == O_RDWR) && (e = check(C_READ, path)))
                v |= e;
        if ((acc == O_WRONLY || acc == O_RDWR) && (e = check(C_WRITE, path)))
                v |= e << 16;
        __atomic_store_n(&fd_fail[fd], v, __ATOMIC_SEQ_CST);
}

static int open_common(int dirfd, const char *path, int flags, mode_t mode, bool at) {
        typedef int (*openat_t)(int, const char *, int, ...);
        REAL(openat, openat_t);
        int e = check(C_OPEN, path);
        if (e) {
                errno = e;
                return -1;
        }
        int fd = real_openat(at ? dirfd : AT_FDCWD, path, flags, mode);
        if (fd >= 0)
                mark(fd, flags, path);
        return fd;
}

static mode_t mode_arg(int flags, va_list ap) {
        return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t) va_arg(ap, int) : 0;
}

int openat(int dirfd, const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        mode_t m = mode_arg(flags, ap);
        va_end(ap);
        return open_common(dirfd, path, flags, m, true);
}

int openat64(int dirfd, const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        mode_t m = mode_arg(flags, ap);
        va_end(ap);
        return open_common(dirfd, path, flags, m, true);
}

int open(const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        mode_t m = mode_arg(flags, ap);
        va_end(ap);
        return open_common(AT_FDCWD, path, flags, m, false);
}

int open64(const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        mode_t m = mode_arg(flags, ap);
        va_end(ap);
        return open_common(AT_FDCWD, path, flags, m, false);
}

ssize_t read(int fd, void *buf, size_t n) {
        typedef ssize_t (*read_t)(int, void *, size_t);
        REAL(read, read_t);
        if (fd >= 0 && fd < MAX_FDS && (__atomic_load_n(&fd_fail[fd], __ATOMIC_SEQ_CST) & 0xffff)) {
                int v = __atomic_fetch_and(&fd_fail[fd], ~0xffff, __ATOMIC_SEQ_CST);
                if (v & 0xffff) {
                        errno = v & 0xffff;
                        return -1;
                }
        }
        return real_read(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n) {
        typedef ssize_t (*write_t)(int, const void *, size_t);
        REAL(write, write_t);
        if (fd >= 0 && fd < MAX_FDS && (__atomic_load_n(&fd_fail[fd], __ATOMIC_SEQ_CST) >> 16)) {
                int v = __atomic_fetch_and(&fd_fail[fd], 0xffff, __ATOMIC_SEQ_CST);
                if (v >> 16) {
                        errno = v >> 16;
                        return -1;
                }
        }
        return real_write(fd, buf, n);
}

int close(int fd) {
        typedef int (*close_t)(int);
        REAL(close, close_t);
        if (fd >= 0 && fd < MAX_FDS)
                __atomic_store_n(&fd_fail[fd], 0, __ATOMIC_SEQ_CST);
        return real_close(fd);
}

/* ---- sockets ---- */

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
        typedef int (*connect_t)(int, const struct sockaddr *, socklen_t);
        REAL(connect, connect_t);
        char what[sizeof(((struct sockaddr_un *) 0)->sun_path) + 1] = "inet";
        if (addr && addr->sa_family == AF_UNIX) {
                const struct sockaddr_un *u = (const struct sockaddr_un *) addr;
                snprintf(what, sizeof(what), "%s", u->sun_path[0] ? u->sun_path : "@abstract");
                /* memgov connects through a descriptor of the socket file it checked: match the
                 * file's own path. */
                char link[sizeof(what)];
                ssize_t n;
                if (strncmp(what, "/proc/self/fd/", 14) == 0 && (n = readlink(what, link, sizeof(link) - 1)) > 0) {
                        link[n] = '\0';
                        snprintf(what, sizeof(what), "%s", link);
                }
        }
        int e = check(C_CONNECT, what);
        if (e) {
                errno = e;
                return -1;
        }
        return real_connect(fd, addr, len);
}

/* ---- SQL ---- */

MYSQL *mysql_real_connect(MYSQL *m, const char *host, const char *user, const char *passwd, const char *db,
                          unsigned int port, const char *unix_socket, unsigned long flags) {
        typedef MYSQL *(*connect_t)(MYSQL *, const char *, const char *, const char *, const char *, unsigned int,
                                    const char *, unsigned long);
        REAL(mysql_real_connect, connect_t);
        if (check(C_SQL, "connect"))
                return NULL;
        return real_mysql_real_connect(m, host, user, passwd, db, port, unix_socket, flags);
}

int mysql_query(MYSQL *m, const char *q) {
        typedef int (*query_t)(MYSQL *, const char *);
        REAL(mysql_query, query_t);
        if (check(C_SQL, q))
                return 1;
        return real_mysql_query(m, q);
}

/* ---- D-Bus ---- */

static int bus_fail(int e, sd_bus_error *error) {
        if (error)
                sd_bus_error_set_errno(error, e);
        return -e;
}

int sd_bus_call(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *error, sd_bus_message **reply) {
        typedef int (*call_t)(sd_bus *, sd_bus_message *, uint64_t, sd_bus_error *, sd_bus_message **);
        REAL(sd_bus_call, call_t);
        int e = check(C_DBUS, m ? sd_bus_message_get_member(m) : NULL);
        if (e)
                return bus_fail(e, error);
        return real_sd_bus_call(bus, m, usec, error, reply);
}

int sd_bus_call_method(sd_bus *bus, const char *dest, const char *path, const char *iface, const char *member,
                       sd_bus_error *error, sd_bus_message **reply, const char *types, ...) {
        int e = check(C_DBUS, member);
        if (e)
                return bus_fail(e, error);
        va_list ap;
        va_start(ap, types);
        int r = sd_bus_call_methodv(bus, dest, path, iface, member, error, reply, types, ap);
        va_end(ap);
        return r;
}

int sd_bus_get_property_string(sd_bus *bus, const char *dest, const char *path, const char *iface,
                               const char *member, sd_bus_error *error, char **ret) {
        typedef int (*get_t)(sd_bus *, const char *, const char *, const char *, const char *, sd_bus_error *,
                             char **);
        REAL(sd_bus_get_property_string, get_t);
        int e = check(C_DBUS, member);
        if (e)
                return bus_fail(e, error);
        return real_sd_bus_get_property_string(bus, dest, path, iface, member, error, ret);
}

int sd_bus_get_property_trivial(sd_bus *bus, const char *dest, const char *path, const char *iface,
                                const char *member, sd_bus_error *error, char type, void *ret) {
        typedef int (*get_t)(sd_bus *, const char *, const char *, const char *, const char *, sd_bus_error *, char,
                             void *);
        REAL(sd_bus_get_property_trivial, get_t);
        int e = check(C_DBUS, member);
        if (e)
                return bus_fail(e, error);
        return real_sd_bus_get_property_trivial(bus, dest, path, iface, member, error, type, ret);
}

int sd_bus_open_system(sd_bus **ret) {
        typedef int (*open_t)(sd_bus **);
        REAL(sd_bus_open_system, open_t);
        int e = check(C_DBUS, "open");
        if (e)
                return -e;
        return real_sd_bus_open_system(ret);
}

int sd_bus_default_system(sd_bus **ret) {
        typedef int (*open_t)(sd_bus **);
        REAL(sd_bus_default_system, open_t);
        int e = check(C_DBUS, "open");
        if (e)
                return -e;
        return real_sd_bus_default_system(ret);
}

/* ---- ptrace and the target's memory ---- */

static const char *ptrace_name(int req) {
        switch (req) {
        case PTRACE_SEIZE:
                return "SEIZE";
        case PTRACE_INTERRUPT:
                return "INTERRUPT";
        case PTRACE_DETACH:
                return "DETACH";
        case PTRACE_GETREGS:
                return "GETREGS";
        case PTRACE_SETREGS:
                return "SETREGS";
        case PTRACE_GETREGSET:
                return "GETREGSET";
        case PTRACE_SETREGSET:
                return "SETREGSET";
        case PTRACE_PEEKDATA:
                return "PEEKDATA";
        case PTRACE_POKEDATA:
                return "POKEDATA";
        case PTRACE_CONT:
                return "CONT";
        case PTRACE_SYSCALL:
                return "SYSCALL";
        case PTRACE_SETOPTIONS:
                return "SETOPTIONS";
        case PTRACE_ATTACH:
                return "ATTACH";
        case PTRACE_LISTEN:
                return "LISTEN";
        case PTRACE_GETSIGINFO:
                return "GETSIGINFO";
        default:
                return "OTHER";
        }
}

long ptrace(enum __ptrace_request req, ...) {
        typedef long (*ptrace_t)(enum __ptrace_request, ...);
        REAL(ptrace, ptrace_t);
        va_list ap;
        va_start(ap, req);
        pid_t pid = va_arg(ap, pid_t);
        void *addr = va_arg(ap, void *);
        void *data = va_arg(ap, void *);
        va_end(ap);
        const char *name = ptrace_name((int) req);
        bool detach = req == PTRACE_DETACH;
        for (unsigned i = 0; i < n_specs; i++)
                if (specs[i].cls == C_PTRACE && detach && strcmp(specs[i].pattern, "*") == 0)
                        return real_ptrace(req, pid, addr, data); /* see above: "*" leaves DETACH alone */
        int e = check(C_PTRACE, name);
        if (e) {
                errno = e;
                return -1;
        }
        return real_ptrace(req, pid, addr, data);
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *l, unsigned long ln, const struct iovec *r, unsigned long rn,
                         unsigned long flags) {
        typedef ssize_t (*vm_t)(pid_t, const struct iovec *, unsigned long, const struct iovec *, unsigned long,
                                unsigned long);
        REAL(process_vm_readv, vm_t);
        int e = check(C_VM_READV, "readv");
        if (e) {
                errno = e;
                return -1;
        }
        return real_process_vm_readv(pid, l, ln, r, rn, flags);
}

ssize_t process_vm_writev(pid_t pid, const struct iovec *l, unsigned long ln, const struct iovec *r, unsigned long rn,
                          unsigned long flags) {
        typedef ssize_t (*vm_t)(pid_t, const struct iovec *, unsigned long, const struct iovec *, unsigned long,
                                unsigned long);
        REAL(process_vm_writev, vm_t);
        int e = check(C_VM_WRITEV, "writev");
        if (e) {
                errno = e;
                return -1;
        }
        return real_process_vm_writev(pid, l, ln, r, rn, flags);
}
