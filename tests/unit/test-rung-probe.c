/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A rung is one file: this test adds one, the probe, in the test tree only (this file, with its
 * row in the table below) and nothing else of the engine changes. The table below takes the place
 * of src/core/rungs.c in this test's link (the linker takes engine_rung() from here, and the
 * archive's rungs.o is never pulled in); the probe stands at the pool's level and acts through the
 * pool's action, as a new rung takes the level and the action its table rows give it. The engine
 * climbs to it, plans it, sees it fail, leaves it, and puts back what it changed on the way out. */
#include "engine-sim.h"

typedef struct ProbeState {
        unsigned planned, failed, new_processes;
} ProbeState;

static ProbeState *probe(const Engine *e) {
        return engine_rung_state(e, LEVEL_POOL);
}

static bool probe_exhausted(const Tick *k) {
        return k->e->act[ACTION_POOL].spent;
}

static bool probe_plan(Tick *k) {
        if (!step_available(k, LEVEL_POOL) || k->e->act[ACTION_POOL].spent || !cooldown_over(k, ACTION_POOL, LEVEL_POOL))
                return false;
        Decision *d = emit_action(k, ACTION_POOL, "%s: probe", ctx(k));
        if (d)
                d->pool.step = 1;
        probe(k->e)->planned++;
        note_action(k, ACTION_POOL, true);
        return true;
}

static bool probe_failed(Tick *k, ActionKind a, bool was_pending, usec_t backoff, const char **but) {
        probe(k->e)->failed++;
        *but = " (the probe saw it)";
        return false;
}

static void probe_new_process(Tick *k) {
        probe(k->e)->new_processes++;
}

static unsigned probe_leave(const Engine *e, const char *why, Decision *ret, unsigned max) {
        if (probe(e)->planned == 0 || max == 0)
                return 0;
        ret[0] = (Decision) { .kind = DECISION_ACTION, .action = ACTION_POOL, .level = e->level, .pool.grow = true };
        snprintf(ret[0].reason, sizeof(ret[0].reason), "%s: the probe puts back what it changed", why);
        return 1;
}

static const Rung rung_probe = {
        .level = LEVEL_POOL,
        .state_size = sizeof(ProbeState),
        .exhausted = probe_exhausted,
        .new_process = probe_new_process,
        .failed = probe_failed,
        .plan = probe_plan,
        .leave = probe_leave,
};

/* src/core/rungs.c's table, the probe in the pool's row. */
extern const Rung rung_trim, rung_throttle, rung_admit, rung_reset, rung_restart;

const Rung *const engine_rungs[_LEVEL_MAX] = {
        [LEVEL_TRIM] = &rung_trim,   [LEVEL_THROTTLE] = &rung_throttle, [LEVEL_ADMIT] = &rung_admit,
        [LEVEL_RESET] = &rung_reset, [LEVEL_POOL] = &rung_probe,        [LEVEL_RESTART] = &rung_restart,
};

const Rung *engine_rung(Level l) {
        return l > LEVEL_NORMAL && l < _LEVEL_MAX ? engine_rungs[l] : NULL;
}

/* The probe's level on its own threshold, the rungs below it off: the ladder goes from normal
 * straight to it. */
static Sim *sim_probe(void) {
        Sim *sim = sim_new(false);
        for (Level l = LEVEL_TRIM; l < LEVEL_POOL; l++)
                sim->p.step[l].enabled = false;
        sim->p.step[LEVEL_RESTART].enabled = false;
        sim->p.step[LEVEL_POOL].at = 8000;
        sim_policy_changed(sim);
        return sim;
}

static void test_probe_climbed_to_planned_failed_left(void **state) {
        Sim *sim = sim_probe();
        expect(engine_rung(LEVEL_POOL) == &rung_probe);

        /* Over its threshold: the ladder climbs to it, and it plans. */
        set_ws(sim, 85 * BUDGET / 100);
        sim_run(sim, 5 * SEC, SEC);
        expect(find_level(sim, LEVEL_NORMAL, LEVEL_POOL, LEVEL_UP_AT, 0));
        const Decision *d = find_text(sim, T_POOL, ": probe", 0);
        expect(d && d->pool.step == 1 && d->level == LEVEL_POOL);
        expect(probe(sim->e)->planned == 1);

        /* Its action fails: the engine tells it, and backs it off as any rung's. */
        unsigned mark = sim->n;
        pool_result(sim, -EIO, 0);
        sim_tick(sim, SEC);
        const Decision *f = find_code(sim, T_EFFECT, EFFECT_FAILED, mark);
        expect(f && f->action == ACTION_POOL && strstr(f->reason, "(the probe saw it)"));
        expect(probe(sim->e)->failed == 1);
        sim_run(sim, 5 * 60 * SEC, SEC);
        expect(count(sim, T_POOL, mark) == 0);

        /* A new server process: told, and its failure no longer holds it back. */
        sim->s.pid++;
        sim->s.uptime = SEC;
        sim_tick(sim, SEC);
        expect(probe(sim->e)->new_processes == 1);
        sim_run(sim, 2 * 60 * SEC, SEC);
        expect(probe(sim->e)->planned == 2);

        /* Calm: the ladder leaves it. */
        mark = sim->n;
        set_ws(sim, 5 * GB);
        sim_run(sim, 10 * 60 * SEC, SEC);
        expect(find_level(sim, LEVEL_POOL, LEVEL_NORMAL, LEVEL_DOWN_CALM, mark));
        expect(sim->e->level == LEVEL_NORMAL);

        /* memgov stops: what the probe changed is put back. */
        Decision out[ENGINE_LEAVE_MAX];
        unsigned n = engine_leave(sim->e, "memgov stops", out, ELEMENTSOF(out));
        bool put_back = false;
        for (unsigned i = 0; i < n; i++)
                put_back = put_back || (out[i].action == ACTION_POOL && strstr(out[i].reason, "the probe puts back"));
        expect(put_back);
        check_invariants(sim);
        sim_free(sim);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_probe_climbed_to_planned_failed_left),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
