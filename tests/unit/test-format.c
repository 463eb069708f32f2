/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include "memgov/format.h"
#include "memgov/units.h"

#define GB (1ULL << 30)
#define C_TRIM     (DECISION_ACTION + ACTION_TRIM)
#define C_SET_HIGH (DECISION_ACTION + ACTION_SET_HIGH)

/* Decisions of the given classes (engine.h). */
static EngineOutput make_out(usec_t now, usec_t wall, unsigned n, const unsigned *kinds) {
        EngineOutput o = { .now = now, .wall = wall, .ws = 51 * GB, .budget = 60 * GB, .ws_bp = 8500, .eta = USEC_INFINITY };
        for (unsigned i = 0; i < n; i++) {
                bool action = kinds[i] >= DECISION_ACTION && kinds[i] < DECISION_ACTION + _ACTION_KIND_MAX;
                o.decisions[i] = (Decision) {
                        .kind = action ? DECISION_ACTION : kinds[i] < DECISION_ACTION ? (DecisionKind) kinds[i]
                                                                                      : (DecisionKind) (kinds[i] + 1 - _ACTION_KIND_MAX),
                        .action = action ? (ActionKind) (kinds[i] - DECISION_ACTION) : 0,
                        .level = LEVEL_TRIM,
                };
                assert_int_equal(decision_class(&o.decisions[i]), kinds[i]);
                snprintf(o.decisions[i].reason, sizeof(o.decisions[i].reason), "reason %u", i);
        }
        o.n_decisions = n;
        return o;
}

static void test_line(void **state) {
        unsigned k[] = { C_TRIM, C_SET_HIGH, decision_kind_class(DECISION_EFFECT) };
        EngineOutput o = make_out(1000 + 3 * USEC_PER_HOUR + 25 * USEC_PER_MINUTE, 1786403397ULL * USEC_PER_SEC, 3, k);
        TimelineClock clk = { .start_mono = 1000, .show_wall = true };
        char line[512];

        assert_true(format_decision_line(line, sizeof(line), &clk, &o, &o.decisions[0], false) > 0);
        assert_string_equal(line, "2026-08-10 23:09:57  +3h25m    trim                 reason 0");
        assert_true(format_decision_line(line, sizeof(line), &clk, &o, &o.decisions[1], true) > 0);
        assert_string_equal(line, "2026-08-10 23:09:57  +3h25m    would set memory.high reason 1");
        /* Only actions are "would": an effect is an observation either way. */
        assert_true(format_decision_line(line, sizeof(line), &clk, &o, &o.decisions[2], true) > 0);
        assert_string_equal(line, "2026-08-10 23:09:57  +3h25m    effect               reason 2");

        clk.show_wall = false;
        assert_true(format_decision_line(line, sizeof(line), &clk, &o, &o.decisions[0], false) > 0);
        assert_string_equal(line, "+3h25m    trim                 reason 0");

        char tiny[16];
        assert_int_equal(format_decision_line(tiny, sizeof(tiny), &clk, &o, &o.decisions[0], false), -ENOBUFS);
}

typedef struct Lines {
        char text[32][256];
        unsigned n;
} Lines;

static void collect(void *userdata, const char *text) {
        Lines *l = userdata;
        assert_true(l->n < 32);
        snprintf(l->text[l->n++], sizeof(l->text[0]), "%s", text);
}

static void test_summary(void **state) {
        ReplaySummary s;
        Lines l = {};
        replay_summary_init(&s);

        usec_t wall0 = 1786403397ULL * USEC_PER_SEC;
        EngineOutput o = make_out(0, wall0, 0, NULL);
        replay_summary_add(&s, &o);

        /* The ladder moves up with an ETA of 2h, then a trim frees 1G. */
        unsigned k1[] = { decision_kind_class(DECISION_LEVEL), C_TRIM };
        o = make_out(USEC_PER_HOUR, wall0 + USEC_PER_HOUR, 2, k1);
        o.decisions[0].from = LEVEL_NORMAL;
        o.eta = 2 * USEC_PER_HOUR;
        replay_summary_add(&s, &o);
        unsigned k2[] = { decision_kind_class(DECISION_EFFECT) };
        o = make_out(USEC_PER_HOUR + 15 * USEC_PER_SEC, wall0 + USEC_PER_HOUR + 15 * USEC_PER_SEC, 1, k2);
        o.decisions[0].value = GB;
        o.ws = 61 * GB;
        o.ws_bp = 10166;
        replay_summary_add(&s, &o);

        replay_summary_format(&s, collect, &l);
        assert_string_equal(l.text[0], "summary");
        assert_string_equal(l.text[1], "  samples          3 over 1h, from 2026-08-10 23:09:57 (+0s) to 2026-08-11 00:10:12 (+1h)");
        assert_string_equal(l.text[2], "  budget           60G");
        assert_string_equal(l.text[3], "  peak             working set 61G = 101% of the budget at 2026-08-11 00:10:12 (+1h)");
        assert_string_equal(l.text[4], "  first trim       2026-08-11 00:09:57 (+1h)");
        assert_string_equal(l.text[5], "  first throttle   never");
        assert_string_equal(l.text[6], "  first admit      never");
        assert_string_equal(l.text[8], "  first pool       never");
        assert_string_equal(l.text[10], "  OOM predicted    for 2026-08-11 02:09:57 (+3h), when the ladder first moved at 2026-08-11 00:09:57 (+1h)");
        assert_string_equal(l.text[11], "  budget reached   at 2026-08-11 00:10:12 (+1h)");
        assert_string_equal(l.text[12], "  would have done  1 trim(s), 0 memory.high change(s), 0 memory.max change(s), 0 connection reset(s), 0 graceful restart(s), 0 buffer-pool resize(s), 0 max_connections change(s)");
        assert_string_equal(l.text[13], "  held back        0 time(s); effects judged: 1, freeing 1G in all");
        /* What a replay cannot know is said. */
        assert_string_contains(l.text[14], "  not simulated    what the actions free");
        assert_int_equal(l.n, 15);
}

static void test_verbs(void **state) {
        char b[32];
        Decision d = { .kind = DECISION_ACTION, .action = ACTION_RESTART };
        assert_string_equal(decision_verb(&d, false, b, sizeof(b)), "restart");
        assert_string_equal(decision_verb(&d, true, b, sizeof(b)), "would restart");
        d.kind = DECISION_HOLD;
        assert_string_equal(decision_verb(&d, true, b, sizeof(b)), "hold");
        /* Every class has a name of its own, in the order the counts use. */
        for (unsigned k = 0; k < _DECISION_CLASS_MAX; k++) {
                assert_string_not_equal(decision_class_to_string(k), "invalid");
                for (unsigned j = 0; j < k; j++)
                        assert_string_not_equal(decision_class_to_string(k), decision_class_to_string(j));
        }
        assert_string_equal(decision_class_to_string(0), "level");
        assert_string_equal(decision_class_to_string(C_TRIM), "trim");
        assert_string_equal(decision_class_to_string(_DECISION_CLASS_MAX - 1), "event");
        assert_string_equal(decision_class_to_string(_DECISION_CLASS_MAX), "invalid");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_line),
                cmocka_unit_test(test_summary),
                cmocka_unit_test(test_verbs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
