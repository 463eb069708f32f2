/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <errno.h>
#include <unistd.h>

#include "memgov/log.h"

/* What one call printed on stderr. */
static void capture(void (*call)(int *ret), int *ret, char *out, size_t size) {
        int p[2], saved = dup(STDERR_FILENO);
        assert_int_equal(pipe(p), 0);
        fflush(stderr);
        dup2(p[1], STDERR_FILENO);
        call(ret);
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        close(p[1]);
        ssize_t n = read(p[0], out, size - 1);
        close(p[0]);
        out[n > 0 ? n : 0] = '\0';
}

static void debug_with_error(int *ret) {
        errno = EPERM;
        *ret = log_debug_errno(-ENOENT, "pidfd_open: %m");
}

static void notice_without_error(int *ret) {
        errno = EACCES;
        *ret = log_notice("cannot look: %m");
        /* The caller's errno is left as it was. */
        if (errno != EACCES)
                *ret = 99;
}

static void test_errno_kept_at_every_level(void **state) {
        char out[512];
        int r;

        log_setup(LOG_TARGET_STDERR);
        log_set_max_level(LOG_DEBUG);
        /* A debug message with an error returns it and prints it. */
        capture(debug_with_error, &r, out, sizeof(out));
        assert_int_equal(r, -ENOENT);
        assert_string_equal(out, "memgov: pidfd_open: No such file or directory\n");
        /* Without an error, %m is the caller's errno, never "Success". */
        capture(notice_without_error, &r, out, sizeof(out));
        assert_int_equal(r, 0);
        assert_string_equal(out, "memgov: cannot look: Permission denied\n");
        /* Below the max level nothing is printed, and the error still comes back. */
        log_set_max_level(LOG_INFO);
        capture(debug_with_error, &r, out, sizeof(out));
        assert_int_equal(r, -ENOENT);
        assert_string_equal(out, "");
}

static void forged_line(int *ret) {
        *ret = log_notice("reset: #7 app@%s ended", "x\nmemgov: error: forged\r");
}

static void test_one_line_per_message(void **state) {
        char out[512];
        int r;

        log_setup(LOG_TARGET_STDERR);
        log_set_max_level(LOG_INFO);
        /* A host name from the processlist cannot start a line of its own. */
        capture(forged_line, &r, out, sizeof(out));
        assert_string_equal(out, "memgov: reset: #7 app@x\\x0amemgov: error: forged\\x0d ended\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errno_kept_at_every_level),
                cmocka_unit_test(test_one_line_per_message),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
