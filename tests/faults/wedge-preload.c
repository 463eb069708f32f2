/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An LD_PRELOAD interposer that wedges memgov's action thread, as a memory.high write stuck in
 * the kernel's reclaim would: openat() of a file named MEMGOV_WEDGE_OPEN for writing does not
 * return while the file MEMGOV_WEDGE_WHEN exists (without it: never, from the start); with
 * MEMGOV_WEDGE_ONCE set, only the first such open does, the others go through. Reads of it (the
 * sampler's) go through. For tests/integration/watchdog-probe.py.
 *
 *   MEMGOV_WEDGE_OPEN=memory.high MEMGOV_WEDGE_WHEN=/tmp/dir/wedge */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int wedge(const char *path, int flags) {
        static int wedged_once;
        const char *name = getenv("MEMGOV_WEDGE_OPEN"), *when = getenv("MEMGOV_WEDGE_WHEN");
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (!name || (flags & O_ACCMODE) == O_RDONLY || strcmp(base, name) != 0 || (when && access(when, F_OK) < 0))
                return 0;
        if (getenv("MEMGOV_WEDGE_ONCE") && __atomic_exchange_n(&wedged_once, 1, __ATOMIC_SEQ_CST))
                return 0;
        while (!when || access(when, F_OK) == 0) {
                struct timespec ts = { .tv_nsec = 50 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        return 0;
}

static int real_open(int dirfd, const char *path, int flags, va_list ap) {
        typedef int (*openat_t)(int, const char *, int, ...);
        static openat_t real;
        mode_t mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t) va_arg(ap, int) : 0;
        if (!real)
                real = (openat_t) dlsym(RTLD_NEXT, "openat");
        wedge(path, flags);
        return real(dirfd, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        int fd = real_open(dirfd, path, flags, ap);
        va_end(ap);
        return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) {
        va_list ap;
        va_start(ap, flags);
        int fd = real_open(dirfd, path, flags, ap);
        va_end(ap);
        return fd;
}
