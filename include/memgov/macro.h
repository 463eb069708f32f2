/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Microseconds: every duration and every point in time in memgov. */
typedef uint64_t usec_t;
#define USEC_INFINITY ((usec_t) UINT64_MAX)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define USEC_PER_MINUTE (60ULL * USEC_PER_SEC)
#define USEC_PER_HOUR (60ULL * USEC_PER_MINUTE)
#define USEC_PER_DAY (24ULL * USEC_PER_HOUR)
#define USEC_PER_WEEK (7ULL * USEC_PER_DAY)

/* Sizes in bytes; "no limit" (the kernel's "max") is UINT64_MAX. */
#define SIZE_UNLIMITED UINT64_MAX
#define SIZE_UNKNOWN UINT64_MAX

/* Fractions are basis points: 10000 = 100 %. Integers keep replay output identical everywhere. */
#define BP_ONE 10000U

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
/* a - b, or 0 when b is larger */
#define SUB_CLAMP(a, b) ((a) > (b) ? (a) - (b) : 0)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) (MIN(MAX((x), (lo)), (hi)))
#define STRLEN(s) (sizeof(s) - 1)

#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _const_ __attribute__((const))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _noreturn_ __attribute__((noreturn))
#define _fallthrough_ __attribute__((fallthrough))

/* Take ownership of a pointer out of a _cleanup_ variable. */
#define TAKE_PTR(p)                         \
        ({                                  \
                __typeof__(p) _taken_ = (p); \
                (p) = NULL;                 \
                _taken_;                    \
        })

#define TAKE_FD(fd)                 \
        ({                          \
                int _taken_ = (fd); \
                (fd) = -1;          \
                _taken_;            \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                (void) close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)   \
        static inline void func##p(type *p) {     \
                if (*p)                           \
                        func(*p);                 \
        }

/* errno as a negative return, never 0 even when errno was not set. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

static inline bool streq_ptr(const char *a, const char *b);
#include <string.h>
#define streq(a, b) (strcmp((a), (b)) == 0)
static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return streq(a, b);
}
static inline const char *strempty(const char *s) {
        return s ? s : "";
}
static inline bool isempty(const char *s) {
        return !s || !*s;
}
