/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The trim rung (src/core/rung-trim.c). */
#include "engine-sim.h"

static void test_trim_on_threshold_and_cooldown(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 5 * GB);
        sim_run(sim, 60 * SEC, 1 * SEC);
        unsigned mark = sim->n;

        set_ws(sim, 8 * GB); /* 80 % >= trim.at 75 % */
        sim_tick(sim, SEC);
        const Decision *l = find(sim, T_LEVEL, mark), *t = find(sim, T_TRIM, mark);
        expect(l && l->from == LEVEL_NORMAL && l->level == LEVEL_TRIM);
        expect(l->code == LEVEL_UP_AT && l->level == LEVEL_TRIM && l->from == LEVEL_NORMAL);
        expect(l->working_set == 8 * GB && l->budget == BUDGET);
        expect(t && t->trim.method == TRIM_AUTO);
        expect(sim->out.next_sample == 1 * SEC);
        /* What `status` shows as "next in": the trim cooldown from now; nothing else has run. */
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_TRIM) == sim->now + 10 * 60 * SEC);
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_RESET) == 0);
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_SET_MAX) == 0);

        /* The trim worked: the injector measured 512M given back, and the next sample shows it. */
        sim->s.reported = 1u << ACTION_TRIM;
        sim->s.freed[ACTION_TRIM] = 512 * MB;
        set_ws(sim, 7 * GB + 512 * MB);
        sim_tick(sim, SEC);
        const Decision *eff = find(sim, T_EFFECT, mark);
        expect(eff && eff->action == ACTION_TRIM && eff->value == 512 * MB);
        expect(eff->code == EFFECT_FREED && eff->action == ACTION_TRIM && eff->value == 512 * MB);
        expect(!sim->e->act[ACTION_TRIM].spent);
        sim_run(sim, 20 * SEC, SEC);
        /* Still above trim.at - hysteresis: stays at trim, but no second trim before the 10m cooldown. */
        sim_run(sim, 9 * 60 * SEC, 5 * SEC);
        expect(count(sim, T_TRIM, mark) == 1);
        sim_run(sim, 70 * SEC, 5 * SEC);
        expect(count(sim, T_TRIM, mark) == 2);
        check_invariants(sim);
        sim_free(sim);
}

static void test_ineffective_trim_escalates_to_throttle(void **state) {
        Sim *sim = sim_new(true);
        /* 80 % and rising slowly (ETA ~ 20h): trim frees nothing, throttle is next. */
        uint64_t ws = 8 * GB;
        for (unsigned i = 0; i < 400; i++) {
                set_ws(sim, ws + (uint64_t) i * (MB / 36));
                sim_tick(sim, SEC);
        }
        const Decision *e = find(sim, T_EFFECT, 0);
        expect(e && e->action == ACTION_TRIM && e->code == EFFECT_TOO_LITTLE);
        const Decision *l = find_level(sim, LEVEL_TRIM, LEVEL_THROTTLE, LEVEL_UP_NOT_HELPING, 0);
        expect(l);
        expect(sim->e->level == LEVEL_THROTTLE);
        /* But reset is destructive and only comes on its own thresholds. */
        expect(!find(sim, T_RESET, 0));
        expect(count(sim, T_TRIM, 0) == 1);
        check_invariants(sim);
        sim_free(sim);
}

/* A trim that was not carried out through no fault of its own (memgov_trim() answers NULL
 * within 10 s of a trim another account called) is not one that freed nothing: no backoff, the
 * rung is not taken for one that does not help, and the next trim comes after the cooldown. */
static void test_trim_not_done_not_judged(void **state) {
        Sim *sim = sim_new(false);
        uint64_t ws = 8 * GB;
        for (unsigned i = 0; i < 700; i++) {
                set_ws(sim, ws + (uint64_t) i * (MB / 36));
                sim_tick(sim, SEC);
                for (unsigned j = 0; j < sim->out.n_decisions; j++)
                        if (decision_class(&sim->out.decisions[j]) == T_TRIM)
                                action_feedback_add(&sim->fb, &sim->out.decisions[j],
                                                    &(const ActionResult) { .not_done = true });
        }
        const Decision *e = find(sim, T_EFFECT, 0);
        expect(e && e->action == ACTION_TRIM && e->code == EFFECT_NOT_DONE);
        expect(!find_code(sim, T_EFFECT, EFFECT_TOO_LITTLE, 0) && !find_code(sim, T_EFFECT, EFFECT_FAILED, 0));
        expect(!find_level(sim, LEVEL_TRIM, LEVEL_THROTTLE, LEVEL_UP_NOT_HELPING, 0));
        expect(!sim->e->act[ACTION_TRIM].spent);
        /* Again once trim.cooldown (10 min) is over. */
        expect(count(sim, T_TRIM, 0) == 2);
        check_invariants(sim);
        sim_free(sim);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_trim_on_threshold_and_cooldown),
                cmocka_unit_test(test_ineffective_trim_escalates_to_throttle),
                cmocka_unit_test(test_trim_not_done_not_judged),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
