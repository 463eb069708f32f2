/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The throttle rung (src/core/rung-throttle.c) and memory.high as limits.c moves it. */
#include "engine-sim.h"

static void test_throttle_planner(void **state) {
        uint64_t want;
        Sim *sim = sim_throttled(&want);

        /* Lowered from the calm value by at most 1 % of the budget per 5 s cooldown, to the
         * working set + 2 %, never lower. */
        uint64_t prev = SIZE_UNLIMITED;
        usec_t prev_t = 0;
        unsigned steps = 0;
        for (unsigned i = 0; i < sim->n; i++) {
                if (decision_class(&sim->log[i]) != T_SET_HIGH || !strstr(sim->log[i].reason, "throttle"))
                        continue;
                if (prev != SIZE_UNLIMITED) {
                        expect(prev - sim->log[i].value <= apply_bp(BUDGET, 100) + 4096);
                        expect(sim->at[i] - prev_t >= 5 * SEC);
                }
                expect(sim->log[i].value >= want);
                prev = sim->log[i].value;
                prev_t = sim->at[i];
                steps++;
        }
        expect(steps >= 1);
        expect(sim->e->limits.high_set == want);
        /* memory.high is paced from its last change, whatever the kind of that change. */
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_SET_HIGH) == last_at(sim, T_SET_HIGH) + 5 * SEC);

        /* The server stalls on memory.high: PSI full over the guard raises it at once. */
        unsigned mark = sim->n;
        sim->s.memory_high = sim->e->limits.high_set;
        sim->s.psi.full.avg10 = 3500;
        sim_tick(sim, SEC);
        const Decision *g = find_text(sim, T_SET_HIGH, "PSI full avg10 35% >= throttle.full-guard 20%", mark);
        expect(g && g->value == PAGE_DOWN(want + apply_bp(BUDGET, 200)));
        expect(THROTTLE(sim)->psi_guard);
        sim->s.memory_high = sim->e->limits.high_set;
        sim->s.psi.full.avg10 = 0;

        /* Calm again: memory.high goes straight back to the calm value (raise fast). */
        mark = sim->n;
        set_ws(sim, 5 * GB);
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL);
        const Decision *c = find_text(sim, T_SET_HIGH, "calm", mark);
        expect(c && c->value == CALM);
        check_invariants(sim);
        sim_free(sim);
}

/* A rise far under throttle.at brings the ladder up on its ETA, then stops: once nothing rises
 * any more, memory.high is not lowered further while the ladder comes down a rung at a time. */
static void test_throttle_holds_when_nothing_rises(void **state) {
        Sim *sim = sim_new(false);
        uint64_t ws = 4 * GB;
        sim->s.uptime = 60 * SEC; /* a server just started: restart.min-uptime holds the restart */
        set_ws(sim, ws);
        sim_run(sim, 20 * SEC, SEC);
        /* +40M a second for 30 s: 40% -> 52% of the budget, an OOM a few minutes away. */
        for (unsigned i = 0; i < 30; i++) {
                ws += 40 * MB;
                set_ws(sim, ws);
                sim_tick(sim, SEC);
        }
        expect(sim->e->level >= LEVEL_THROTTLE);
        /* Flat from here; the trims and resets it may have decided freed nothing. Every lowering
         * comes with an OOM believed ahead ("OOM in", not "too short a look"), never after. */
        unsigned after = 0;
        uint64_t high = SIZE_UNLIMITED;
        for (unsigned i = 0; i < 180; i++) {
                unsigned mark = sim->n;
                sim_tick(sim, SEC);
                resets_free(sim, FINDS_NONE);
                for (unsigned j = mark; j < sim->n; j++) {
                        const Decision *d = &sim->log[j];
                        if (decision_class(d) != T_SET_HIGH)
                                continue;
                        if (strstr(d->reason, "throttle: toward"))
                                after += !strstr(d->reason, "OOM in") || strstr(d->reason, "too short a look");
                        high = d->value;
                }
        }
        expect(after == 0);
        /* It was lowered on the rise (the test sees the rung act), and the ladder came down. */
        expect(find_text(sim, T_SET_HIGH, "throttle: toward", 0));
        expect(sim->e->level == LEVEL_NORMAL && high == CALM);
        check_invariants(sim);
        sim_free(sim);
}

/* A stall at memory.high is seen from its first second: PSI's cumulative full stall time, not
 * avg10 (which took 25 s to reach the guard in the outcome benchmark's growth, the server not
 * answering meanwhile). A stall under the guard does not back off. */
static void test_throttle_guard_sees_stall_at_once(void **state) {
        uint64_t want;
        Sim *sim = sim_throttled(&want);
        expect(sim->e->limits.high_set == want);

        /* 10 % of every second stalled: under the guard (20 %), memory.high stays. */
        unsigned mark = sim->n;
        for (unsigned i = 0; i < 10; i++) {
                sim->s.psi.full.total += SEC / 10;
                sim_tick(sim, SEC);
        }
        expect(count(sim, T_SET_HIGH, mark) == 0);
        expect(!THROTTLE(sim)->psi_guard);

        /* Then 90 % while avg10 has not moved yet: backed off on the next second. */
        mark = sim->n;
        sim->s.psi.full.total += 9 * SEC / 10;
        sim_tick(sim, SEC);
        const Decision *g = find_text(sim, T_SET_HIGH, "PSI full 90% over the last 1s >= throttle.full-guard 20%", mark);
        expect(g && g->value == PAGE_DOWN(want + apply_bp(BUDGET, 200)));
        expect(THROTTLE(sim)->psi_guard);

        /* The stall is over and the working set stands at throttle.at: memory.high is not
         * lowered toward it again, the guard holds while the ladder stays up. */
        uint64_t high = sim->e->limits.high_set;
        sim->s.psi.full.avg10 = 0;
        mark = sim->n;
        sim_run(sim, 60 * SEC, SEC);
        expect(count(sim, T_SET_HIGH, mark) == 0);
        expect(THROTTLE(sim)->psi_guard && sim->e->level >= LEVEL_THROTTLE);

        /* The server grows on to it (within half of the margin): it makes way at once, without
         * PSI saying so again. */
        mark = sim->n;
        set_ws(sim, high - apply_bp(BUDGET, 50));
        sim_tick(sim, SEC);
        g = find_text(sim, T_SET_HIGH, "backed off from a stall until calm: making way as the server presses on it", mark);
        expect(g && g->value == PAGE_DOWN(high + apply_bp(BUDGET, 200)));

        /* Calm: the guard is over, and the throttle may lower memory.high again next time. */
        set_ws(sim, 5 * GB);
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL && !THROTTLE(sim)->psi_guard);
        check_invariants(sim);
        sim_free(sim);
}

/* PSI some while the server presses on memory.high: its threads wait on memory most of the time
 * while PSI full, which counts only the moments all of them wait at once, stays under its guard
 * (seen: some 96-99%, full 7-10%, the server answering nothing for 100 s). */
static void test_throttle_some_guard(void **state) {
        for (unsigned off = 0; off < 2; off++) {
                uint64_t want;
                Sim *sim = sim_throttled(&want);
                if (off)
                        sim->p.some_guard = 0; /* the engine reads its policy at every tick */
                expect(sim->e->limits.high_set == want && sim->s.memory_high == want);
                sim->s.psi.full.avg10 = 900;

                /* Some at 96%, the server well under memory.high: another cause (page cache
                 * reclaimed near memory.max, a neighbour's I/O): memory.high stays. */
                unsigned mark = sim->n;
                sim->s.psi.some.avg10 = 9600;
                sim_run(sim, 10 * SEC, SEC);
                expect(count(sim, T_SET_HIGH, mark) == 0);

                /* Pressing on it (the working set within half of the margin), some under the guard. */
                set_ws(sim, want - apply_bp(BUDGET, 50));
                sim->s.psi.some.avg10 = 4999;
                sim_run(sim, 10 * SEC, SEC);
                expect(count(sim, T_SET_HIGH, mark) == 0);
                expect(!THROTTLE(sim)->psi_guard);

                /* At the guard: backed off by the margin on the next tick (unless the guard is off). */
                sim->s.psi.some.avg10 = 5000;
                sim_tick(sim, SEC);
                const Decision *g = find_text(sim, T_SET_HIGH,
                                              "PSI some avg10 50% >= throttle.some-guard 50%, pressing on memory.high: "
                                              "backing off",
                                              mark);
                if (off) {
                        sim->s.psi.some.avg10 = 9900;
                        sim_run(sim, 30 * SEC, SEC);
                        expect(count(sim, T_SET_HIGH, mark) == 0 && !THROTTLE(sim)->psi_guard);
                } else {
                        expect(g && g->value == PAGE_DOWN(want + apply_bp(BUDGET, 200)));
                        expect(THROTTLE(sim)->psi_guard);
                }
                check_invariants(sim);
                sim_free(sim);
        }
}

/* PSI some as full is read: the last second's share from the cumulative stall time, which sees a
 * stall avg10 trails (seen: the share at 72% while avg10 was still at 25%). */
static void test_throttle_some_guard_sees_stall_at_once(void **state) {
        uint64_t want;
        Sim *sim = sim_throttled(&want);
        set_ws(sim, want - apply_bp(BUDGET, 50)); /* pressing on memory.high */

        /* 30 % of every second: under the guard (50 %), memory.high stays. */
        unsigned mark = sim->n;
        for (unsigned i = 0; i < 10; i++) {
                sim->s.psi.some.total += 3 * SEC / 10;
                sim_tick(sim, SEC);
        }
        expect(count(sim, T_SET_HIGH, mark) == 0 && !THROTTLE(sim)->psi_guard);

        /* Then 70 % while avg10 has not moved: backed off on the next second. */
        sim->s.psi.some.total += 7 * SEC / 10;
        sim_tick(sim, SEC);
        const Decision *g = find_text(sim, T_SET_HIGH,
                                      "PSI some 70% over the last 1s >= throttle.some-guard 50%, pressing on "
                                      "memory.high: backing off",
                                      mark);
        expect(g && g->value == PAGE_DOWN(want + apply_bp(BUDGET, 200)));
        expect(THROTTLE(sim)->psi_guard);
        check_invariants(sim);
        sim_free(sim);
}

/* A rise the short trend has not looked at long enough to believe (short_trend_eta()) lowers no
 * memory.high: without swap a server that reaches it is stalled there, every client with it, and
 * such a rise often ends on its own (seen: 43 s not answering at memory.high, lowered from 76% of
 * the budget on "too short a look for an OOM in 5m"). One lowered on a believed ETA makes way as
 * the server presses on it once the ETA is no longer believed. */
static void test_throttle_short_look(void **state) {
        Sim *sim = sim_new(false);
        sim->p.step[LEVEL_RESET].enabled = sim->p.step[LEVEL_RESTART].enabled = false;
        sim->p.step[LEVEL_THROTTLE].at = 0; /* off: the ETA alone decides */
        sim->p.trend_min_points = sim->p.trend_points; /* the window's trend not known in this test */
        sim_policy_changed(sim);
        sim->s.uptime = 60 * SEC;
        uint64_t ws = BUDGET / 100 * 76;
        set_ws(sim, ws);
        for (unsigned i = 0; i < 20; i++) {
                sim_tick(sim, SEC);
                trims_free(sim, 0);
        }
        /* 2M a second: an OOM far off, never believed on the last minute's look. */
        unsigned mark = sim->n;
        for (unsigned i = 0; i < 90; i++) {
                set_ws(sim, ws += 2 * MB);
                sim_tick(sim, SEC);
                trims_free(sim, 0);
        }
        expect(sim->e->level >= LEVEL_THROTTLE && sim->out.eta == USEC_INFINITY);
        expect(find_text(sim, T_LEVEL, "too short a look", mark));
        expect(!find_text(sim, T_SET_HIGH, "throttle: toward", mark));

        /* 10M a second: believed (an OOM in a few minutes), lowered toward working set + 2%. */
        for (unsigned i = 0; i < 60 && !find_text(sim, T_SET_HIGH, "throttle: toward", mark); i++) {
                set_ws(sim, ws += 10 * MB);
                sim_tick(sim, SEC);
        }
        const Decision *low = find_text(sim, T_SET_HIGH, "throttle: toward", mark);
        expect(low && strstr(low->reason, "OOM in") && !strstr(low->reason, "too short a look"));
        uint64_t high = sim->e->limits.high_set;
        expect(high < CALM);

        /* 1M a second: lowered on while the ETA is still believed, not once it is no longer;
         * pressing on memory.high then, it makes way. */
        mark = sim->n;
        for (unsigned i = 0; i < 1200 && !find_text(sim, T_SET_HIGH, "making way", mark); i++) {
                high = sim->s.memory_high;
                set_ws(sim, MIN(ws += 1 * MB, high));
                sim_tick(sim, SEC);
        }
        const Decision *way = find_text(sim, T_SET_HIGH, "no OOM believed ahead (too short a look): making way as the "
                                                         "server presses on it", mark);
        expect(way && way->value == PAGE_DOWN(high + apply_bp(BUDGET, 200)) && way->value <= CALM);
        for (unsigned i = 0; i < sim->n; i++)
                expect(!(decision_class(&sim->log[i]) == T_SET_HIGH && strstr(sim->log[i].reason, "throttle: toward") &&
                         strstr(sim->log[i].reason, "too short a look")));
        check_invariants(sim);
        sim_free(sim);
}

static void test_foreign_memory_high_adopted(void **state) {
        Sim *sim = sim_new(false);
        set_ws(sim, 5 * GB);
        sim_tick(sim, SEC);
        uint64_t calm = sim->e->limits.high_set;
        sim->s.memory_high = calm;
        sim_run(sim, 30 * SEC, SEC);
        /* An operator sets 8G: noticed twice after settle, adopted, never fought. */
        unsigned mark = sim->n;
        sim->s.memory_high = 8 * GB;
        sim_run(sim, 60 * SEC, SEC);
        const Decision *ev = find_code(sim, T_EVENT, EVENT_HIGH_ADOPTED, mark);
        expect(ev && strstr(ev->reason, "memory.high is 8G, not the 9.7G memgov set"));
        expect(count(sim, T_SET_HIGH, mark) == 0);
        expect(sim->e->limits.high_set == 8 * GB);
        /* Adopting it counts as a change: the throttle cooldown runs from there, not from memgov's
         * last write (the approximation `status` once made). */
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_SET_HIGH) ==
               last_at(sim, T_EVENT) + sim->p.step[LEVEL_THROTTLE].cooldown);
        expect(last_at(sim, T_EVENT) > last_at(sim, T_SET_HIGH));
        check_invariants(sim);
        sim_free(sim);

        /* In dry-run the sample never shows our writes: nothing is taken for a foreign change. */
        sim = sim_new(true);
        set_ws(sim, 5 * GB);
        sim_run(sim, 120 * SEC, SEC);
        expect(count(sim, T_EVENT, 0) == 0);
        check_invariants(sim);
        sim_free(sim);
}

/* A throttle that steps more often than settle: a read from before its last write landed is not
 * someone else's value, and a value that is neither is, and is adopted before the next step
 * writes over it (on a real cgroup, memgov's next step did, 2 s after a value set 16M under its
 * own, with settle at 3 s). */
static void test_foreign_memory_high_between_steps(void **state) {
        Sim *sim = sim_new(false);
        sim->p.settle = 3 * SEC;
        sim->p.step[LEVEL_THROTTLE].cooldown = 2 * SEC;
        sim_policy_changed(sim);
        set_ws(sim, 9 * GB);
        unsigned mark = sim->n;
        const Decision *step = NULL;
        for (unsigned i = 0; i < 60 && !step; i++) {
                mark = sim->n;
                sim_tick(sim, SEC);
                step = find_text(sim, T_SET_HIGH, "throttle:", mark);
        }
        expect(step && step->old_value != SIZE_UNLIMITED && step->value < step->old_value);
        uint64_t before = step->old_value;

        /* The write has not landed yet when the next sample is read: that is not a change. */
        uint64_t ours = sim->e->limits.high_set;
        sim->s.memory_high = before;
        sim_tick(sim, SEC);
        expect(sim->e->limits.high_mismatch == 0 && count(sim, T_EVENT, mark) == 0);
        sim->s.memory_high = ours;
        sim_tick(sim, SEC);

        /* Right after memgov's next step, an operator sets 16M under it: adopted, not written over. */
        for (unsigned i = 0; i < 10 && last_at(sim, T_SET_HIGH) != sim->now; i++)
                sim_tick(sim, SEC);
        expect(last_at(sim, T_SET_HIGH) == sim->now);
        uint64_t foreign = sim->e->limits.high_set - 16 * MB;
        mark = sim->n;
        sim->s.memory_high = foreign;
        sim_run(sim, 2 * SEC, SEC);
        const Decision *ev = find_code(sim, T_EVENT, EVENT_HIGH_ADOPTED, mark);
        expect(ev != NULL);
        for (unsigned i = mark; i < sim->n && ev; i++)
                expect(decision_class(&sim->log[i]) != T_SET_HIGH || &sim->log[i] > ev);
        expect(sim->e->limits.high_ceiling == foreign && sim->s.memory_high <= foreign);
        check_invariants(sim);
        sim_free(sim);
}

/* The server back from the restart stalls at its limit again within restart.cooldown (the storm
 * outlasted the restart): the restart held back, memory.high at the calm value has nothing left to
 * make way to, and a memory.high under memory.max only turns the kernel's kill into a stall. It
 * goes out of the way (max) while the emergency lasts, and comes back to the calm value after. */
static void test_high_out_of_the_way_when_the_restart_is_held(void **state) {
        Sim *sim = sim_new(false);
        stalled_at_limit(sim, 3000);
        expect(find(sim, T_RESTART, 0));
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        sim->s.psi.full.avg10 = 0;
        set_ws(sim, 2 * GB);
        sim_run(sim, 300 * SEC, SEC);
        uint64_t calm = sim->s.memory_high;
        expect(calm != SIZE_UNLIMITED && calm < BUDGET);

        unsigned mark = sim->n;
        sim->s.psi.full.avg10 = 3000;
        set_ws(sim, BUDGET - apply_bp(BUDGET, 300));
        for (unsigned i = 0; i < 120; i++) {
                sim_tick(sim, SEC);
                resets_free_nothing(sim);
        }
        const Decision *gone = find_text(sim, T_SET_HIGH, "nothing left to make way to", mark);
        expect(gone && gone->value == SIZE_UNLIMITED && gone->old_value == calm);
        expect(!find(sim, T_RESTART, mark) && sim->s.memory_high == SIZE_UNLIMITED);
        /* Not lowered again while the stall lasts. */
        expect(count(sim, T_SET_HIGH, (unsigned) (gone - sim->log) + 1) == 0);
        check_invariants(sim);

        /* Over: back to the calm value. */
        sim->s.psi.full.avg10 = 0;
        set_ws(sim, BUDGET / 2);
        sim_run(sim, 600 * SEC, SEC);
        expect(sim->s.memory_high == calm);
        sim_free(sim);

        /* Without the stall (PSI full under the guard), memory.high is not given up. */
        sim = sim_new(false);
        stalled_at_limit(sim, 3000);
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        sim->s.psi.full.avg10 = 0;
        set_ws(sim, 2 * GB);
        sim_run(sim, 60 * SEC, SEC);
        mark = sim->n;
        sim->s.psi.full.avg10 = 500;
        set_ws(sim, BUDGET - apply_bp(BUDGET, 300));
        for (unsigned i = 0; i < 120; i++) {
                sim_tick(sim, SEC);
                resets_free_nothing(sim);
        }
        expect(!find_text(sim, T_SET_HIGH, "nothing left to make way to", mark) && sim->s.memory_high != SIZE_UNLIMITED);
        sim_free(sim);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_throttle_holds_when_nothing_rises),
                cmocka_unit_test(test_throttle_planner),
                cmocka_unit_test(test_throttle_guard_sees_stall_at_once),
                cmocka_unit_test(test_throttle_some_guard),
                cmocka_unit_test(test_throttle_some_guard_sees_stall_at_once),
                cmocka_unit_test(test_throttle_short_look),
                cmocka_unit_test(test_foreign_memory_high_adopted),
                cmocka_unit_test(test_foreign_memory_high_between_steps),
                cmocka_unit_test(test_high_out_of_the_way_when_the_restart_is_held),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
