/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pool rung (src/core/rung-pool.c). */
#include "engine-sim.h"

static void test_pool_when_reset_not_helping(void **state) {
        Sim *sim = sim_new(false);
        to_pool(sim);
        expect(find(sim, T_RESET, 0));
        const Decision *l = find_level(sim, LEVEL_RESET, LEVEL_POOL, LEVEL_UP_NOT_HELPING, 0);
        expect(l);
        const Decision *d = find(sim, T_POOL, 0);
        expect(d && !d->pool.grow && d->pool.step == 1000 && d->pool.floor == 5000 &&
               d->pool.grow_max == SIZE_UNLIMITED);
        expect(POOL(sim)->steps == 1);
        /* It gave back 300M: judged like trim and reset, on what the actuator measured. */
        unsigned mark = sim->n;
        pool_result(sim, 0, 300 * MB);
        set_ws(sim, 9 * GB);
        sim_run(sim, 20 * SEC, SEC);
        const Decision *e = find(sim, T_EFFECT, mark);
        expect(e && e->action == ACTION_POOL && e->code == EFFECT_FREED && e->value == 300 * MB);
        check_invariants(sim);
        sim_free(sim);
}

static void test_pool_not_below_reset(void **state) {
        Sim *sim = sim_new(false);
        /* 89 % and rising, the server stalling on memory.high (PSI full 35 %): throttle is not
         * helping, but the buffer pool waits for reset's ground (92 %) and a reset that did not
         * help: per byte it costs the clients more than ending the sessions that hold the most. */
        sim->s.psi.full.avg10 = 3500;
        for (usec_t t = 0; t < 300 * SEC; t += SEC) {
                set_ws(sim, 8 * GB + 900 * MB + t / SEC * (MB / 10));
                sim_tick(sim, SEC);
        }
        expect(sim->e->level == LEVEL_THROTTLE);
        expect(!find(sim, T_POOL, 0));
        check_invariants(sim);
        sim_free(sim);
}

/* Over memory.high (anonymous memory: the kernel cannot hold the working set under it without
 * swap), every allocation in the server's cgroup pays, the resize's too: memory.high is raised out
 * of the way in the same tick, before the step. A resize that takes longer than settle is judged
 * once the actuator is done, on its own measurement, and memory.high stays out of its way. */
static void test_pool_step_out_of_memory_high(void **state) {
        Sim *sim = sim_new(false);
        to_pool(sim);
        pool_result(sim, 0, 300 * MB);
        sim_tick(sim, SEC);
        /* 95.5 % and rising, memory.high left below (at 9.5G + 2 % or lower). */
        uint64_t ws = 9 * GB + 550 * MB;
        unsigned mark = sim->n, pi = 0;
        for (unsigned i = 0; i < 120 && !pi; i++) {
                ws += 100 * 1024;
                set_ws(sim, ws);
                sim_tick(sim, SEC);
                for (unsigned j = mark; j < sim->n && !pi; j++)
                        if (decision_class(&sim->log[j]) == T_POOL)
                                pi = j;
        }
        expect(pi > mark);
        const Decision *h = &sim->log[pi - 1];
        expect(decision_class(h) == T_SET_HIGH && sim->at[pi - 1] == sim->at[pi]);
        uint64_t top = BUDGET - apply_bp(BUDGET, 300); /* calm-headroom 3 % */
        expect(h->old_value < sim->log[pi].working_set + apply_bp(BUDGET, 200));
        expect(h->value == PAGE_DOWN(MIN(sim->log[pi].working_set + apply_bp(BUDGET, 200), top)));
        expect(!find(sim, T_RESTART, 0));

        /* Under way for 30s, twice settle: not judged, memory.high not lowered, no next step. */
        mark = sim->n;
        sim->s.pending = 1u << ACTION_POOL;
        for (unsigned i = 0; i < 30; i++) {
                ws += 100 * 1024;
                set_ws(sim, ws);
                sim_tick(sim, SEC);
        }
        expect(!find(sim, T_EFFECT, mark));
        expect(!find(sim, T_SET_HIGH, mark));
        expect(!find(sim, T_POOL, mark));
        /* Done: what the actuator measured is what counts. */
        sim->s.pending = 0;
        pool_result(sim, 0, 200 * MB);
        ws -= 200 * MB;
        set_ws(sim, ws);
        sim_tick(sim, SEC);
        const Decision *e = find(sim, T_EFFECT, mark);
        expect(e && e->action == ACTION_POOL && e->code == EFFECT_FREED && e->value == 200 * MB);
        check_invariants(sim);
        sim_free(sim);
}

static void test_pool_not_once_growth_is_over(void **state) {
        Sim *sim = sim_new(false);
        to_pool(sim);
        pool_result(sim, 0, 300 * MB);
        /* The growth is over at 93 %: the level stays up (hysteresis), the pool is not shrunk
         * again: a server whose growth ended keeps its cache. */
        unsigned mark = sim->n;
        set_ws(sim, 9 * GB + 300 * MB);
        sim_run(sim, 30 * USEC_PER_MINUTE, 5 * SEC);
        expect(sim->e->level >= LEVEL_RESET);
        expect(count(sim, T_POOL, mark) == 0);
        check_invariants(sim);
        sim_free(sim);
}

static void test_pool_at_floor(void **state) {
        Sim *sim = sim_new(false);
        to_pool(sim);
        expect(find(sim, T_POOL, 0));
        /* The actuator is at the floor: the step failed, nothing was taken, the rung is spent. */
        pool_result(sim, -ERANGE, 0);
        sim_tick(sim, SEC);
        const Decision *e = find_code(sim, T_EFFECT, EFFECT_FAILED, 0);
        while (e && e->action != ACTION_POOL)
                e = find_code(sim, T_EFFECT, EFFECT_FAILED, (unsigned) (e - sim->log) + 1);
        expect(e && e->action == ACTION_POOL);
        expect(POOL(sim)->steps == 0 && sim->e->act[ACTION_POOL].spent);
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_POOL) == sim->at[e - sim->log] + 30 * USEC_PER_MINUTE);
        /* Calm again: nothing to grow back. */
        unsigned mark = sim->n;
        set_ws(sim, 6 * GB);
        sim_run(sim, 30 * USEC_PER_MINUTE, 5 * SEC);
        expect(count(sim, T_POOL, mark) == 0);
        sim_free(sim);
}

static void test_pool_steps_stop_at_floor(void **state) {
        /* A dry run (or a replay): no actuator says when the floor is reached. With step 10 % and
         * floor 50 %, five steps take it there, and the sixth is never decided. */
        Sim *sim = sim_new(true);
        sim->p.step[LEVEL_POOL].backoff = 0;
        sim->p.step[LEVEL_POOL].min_gain = 0;
        sim_policy_changed(sim);
        for (usec_t t = 0; t < 4 * USEC_PER_HOUR; t += 5 * SEC) {
                set_ws(sim, 9 * GB + 300 * MB + t / (5 * SEC) * 4096);
                sim_tick(sim, 5 * SEC);
        }
        expect(count(sim, T_POOL, 0) == 5);
        expect(POOL(sim)->steps == 5);
        sim_free(sim);
}

static void test_pool_grows_back_with_hysteresis(void **state) {
        Sim *sim = sim_new(false);
        /* No trim: a trim that does not help would hold the ladder at throttle for its backoff. */
        sim->p.step[LEVEL_TRIM].enabled = false;
        sim_policy_changed(sim);
        to_pool(sim);
        expect(POOL(sim)->steps == 1);
        pool_result(sim, 0, 300 * MB);
        sim_tick(sim, SEC);

        /* 82 %: calm below throttle, but the 300M back would bring it to 85 %, past
         * throttle.at 88 % less the hysteresis 5 %: the pool stays small. */
        unsigned mark = sim->n;
        set_ws(sim, 8 * GB + 200 * MB);
        sim_run(sim, 30 * USEC_PER_MINUTE, 5 * SEC);
        expect(sim->e->level < LEVEL_THROTTLE);
        expect(count(sim, T_POOL, mark) == 0);

        /* 70 %: room for it (calm for pool.grow-after 10m already), one step back up, and only
         * the one memgov took. */
        mark = sim->n;
        set_ws(sim, 7 * GB);
        sim_run(sim, 60 * USEC_PER_MINUTE, 5 * SEC);
        expect(count(sim, T_POOL, mark) == 1);
        const Decision *g = find(sim, T_POOL, mark);
        expect(g && g->pool.grow);
        unsigned i = (unsigned) (g - sim->log);
        const Decision *shrink = find(sim, T_POOL, 0);
        expect(shrink && !shrink->pool.grow && sim->at[i] - sim->at[shrink - sim->log] >= 10 * USEC_PER_MINUTE);
        expect(POOL(sim)->steps == 0);
        check_invariants(sim);
        sim_free(sim);
}

/* The pool grows back once the ladder is calm below throttle for pool.grow-after: the clock starts
 * when it came down below throttle, and the rungs under throttle coming and going (trim entered on
 * its ETA after a drop, left again) do not start it again. */
static void test_pool_grows_back_after_calm(void **state) {
        Sim *sim = sim_new(false);
        to_pool(sim);
        expect(POOL(sim)->steps == 1);
        pool_result(sim, 0, 300 * MB);
        usec_t calm = 0, grew = 0;
        unsigned calm_mark = 0;
        for (unsigned i = 0; i < 1500 && !grew; i++) {
                /* 76 % (trim.at 75 %) and 69 % in turn, a minute each. */
                set_ws(sim, (i / 60) % 2 ? 7 * GB + 600 * MB : 6 * GB + 900 * MB);
                unsigned mark = sim->n;
                sim_tick(sim, SEC);
                if (!calm && sim->e->level < LEVEL_THROTTLE) {
                        calm = sim->now;
                        calm_mark = sim->n;
                }
                for (unsigned j = mark; j < sim->n; j++)
                        if (decision_class(&sim->log[j]) == T_POOL && sim->log[j].pool.grow)
                                grew = sim->at[j];
        }
        expect(calm);
        /* trim came and went meanwhile, and the growth still came grow-after (10m) after calm. */
        expect(find_level(sim, LEVEL_NORMAL, LEVEL_TRIM, _DECISION_CODE_MAX, calm_mark));
        expect(grew >= calm + 10 * 60 * SEC && grew <= calm + 11 * 60 * SEC);
        expect(POOL(sim)->steps == 0);
        check_invariants(sim);
        sim_free(sim);
}

/* The size the server was configured with: the first step finds it (the actuator reports it
 * back), the engine keeps it for that server process and hands it to every later step, up and
 * down; a new server process is found again. In the engine, so that a replay sees it too. */
static void test_pool_configured_kept_by_the_engine(void **state) {
        Sim *sim = sim_new(false);
        sim->p.step[LEVEL_POOL].min_gain = 0;
        sim_policy_changed(sim);
        to_pool(sim);
        const Decision *d = find(sim, T_POOL, 0);
        expect(d && d->pool.configured == 0);
        ActionResult r = { .has_freed = true, .freed = 300 * MB, .baseline = 2 * GB };
        action_feedback_add(&sim->fb, d, &r);
        sim_tick(sim, SEC);
        expect(POOL(sim)->configured == 2 * GB);
        unsigned mark = sim->n;
        for (usec_t t = 0; t < 10 * 60 * SEC && !find(sim, T_POOL, mark); t += SEC) {
                set_ws(sim, 9 * GB + 500 * MB + t / SEC * (MB / 10));
                sim_tick(sim, SEC);
        }
        d = find(sim, T_POOL, mark);
        expect(d && !d->pool.grow && d->pool.configured == 2 * GB);
        /* A new server process: its own configured size, found again. */
        sim->s.pid++;
        sim->s.uptime = SEC;
        sim_tick(sim, SEC);
        expect(POOL(sim)->configured == 0 && POOL(sim)->steps == 0);
        sim_free(sim);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pool_configured_kept_by_the_engine),
                cmocka_unit_test(test_pool_when_reset_not_helping),
                cmocka_unit_test(test_pool_not_below_reset),
                cmocka_unit_test(test_pool_step_out_of_memory_high),
                cmocka_unit_test(test_pool_not_once_growth_is_over),
                cmocka_unit_test(test_pool_at_floor),
                cmocka_unit_test(test_pool_steps_stop_at_floor),
                cmocka_unit_test(test_pool_grows_back_with_hysteresis),
                cmocka_unit_test(test_pool_grows_back_after_calm),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
