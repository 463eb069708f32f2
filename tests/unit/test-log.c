/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <errno.h>
#include <sys/uio.h>
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

/* What each _errno level prints before the message on stderr. */
static const struct {
        int level;
        const char *prefix;
} levels[] = {
        { LOG_ERR, "error: " }, { LOG_WARNING, "warning: " }, { LOG_NOTICE, "" }, { LOG_INFO, "" }, { LOG_DEBUG, "" },
};
static unsigned level_i;

/* Each level's own macro, with an error other than errno's, and errno checked left as it was. */
static void errno_at_level(int *ret) {
        errno = EPERM;
        switch (levels[level_i].level) {
        case LOG_ERR:
                *ret = log_error_errno(-ENOENT, "pidfd_open: %m");
                break;
        case LOG_WARNING:
                *ret = log_warning_errno(-ENOENT, "pidfd_open: %m");
                break;
        case LOG_NOTICE:
                *ret = log_notice_errno(-ENOENT, "pidfd_open: %m");
                break;
        case LOG_INFO:
                *ret = log_info_errno(-ENOENT, "pidfd_open: %m");
                break;
        default:
                *ret = log_debug_errno(-ENOENT, "pidfd_open: %m");
                break;
        }
        if (errno != EPERM)
                *ret = 99;
}

/* A positive errno given comes back negative all the same. */
static void positive_errno(int *ret) {
        *ret = log_warning_errno(EACCES, "open: %m");
}

static void notice_without_error(int *ret) {
        errno = EACCES;
        log_notice("cannot look: %m");
        /* The caller's errno is left as it was. */
        *ret = errno;
}

static void test_errno_kept_at_every_level(void **state) {
        char out[512], expected[128];
        int r;

        log_setup(LOG_TARGET_STDERR);
        for (level_i = 0; level_i < ELEMENTSOF(levels); level_i++) {
                /* Shown: the error comes back negative, %m is its text, not errno's. */
                log_set_max_level(LOG_DEBUG);
                capture(errno_at_level, &r, out, sizeof(out));
                assert_int_equal(r, -ENOENT);
                snprintf(expected, sizeof(expected), "memgov: %spidfd_open: No such file or directory\n",
                         levels[level_i].prefix);
                assert_string_equal(out, expected);
                /* Below the max level nothing is printed, and the error still comes back. */
                log_set_max_level(levels[level_i].level - 1);
                capture(errno_at_level, &r, out, sizeof(out));
                assert_int_equal(r, -ENOENT);
                assert_string_equal(out, "");
        }

        log_set_max_level(LOG_INFO);
        capture(positive_errno, &r, out, sizeof(out));
        assert_int_equal(r, -EACCES);
        assert_string_equal(out, "memgov: warning: open: Permission denied\n");

        /* Without an error, %m is the caller's errno, never "Success". */
        capture(notice_without_error, &r, out, sizeof(out));
        assert_int_equal(r, EACCES);
        assert_string_equal(out, "memgov: cannot look: Permission denied\n");
}

/* The plain variants have no value: `return log_debug(...)` in a function returning an error does
 * not compile, the _errno ones are the way to return one. */
static void test_plain_variants_return_nothing(void **state) {
        _Static_assert(__builtin_types_compatible_p(__typeof__(log_error("x")), void), "log_error returns a value");
        _Static_assert(__builtin_types_compatible_p(__typeof__(log_warning("x")), void), "log_warning returns a value");
        _Static_assert(__builtin_types_compatible_p(__typeof__(log_notice("x")), void), "log_notice returns a value");
        _Static_assert(__builtin_types_compatible_p(__typeof__(log_info("x")), void), "log_info returns a value");
        _Static_assert(__builtin_types_compatible_p(__typeof__(log_debug("x")), void), "log_debug returns a value");
        _Static_assert(__builtin_types_compatible_p(__typeof__(log_debug_errno(-EIO, "x")), int),
                       "log_debug_errno returns no int");
}

static void forged_line(int *ret) {
        *ret = 0;
        log_notice("reset: #7 app@%s ended", "x\nmemgov: error: forged\r");
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

/* Each class of control the server's side may put in a name or an error, in a message. */
static void controls_line(int *ret) {
        *ret = 0;
        log_notice("session of %s", "a\x1b[2Jb\x7f\xc2\x9b""31mc\x9b\xc3\xa9");
}

static void test_controls_escaped_on_stderr(void **state) {
        char out[512];
        int r;
        log_setup(LOG_TARGET_STDERR);
        capture(controls_line, &r, out, sizeof(out));
        assert_string_equal(out, "memgov: session of a\\x1b[2Jb\\x7f\\xc2\\x9b31mc\\x9b\xc3\xa9\n");
}

/* The journal: sd_journal_sendv of this test, in place of libsystemd's, records what memgov sends. */
static char journal_message[512], journal_field[256];
int sd_journal_sendv(const struct iovec *iov, int n);
int sd_journal_sendv(const struct iovec *iov, int n) {
        for (int i = 0; i < n; i++) {
                const char *b = iov[i].iov_base;
                if (iov[i].iov_len > 8 && strncmp(b, "MESSAGE=", 8) == 0)
                        snprintf(journal_message, sizeof(journal_message), "%.*s", (int) iov[i].iov_len, b);
                else if (iov[i].iov_len > 7 && strncmp(b, "MEMGOV_", 7) == 0)
                        snprintf(journal_field, sizeof(journal_field), "%.*s", (int) iov[i].iov_len, b);
        }
        return 0;
}

static void test_controls_escaped_in_the_journal(void **state) {
        log_setup(LOG_TARGET_JOURNAL);
        const char *fields[] = { "MEMGOV_TARGET=/db\x1b]0;owned\x07", NULL };
        log_struct(LOG_NOTICE, NULL, fields, "session of %s", "a\x1b[2Jb\xc2\x9b""31m\nc");
        assert_string_equal(journal_message, "MESSAGE=session of a\\x1b[2Jb\\xc2\\x9b31m\\x0ac");
        assert_string_equal(journal_field, "MEMGOV_TARGET=/db\\x1b]0;owned\\x07");
        log_setup(LOG_TARGET_STDERR);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errno_kept_at_every_level),
                cmocka_unit_test(test_plain_variants_return_nothing),
                cmocka_unit_test(test_one_line_per_message),
                cmocka_unit_test(test_controls_escaped_on_stderr),
                cmocka_unit_test(test_controls_escaped_in_the_journal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
