/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <sys/stat.h>

#include "memgov/server-candidate.h"

static CandidateFacts server(void) {
        /* Debian's mariadbd under mariadb.service, seen from the host by a root memgov. */
        return (CandidateFacts) { .exe_known = true, .exe_uid = 0, .exe_mode = S_IFREG | 0755, .exe_name = "mariadbd",
                                  .names = "mariadbd,mysqld", .ruid = 106, .cgroup = "/system.slice/mariadb.service",
                                  .all_users = true, .enforce = true, .uid_min = 1000, .server_uid = 106 };
}

static void test_the_server(void **state) {
        char why[128];
        CandidateFacts f = server();
        assert_true(server_candidate_ok(&f, why, sizeof(why)));
        f.ruid = 0; /* a server run as root */
        assert_true(server_candidate_ok(&f, why, sizeof(why)));
        f.cgroup = NULL; /* no cgroup v2 path known */
        assert_true(server_candidate_ok(&f, why, sizeof(why)));
}

static void test_impostors(void **state) {
        char why[128];
        CandidateFacts f = server();

        /* A copy of the binary a user planted. */
        f.exe_uid = 1000;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "its executable belongs to uid 1000, not root");
        f = server();
        f.exe_mode = S_IFREG | 0777;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "its executable is writable by everyone");
        f = server();
        f.exe_known = false;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));

        /* A symbolic link named mariadbd to any root-owned binary: the name is the link's. */
        f = server();
        f.exe_name = "sleep";
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "its executable is sleep, not a server");

        /* Another system account (a compromised daemon), or nobody, running the server's binary. */
        f = server();
        f.ruid = 33;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "it runs as uid 33, neither root nor the servers' account (uid 106)");
        f.ruid = 65534;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        /* Without a servers' account, system accounts may, nobody (above UID_MIN) may not. */
        f.server_uid = (uid_t) -1;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "it runs as uid 65534, a login user's (UID_MIN 1000)");
        f.ruid = 33;
        assert_true(server_candidate_ok(&f, why, sizeof(why)));

        /* Debian's own binary, started by a login user. */
        f = server();
        f.ruid = 1000;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "it runs as uid 1000, neither root nor the servers' account (uid 106)");
        f.server_uid = (uid_t) -1;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "it runs as uid 1000, a login user's (UID_MIN 1000)");
        f = server();
        f.cgroup = "/user.slice/user-0.slice/session-3.scope";
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        assert_string_equal(why, "it runs in a login session (cgroup /user.slice/user-0.slice/session-3.scope)");
}

static void test_container_namespace(void **state) {
        char why[128];
        CandidateFacts f = server();

        /* A sidecar sees the pod's processes only: images run their server as any uid (1001). */
        f.all_users = false;
        f.ruid = 1001;
        f.cgroup = "/";
        assert_true(server_candidate_ok(&f, why, sizeof(why)));
        /* The executable is still checked. */
        f.exe_mode = S_IFREG | 0775;
        assert_false(server_candidate_ok(&f, why, sizeof(why)));
        /* Not root: files are not judged by their owner (check_trusted_file does the same). */
        f.enforce = false;
        assert_true(server_candidate_ok(&f, why, sizeof(why)));
}

static void test_uid_min(void **state) {
        const char defs[] = "# comment\nMAIL_DIR /var/mail\n#UID_MIN 5\nUID_MIN\t\t 2000\nUID_MAX 60000\n";
        assert_int_equal(login_defs_uid_min(defs, strlen(defs)), 2000);
        assert_int_equal(login_defs_uid_min("", 0), 1000);
        assert_int_equal(login_defs_uid_min("UID_MINX 5\n", 11), 1000);
        assert_int_equal(login_defs_uid_min("UID_MIN abc\n", 12), 1000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_the_server),
                cmocka_unit_test(test_impostors),
                cmocka_unit_test(test_container_namespace),
                cmocka_unit_test(test_uid_min),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
