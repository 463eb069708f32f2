/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hooks run real programs: a clean environment with the decision in it, no shell, a timeout. */
#include "test-util.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/act/hooks.h"

static HookContext ctx(void) {
        return (HookContext) { .event = "reset", .reason = "working set 9G = 90% of 10G budget", .target = "mariadb.service",
                                .level = "reset", .working_set = 9, .budget = 10, .max_sessions = 4, .min_memory = 64,
                                .min_idle = 30 * USEC_PER_SEC };
}

static void test_environment(void **state) {
        char out[256], why[512];
        HookContext c = ctx();
        /* env prints its environment: exactly the clean one, the last line is the last variable. */
        assert_int_equal(hook_run("/usr/bin/env", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "MEMGOV_MIN_IDLE_S=30");
        setenv("MEMGOV_SECRET_FROM_PARENT", "x", 1);
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_SECRET_FROM_PARENT", &c, 5 * USEC_PER_SEC, false, out, sizeof(out),
                                  why, sizeof(why)),
                         -EPROTO);
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_REASON", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why,
                                  sizeof(why)),
                         0);
        assert_string_equal(out, "working set 9G = 90% of 10G budget");
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_WORKING_SET", &c, 5 * USEC_PER_SEC, false, out, sizeof(out),
                                  why, sizeof(why)),
                         0);
        assert_string_equal(out, "9");
        /* Not known: empty, never a sentinel number. */
        c.budget = SIZE_UNKNOWN;
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_BUDGET", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why,
                                  sizeof(why)),
                         0);
        assert_string_equal(out, "");
        c = ctx();
        /* Arguments are words, not shell: no expansion happens. */
        assert_int_equal(hook_run("/bin/echo \"$HOME\" $(id)", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "$HOME $(id)");
}

static void test_failures(void **state) {
        char out[256], why[512];
        HookContext c = ctx();
        assert_int_equal(hook_run("/bin/false", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPROTO);
        assert_string_contains(why, "/bin/false exited with status 1");
        assert_int_equal(hook_run("false", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EINVAL);
        assert_int_equal(hook_run("/nonexistent/tool", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -ENOENT);

        /* A hook that hangs is ended at its timeout, and so are its descendants' hold on us. */
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        assert_int_equal(hook_run("/bin/sleep 30", &c, 500 * USEC_PER_MSEC, false, out, sizeof(out), why, sizeof(why)), -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &b);
        assert_true(b.tv_sec - a.tv_sec < 4);
        assert_string_contains(why, "ran longer than its timeout");

        /* Dry run: checked, not run. */
        assert_int_equal(hook_run("/bin/false", &c, USEC_PER_SEC, true, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "would run /bin/false");
}

static void test_signal_processes(void **state) {
        char why[256], path[] = "/tmp/memgov-hook-t";
        /* A process of our own with a name nothing else has: a copy of sleep. */
        size_t len;
        char *bin = NULL;
        assert_int_equal(read_full_file_at(-100, "/bin/sleep", 1 << 24, &bin, &len), 0);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(bin, 1, len, f), len);
        fclose(f);
        free(bin);
        chmod(path, 0755);
        pid_t pid = fork();
        if (pid == 0) {
                execl(path, "memgov-hook-t", "30", (char *) NULL);
                _exit(127);
        }
        usleep(200000);
        assert_int_equal(signal_processes("memgov-none-xx", SIGTERM, false, why, sizeof(why)), -ESRCH);
        assert_string_equal(why, "no process named memgov-none-xx");
        /* Dry run finds, does not send. */
        assert_int_equal(signal_processes("memgov-hook-t", SIGTERM, true, why, sizeof(why)), 1);
        assert_int_equal(kill(pid, 0), 0);
        assert_int_equal(signal_processes("memgov-hook-t", SIGTERM, false, why, sizeof(why)), 1);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        unlink(path);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_environment),
                cmocka_unit_test(test_failures),
                cmocka_unit_test(test_signal_processes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
