/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* cmocka needs these before its header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

/* Reads tests/data/<rel> (the directory comes from MEMGOV_TEST_DATA, set by meson): with stdio,
 * not the shell's readers, so that the tests of the pure core link the core alone. */
static inline char *fixture(const char *rel, size_t *ret_len) {
        const char *dir = getenv("MEMGOV_TEST_DATA");
        char path[4096];

        assert_non_null(dir);
        snprintf(path, sizeof(path), "%s/%s", dir, rel);
        FILE *f = fopen(path, "re");
        if (!f)
                fail_msg("cannot read fixture %s: %m", path);
        size_t cap = 1 << 16, n = 0;
        char *buf = malloc(cap + 1);
        assert_non_null(buf);
        for (size_t k; (k = fread(buf + n, 1, cap - n, f)) > 0;) {
                n += k;
                if (n == cap) {
                        assert_true(cap < (1 << 24));
                        cap *= 2;
                        buf = realloc(buf, cap + 1);
                        assert_non_null(buf);
                }
        }
        assert_false(ferror(f));
        fclose(f);
        buf[n] = '\0';
        if (ret_len)
                *ret_len = n;
        return buf;
}

/* Writes dir/name with text and mode (replacing any file there); its path in path. */
static inline void make_file(const char *dir, const char *name, const char *text, mode_t mode, char *path, size_t size) {
        snprintf(path, size, "%s/%s", dir, name);
        (void) unlink(path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        assert_int_equal(fchmod(fd, mode), 0);
        close(fd);
}

#define assert_string_contains(haystack, needle)                                                     \
        do {                                                                                         \
                const char *_h = (haystack), *_n = (needle);                                         \
                if (!strstr(_h, _n))                                                                 \
                        fail_msg("'%s' does not contain '%s'", _h, _n);                              \
        } while (0)
