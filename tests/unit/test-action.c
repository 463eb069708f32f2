/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <linux/capability.h>

#include "test-util.h"

#include "memgov/action.h"
#include "memgov/engine.h"

/* Every row of the registry is whole: a kind someone adds without one of its fields fails here,
 * not in production as some other action. */
static void test_every_kind_has_every_field(void **state) {
        Policy p;
        PrivilegeNeeds n = {};
        unsigned ranks = 0;

        assert_int_equal(policy_load_default(&p), 0);
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++) {
                const ActionInfo *a = action_info(k);
                assert_non_null(a->name);
                assert_non_null(a->verb);
                assert_non_null(a->summary);
                assert_non_null(a->message_id);
                assert_int_equal(strlen(a->message_id), 32);
                assert_int_equal(strspn(a->message_id, "0123456789abcdef"), 32);
                assert_true(a->level > LEVEL_NORMAL && a->level < _LEVEL_MAX);
                assert_non_null(a->backoff);
                assert_non_null(a->timeout);
                assert_non_null(a->capabilities);
                assert_true(a->timeout(&p) > 0);
                assert_true(a->backoff(&p) > 0);
                (void) a->capabilities(&p, &n);
                assert_non_null(a->chart_label);
                assert_non_null(a->chart_legend);
                assert_true(a->chart_rgb != 0 && a->chart_rgb <= 0xffffff);
                assert_true(a->chart_text_rgb != 0 && a->chart_text_rgb <= 0xffffff);
                assert_true(a->chart_rank < _ACTION_KIND_MAX);
                ranks |= 1u << a->chart_rank;
                /* An effect judged against min-gain needs the measurement, or the working set. */
                if (a->freed_column)
                        assert_true(a->measured);

                ActionKind back;
                assert_int_equal(action_kind_from_string(a->name, &back), 0);
                assert_int_equal(back, k);
                assert_string_equal(action_kind_to_string(k), a->name);
                for (ActionKind j = 0; j < k; j++) {
                        assert_string_not_equal(action_info(j)->name, a->name);
                        assert_string_not_equal(action_info(j)->message_id, a->message_id);
                        assert_true(action_info(j)->chart_rgb != a->chart_rgb);
                }
        }
        /* Each rank once: the chart's drawing order is total. */
        assert_int_equal(ranks, (1u << _ACTION_KIND_MAX) - 1);
        ActionKind none;
        assert_int_equal(action_kind_from_string("fallback", &none), -EINVAL);
}

/* A kind outside the registry never becomes some other action. */
static void count_key(void *userdata, const char *key) {
        unsigned *n = userdata;
        assert_true(key && *key);
        (*n)++;
}
static void sink_u64(void *u, const char *key, uint64_t v) {
        count_key(u, key);
}
static void sink_bool(void *u, const char *key, bool v) {
        count_key(u, key);
}
static void sink_string(void *u, const char *key, const char *v) {
        assert_non_null(v);
        count_key(u, key);
}

/* Every action's decision says what it will do in the JSON outputs: a limit its value, every
 * other action its parameters (pool and admission too, in both of their directions). */
static void test_every_action_has_parameters(void **state) {
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++)
                for (int variant = 0; variant < 2; variant++) {
                        /* The variants of the action's own parameters: its member of the union only. */
                        Decision d = { .kind = DECISION_ACTION, .action = k };
                        if (k == ACTION_POOL)
                                d.pool = (PoolParams) { .grow = variant, .grow_max = SIZE_UNLIMITED };
                        else if (k == ACTION_ADMIT)
                                d.admit = (AdmitParams) { .restore = variant };
                        unsigned n = 0;
                        action_params(&d, &(const ActionParamSink) { .u64 = sink_u64, .size = sink_u64, .boolean = sink_bool,
                                                                     .string = sink_string, .userdata = &n });
                        if (n == 0 && !action_info(k)->sets_limit)
                                fail_msg("%s (variant %d): no parameter and no value", action_kind_to_string(k), variant);
                }
}

static void test_unknown_kind_aborts(void **state) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                (void) action_info(_ACTION_KIND_MAX);
                _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
        assert_string_equal(action_kind_to_string(_ACTION_KIND_MAX), "invalid");
}

/* The decision classes line up with the registry: each action a class, named by its row. */
static void test_decision_classes(void **state) {
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++) {
                Decision d = { .kind = DECISION_ACTION, .action = k };
                assert_string_equal(decision_name(&d), action_info(k)->name);
                assert_int_equal(decision_class(&d), DECISION_ACTION + k);
        }
        Decision e = { .kind = DECISION_EFFECT, .action = ACTION_TRIM };
        assert_string_equal(decision_name(&e), "effect");
}

/* What the policy's actions need, from their rows: a policy that disables a rung drops what only
 * that rung needed. */
static void test_capabilities_from_rows(void **state) {
        Policy p;
        PrivilegeNeeds n = { .unit = false };
        assert_int_equal(policy_load_default(&p), 0);
        assert_true(action_info(ACTION_RESTART)->capabilities(&p, &n) & (UINT64_C(1) << CAP_KILL));
        n.dry_run = true;
        assert_false(action_info(ACTION_RESTART)->capabilities(&p, &n) & (UINT64_C(1) << CAP_KILL));
        assert_true(action_enabled(&p, ACTION_SET_MAX));
        p.max_raise = 0;
        /* memory.max is raised for admission too, for a while */
        assert_true(action_enabled(&p, ACTION_SET_MAX));
        p.admit_max_raise = 0;
        assert_false(action_enabled(&p, ACTION_SET_MAX));
        p.admit_max_raise = 500;
        p.step[LEVEL_ADMIT].enabled = false;
        assert_false(action_enabled(&p, ACTION_SET_MAX));
        /* admission talks SQL to the server's own socket */
        p.step[LEVEL_ADMIT].enabled = true;
        assert_true(action_info(ACTION_ADMIT)->capabilities(&p, &n) & (UINT64_C(1) << CAP_DAC_READ_SEARCH));
        p.step[LEVEL_TRIM].enabled = false;
        assert_false(action_enabled(&p, ACTION_TRIM));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_kind_has_every_field),
                cmocka_unit_test(test_every_action_has_parameters),
                cmocka_unit_test(test_unknown_kind_aborts),
                cmocka_unit_test(test_decision_classes),
                cmocka_unit_test(test_capabilities_from_rows),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
