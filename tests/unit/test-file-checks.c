/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The files memgov trusts: a policy (it names commands memgov runs) and an SQL option file (it
 * holds a password). Each refusal, on real files. */
#include "test-util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memgov/policy-file.h"
#include "memgov/sql.h"

static char dir[] = "/tmp/memgov-file-checks.XXXXXX";

static void collect(void *userdata, const char *message) {
        snprintf(userdata, 512, "%s", message);
}

static void test_option_file(void **state) {
        char path[256], why[512];
        make_file(dir, "client.cnf", "[client]\nuser=memgov\npassword=x\n", 0640, path, sizeof(path));
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "is readable by its group (mode 0640; expected chmod 600): it holds a password");
        assert_int_equal(chmod(path, 0604), 0);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "is readable by everyone");
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), 0);
        if (geteuid() == 0) {
                /* Running as root, it must be root's. */
                assert_int_equal(chown(path, 1000, 1000), 0);
                assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
                assert_string_contains(why, "owned by uid 1000");
        }
        snprintf(path, sizeof(path), "%s/missing.cnf", dir);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -ENOENT);
        assert_string_contains(why, "No such file or directory");
}

static void test_policy_file(void **state) {
        char path[256], msg[512] = "";
        Policy p;
        assert_int_equal(policy_load_default(&p), 0);
        make_file(dir, "policy.ini", "[trim]\nat = 70%\n", 0664, path, sizeof(path));
        if (geteuid() == 0) {
                /* Writable by its group: someone else could make memgov run their hooks. */
                assert_true(policy_load_file(path, &p, collect, msg) != 0);
                assert_string_contains(msg, "writable by its group");
                assert_int_equal(chmod(path, 0644), 0);
                assert_int_equal(chown(path, 1000, 0), 0);
                msg[0] = '\0';
                assert_true(policy_load_file(path, &p, collect, msg) != 0);
                assert_string_contains(msg, "owned by uid 1000");
                assert_int_equal(chown(path, 0, 0), 0);
        } else
                assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(policy_load_file(path, &p, collect, msg), 0);
        assert_int_equal(p.step[LEVEL_TRIM].at, 7000);
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_option_file),
                cmocka_unit_test(test_policy_file),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
