/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <linux/capability.h>

#include "memgov/privileges.h"

#define CAP(c) (UINT64_C(1) << (c))

static Policy base(void) {
        Policy p;
        assert_int_equal(policy_load_default(&p), 0);
        return p;
}

static void test_default_policy(void **state) {
        Policy p = base();
        PrivilegeNeeds n = { .unit = true, .psi = true, .locked = true };
        char text[256];

        /* Under systemd: restarts through RestartUnit, no signals. */
        uint64_t caps = privileges_needed(&p, &n);
        assert_int_equal(caps, CAP(CAP_SYS_PTRACE) | CAP(CAP_SYS_RESOURCE) | CAP(CAP_IPC_LOCK) |
                                       CAP(CAP_DAC_READ_SEARCH));
        privileges_to_string(caps, text, sizeof(text));
        assert_string_equal(text, "CAP_SYS_PTRACE CAP_SYS_RESOURCE CAP_IPC_LOCK CAP_DAC_READ_SEARCH");

        /* A process target: the graceful restart is a SIGTERM to another user's process. */
        n.unit = false;
        assert_true(privileges_needed(&p, &n) & CAP(CAP_KILL));
        /* ...unless restarts are off. */
        p.step[LEVEL_RESTART].enabled = false;
        assert_false(privileges_needed(&p, &n) & CAP(CAP_KILL));
        /* A reset by signal needs it again. */
        p.reset_method = RESET_SIGNAL;
        assert_true(privileges_needed(&p, &n) & CAP(CAP_KILL));
}

static void test_dry_run_signals_nobody(void **state) {
        Policy p = base();
        p.reset_method = RESET_SIGNAL;
        PrivilegeNeeds n = { .dry_run = true };
        assert_false(privileges_needed(&p, &n) & CAP(CAP_KILL));
        assert_true(privileges_needed(&p, &n) & CAP(CAP_SYS_PTRACE));
        /* No trigger, no lock: neither capability. */
        assert_false(privileges_needed(&p, &n) & (CAP(CAP_SYS_RESOURCE) | CAP(CAP_IPC_LOCK)));
}

static void test_sql_socket(void **state) {
        Policy p = base();
        PrivilegeNeeds n = { .unit = true };
        /* The server's socket over TCP, or given by path: no need to look at its descriptors
         * (and a trim over SQL only: no thread of the server to look at either). */
        p.trim_method = TRIM_SQL;
        /* (The admission rung's connection count reads the server's /proc/PID/fd, whatever the
         * endpoint.) */
        snprintf(p.sql_host, sizeof(p.sql_host), "127.0.0.1");
        assert_true(privileges_needed(&p, &n) & CAP(CAP_DAC_READ_SEARCH));
        p.step[LEVEL_ADMIT].enabled = false;
        assert_false(privileges_needed(&p, &n) & CAP(CAP_DAC_READ_SEARCH));
        p.sql_host[0] = '\0';
        snprintf(p.sql_socket, sizeof(p.sql_socket), "/run/mysqld/mysqld.sock");
        assert_false(privileges_needed(&p, &n) & CAP(CAP_DAC_READ_SEARCH));
        /* No SQL at all (no trim, no buffer-pool rung, resets by exec, no pre-flush): not needed. */
        snprintf(p.sql_socket, sizeof(p.sql_socket), "auto");
        p.step[LEVEL_TRIM].enabled = false;
        p.step[LEVEL_POOL].enabled = false;
        p.reset_method = RESET_EXEC;
        p.preflush = false;
        assert_false(privileges_needed(&p, &n) & CAP(CAP_DAC_READ_SEARCH));
        p.preflush = true;
        assert_true(privileges_needed(&p, &n) & CAP(CAP_DAC_READ_SEARCH));
        /* A trim by ptrace reads what the server's threads are doing (/proc/PID/task/TID/syscall). */
        p.preflush = false;
        p.step[LEVEL_TRIM].enabled = true;
        p.trim_method = TRIM_PTRACE;
        assert_true(privileges_needed(&p, &n) & CAP(CAP_DAC_READ_SEARCH));
}

static void test_to_string(void **state) {
        char text[64];
        privileges_to_string(0, text, sizeof(text));
        assert_string_equal(text, "none");
        privileges_to_string(CAP(CAP_KILL) | CAP(CAP_SYS_ADMIN), text, sizeof(text));
        assert_string_equal(text, "CAP_KILL cap21");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_default_policy),
                cmocka_unit_test(test_dry_run_signals_nobody),
                cmocka_unit_test(test_sql_socket),
                cmocka_unit_test(test_to_string),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
