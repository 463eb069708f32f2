/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The reset rung and its emergency reset (src/core/rung-reset.c). */
#include "engine-sim.h"

/* Stalled at restart.at while the working set still creeps up (its OOM further than
 * restart.emergency-eta): a stall's emergency reset may end any session, growing or not. */
static void test_emergency_reset_stalled_any_session(void **state) {
        Sim *sim = sim_new(false);
        stall_at_limit(sim, 0);
        const Decision *er = NULL;
        for (unsigned i = 0; i < 300 && !er; i++) {
                /* The trend known first, then the stall. */
                if (i == 90)
                        sim->s.psi.full.avg10 = 3000;
                set_ws(sim, sim->s.memory_current + 300 * 1024);
                sim_tick(sim, SEC);
                resets_free_nothing(sim);
                er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        }
        expect(er && strstr(er->reason, "stalled at restart.at"));
        expect(sim->out.slope > 0 && sim->out.eta > sim->p.emergency_eta);
        expect(!er->reset.growing_only && !strstr(er->reason, "do not grow"));
        sim_free(sim);
}

/* The emergency reset is once an emergency and not within reset.cooldown of the last: of the
 * sessions of one server process. The storm's sessions back on the new server, in the emergency
 * that ran on across the restart, are ended in their turn. */
static void test_emergency_reset_on_the_new_process(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        climb_into_high(sim, 30 * MB, 600, true, FINDS_NONE);
        const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        const Decision *r = find(sim, T_RESTART, 0);
        expect(er && r && er < r);
        /* On its ETA: what grows, and what does not only at the growth over emergency-eta (the
         * climb's 30M a second for 10 minutes, give or take the trend's estimate). */
        expect(er->reset.growing_only && strstr(er->reason, "; those that do not grow only at "));
        expect(er->reset.still_enough >= 20 * MB * 600 && er->reset.still_enough <= 40 * MB * 600);
        usec_t er_at = sim->at[er - sim->log];

        unsigned mark = sim->n;
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 5 * GB);
        sim_tick(sim, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_DONE, mark));
        for (unsigned i = 0; i < 120 && !find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, mark); i++) {
                set_ws(sim, MIN(sim->s.memory_current + 30 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
                resets_free(sim, 100 * MB);
        }
        const Decision *again = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, mark);
        /* In the emergency that began on the old process, within the backoff of its reset's
         * failure. */
        expect(again && sim->at[again - sim->log] - er_at < sim->p.step[LEVEL_RESET].backoff);
        for (unsigned i = (unsigned) (er - sim->log); i < (unsigned) (again - sim->log); i++)
                expect(!decision_is_action(&sim->log[i]) || sim->log[i].emergency);
        check_invariants(sim);
        sim_free(sim);
}

/* From the emergency reset `from` on, each that found no session is followed by one decided on
 * the working set's growth alone ("; again: "), once it has grown by reset.emergency-min-memory,
 * doubled for each one in a row that found none up to a sixteenth of the budget, above the lowest
 * working set the log shows since. */
static void check_regrowth(const Sim *sim, const Decision *from) {
        unsigned n = 0, tries = 0;
        uint64_t failed_at = 0;
        for (unsigned i = (unsigned) (from - sim->log); i < sim->n; i++) {
                const Decision *d = &sim->log[i];
                if (d->kind == DECISION_EFFECT && d->action == ACTION_RESET && d->code == EFFECT_FAILED) {
                        expect(strstr(d->reason, "the emergency reset again once the working set has grown"));
                        failed_at = d->working_set;
                        n++;
                        continue;
                }
                /* A memory.high lowered under it holds the working set back (the sims' climbs). */
                if (n > 0 && d->working_set > 0)
                        failed_at = MIN(failed_at, d->working_set);
                if (n > 0 && decision_class(d) == T_SET_HIGH)
                        failed_at = MIN(failed_at, d->value);
                if (d->code != ACTION_EMERGENCY_RESET || decision_class(d) != T_RESET || d == from)
                        continue;
                /* One by the ordinary rules (a new emergency, reset.cooldown over) starts afresh. */
                if (!strstr(d->reason, "; again: ")) {
                        n = 0;
                        continue;
                }
                expect(n > 0);
                uint64_t g = MIN(sim->p.reset_emergency_min_memory << (n - 1), BUDGET / 16);
                expect(d->working_set >= failed_at + MAX(g, sim->p.reset_emergency_min_memory));
                tries++;
        }
        expect(tries >= 1);
}

static void test_emergency_reset_at_the_reset_rung(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        unsigned at = climb_into_high(sim, 30 * MB, 600, false, 100 * MB);
        const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        expect(er && strstr(er->reason, "OOM under restart.emergency-eta 10m"));
        expect(er->emergency && er->reset.max == sim->p.reset_emergency_max &&
               er->reset.min_memory == sim->p.reset_emergency_min_memory);
        /* No storm judged by admission: the largest first. */
        expect(!er->reset.newest_first && strstr(er->reason, "of the largest session(s) holding at least 8M, idle "
                                                             "sessions first"));
        /* The first reset of the emergency, and nothing above the reset rung before it. */
        expect(find(sim, T_RESET, 0) == er);
        expect(!find(sim, T_POOL, 0) && !find(sim, T_RESTART, 0));
        /* Well below restart.at, and not pressing on memory.high yet. */
        expect(at < sim->p.step[LEVEL_RESTART].at);
        expect(sim->s.memory_current + apply_bp(BUDGET, sim->p.throttle_margin) / 2 < sim->s.memory_high);

        /* It freed 100M; the server climbs on. After reset.cooldown, the restart held back by
         * min-uptime, it comes again; that one finds no session, and comes again only as the
         * working set grows by reset.emergency-min-memory, doubled for each in a row that found
         * none: memory.high makes way, and at restart.at, in the emergency, the restart
         * min-uptime would hold. */
        unsigned mark = sim->n;
        at = climb_into_high(sim, 30 * MB, 600, true, FINDS_NONE);
        const Decision *again = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, mark);
        expect(again && strstr(again->reason, "; the restart held back"));
        expect(sim->at[again - sim->log] - sim->at[er - sim->log] >= sim->p.step[LEVEL_RESET].cooldown);
        check_regrowth(sim, again);
        const Decision *h = find_code(sim, T_HOLD, HOLD_MIN_UPTIME, 0);
        expect(h && h <= again);
        const Decision *way = find_text(sim, T_SET_HIGH, "its reset done and the restart held back: making way", mark);
        const Decision *r = find(sim, T_RESTART, mark);
        expect(way && r && way < r);
        /* Once the reset is over: not in the tick that decided it. */
        expect(way && sim->at[way - sim->log] > sim->at[again - sim->log]);
        expect(at >= sim->p.step[LEVEL_RESTART].at);
        check_invariants(sim);

        /* The new server grows again at once. Within restart.cooldown the restart is not called
         * for; the emergency reset comes, below restart.at, and, as it frees memory, again after
         * reset.cooldown. */
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_tick(sim, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_DONE, mark));
        mark = sim->n;
        const Decision *first = NULL, *second = NULL;
        for (unsigned i = 0; i < 900 && !second; i++) {
                set_ws(sim, MIN(sim->s.memory_current + 15 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
                resets_free(sim, 50 * MB);
                first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, mark);
                second = first ? find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (first - sim->log) + 1) : NULL;
        }
        expect(first && second && !strstr(first->reason, "held back"));
        expect(ratio_bp(sim->s.memory_current, BUDGET) < sim->p.step[LEVEL_RESTART].at);
        expect(!find(sim, T_RESTART, mark));
        check_invariants(sim);
        sim_free(sim);

        /* A climb where the emergency reset ends sessions but the server's RSS does not fall
         * around it (its other sessions grow meanwhile: the linear growth of the outcome
         * benchmark): it comes again after reset.cooldown. Where it finds no session: as the
         * working set grows. */
        for (int none = 0; none < 2; none++) {
                sim = sim_new(false);
                sim->s.uptime = 2 * USEC_PER_MINUTE;
                set_ws(sim, 2 * GB);
                for (unsigned i = 0, left = 180; i < 900 && left > 0; i++) {
                        set_ws(sim, MIN(sim->s.memory_current + 10 * MB, sim->s.memory_high));
                        sim_tick(sim, SEC);
                        resets_free(sim, none ? FINDS_NONE : 0);
                        if (find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0))
                                left--;
                }
                first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
                expect(first && sim->now - sim->at[first - sim->log] > 2 * sim->p.step[LEVEL_RESET].cooldown);
                expect(sim->out.eta <= sim->p.emergency_eta &&
                       ratio_bp(sim->s.memory_current, BUDGET) < sim->p.step[LEVEL_RESTART].at);
                second = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (first - sim->log) + 1);
                expect(second);
                if (none)
                        check_regrowth(sim, first);
                else
                        expect(!strstr(second->reason, "; again: ") &&
                               sim->at[second - sim->log] - sim->at[first - sim->log] >= sim->p.step[LEVEL_RESET].cooldown);
                check_invariants(sim);
                sim_free(sim);
        }

        sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        climb_into_high(sim, 2 * MB, 1800, false, 0);
        expect(sim->s.memory_high != SIZE_UNLIMITED && sim->s.memory_current + apply_bp(BUDGET, 100) >= sim->s.memory_high);
        expect(!find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0));
        sim_free(sim);
}

/* A reset at reset.min-memory still running (a server slow to list its sessions, longer than
 * reset.cooldown) when the rise becomes an emergency: neither a pool step, a restart (held back
 * for a young server, due for an old one), another reset nor a trim is queued ahead of the
 * emergency reset, which comes once that reset is over. In the outcome benchmark's storm, the pool
 * step went first, its connection waited for a handshake, and the emergency reset ran at 90% of
 * the budget, where the server no longer answered the query listing its sessions. */
/* Sessions that grow only after an emergency reset found none of them at
 * reset.emergency-min-memory: it comes again as the working set grows, doubled for each one in a
 * row that found none, and ends them once they hold that much, well within reset.cooldown.
 * Seen otherwise in the outcome benchmark's storm: 13 sessions under 200K when it found none,
 * held back by the cooldown and the backoff while each grew to some 19M, and the OOM kill. */
static void test_emergency_reset_finds_sessions_grown(void **state) {
        Sim *sim = sim_new(false);
        sim->p.step[LEVEL_RESTART].enabled = false;
        sim_policy_changed(sim);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        const unsigned sessions = 13;
        uint64_t others = 5 * GB, each = 177 * 1024;
        const Decision *first = NULL;
        /* A storm of small sessions: the emergency, and its reset finding none. */
        for (unsigned i = 0; i < 600 && !first; i++) {
                others += 30 * MB;
                set_ws(sim, MIN(others + sessions * each, sim->s.memory_high));
                sim_tick(sim, SEC);
                resets_free(sim, FINDS_NONE);
                first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        }
        expect(first);
        /* The storm over, the 13 sessions grow 2M/s each. */
        uint64_t ended_at = 0;
        for (unsigned i = 0; i < 120 && !ended_at; i++) {
                each += 2 * MB;
                set_ws(sim, MIN(others + sessions * each, sim->s.memory_high));
                sim_tick(sim, SEC);
                for (unsigned j = 0; j < sim->out.n_decisions; j++) {
                        const Decision *d = &sim->out.decisions[j];
                        if (decision_class(d) != T_RESET)
                                continue;
                        ActionResult r = { .error = -ENOENT, .found_nothing = true };
                        if (each >= d->reset.min_memory) {
                                r = (ActionResult) { .has_freed = true, .freed = sessions * each };
                                ended_at = each;
                        }
                        action_feedback_add(&sim->fb, d, &r);
                }
        }
        const Decision *ended = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (first - sim->log) + 1);
        /* Ended once each held at least the floor, before twice the floor and a second's growth,
         * and within reset.cooldown of the one that found none. */
        expect(ended_at >= sim->p.reset_emergency_min_memory && ended_at <= 2 * sim->p.reset_emergency_min_memory + 2 * MB);
        expect(ended && sim->now - sim->at[first - sim->log] < sim->p.step[LEVEL_RESET].cooldown);
        check_regrowth(sim, first);
        check_invariants(sim);
        sim_free(sim);
}

/* An emergency reset that ended every session at reset.emergency-min-memory, fewer than its max
 * (the storm's other sessions smaller, growing): it comes again once the working set has grown by
 * the floor, well within reset.cooldown. One that ended as many as its max comes again after the
 * cooldown, as before.
 * Seen held by the cooldown: 10 of 66 ended, the rest growing at 23 G/h, the restart 18 s on. */
static void test_emergency_reset_again_after_fewer(void **state) {
        for (unsigned fewer = 0; fewer < 2; fewer++) {
                Sim *sim = sim_new(false);
                sim->p.step[LEVEL_RESTART].enabled = false;
                sim_policy_changed(sim);
                sim->s.uptime = 2 * USEC_PER_MINUTE;
                const Decision *first = NULL;
                usec_t first_at = 0;
                for (unsigned i = 0; i < 600 && count(sim, T_RESET, 0) < 3; i++) {
                        set_ws(sim, MIN(sim->s.memory_current + 30 * MB, sim->s.memory_high));
                        sim_tick(sim, SEC);
                        for (unsigned j = 0; j < sim->out.n_decisions; j++)
                                if (decision_class(&sim->out.decisions[j]) == T_RESET) {
                                        ActionResult r = { .has_freed = true, .freed = 90 * MB, .found_fewer = fewer };
                                        action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                                }
                        if (!first && (first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0)))
                                first_at = sim->now;
                }
                expect(first);
                const Decision *next = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (first - sim->log) + 1);
                expect(next);
                usec_t gap = sim->at[next - sim->log] - first_at;
                if (fewer) {
                        expect(gap < 10 * SEC && strstr(next->reason, "; again: ") &&
                               strstr(next->reason, "of growth since the last found fewer than its max"));
                        expect(next->working_set >= first->working_set + sim->p.reset_emergency_min_memory);
                } else
                        expect(gap >= sim->p.step[LEVEL_RESET].cooldown && !strstr(next->reason, "; again: "));
                check_invariants(sim);
                sim_free(sim);
        }
}

/* A storm whose sessions never reach the floor: the growth waited for doubles up to a sixteenth of
 * the budget, and stays there, so that sessions that do grow are found at most that late. */
static void test_emergency_reset_regrowth_capped(void **state) {
        Sim *sim = sim_new(false);
        sim->p.reset_emergency_min_memory = 256 * MB;
        sim->p.step[LEVEL_RESTART].enabled = false;
        sim_policy_changed(sim);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        for (unsigned i = 0; i < 600 && count(sim, T_RESET, 0) < 5; i++) {
                set_ws(sim, MIN(sim->s.memory_current + 30 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
                resets_free(sim, FINDS_NONE);
        }
        const Decision *first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        expect(first);
        check_regrowth(sim, first);
        /* 256M, 512M, then the cap, 640M, and the cap again. */
        uint64_t prev = 0;
        unsigned n = 0, capped = 0;
        for (unsigned i = (unsigned) (first - sim->log); i < sim->n; i++) {
                const Decision *d = &sim->log[i];
                if (d->code != ACTION_EMERGENCY_RESET || decision_class(d) != T_RESET)
                        continue;
                if (n > 0) {
                        expect(d->working_set - prev <= BUDGET / 16 + 2 * 30 * MB);
                        capped += d->working_set - prev > 512 * MB + 2 * 30 * MB;
                }
                prev = d->working_set;
                n++;
        }
        expect(n >= 4 && capped >= 2);
        check_invariants(sim);
        sim_free(sim);

        /* reset.emergency-min-memory 0: one that found none found no session that may be reset at
         * all, and growth changes nothing: not again within reset.cooldown. */
        sim = sim_new(false);
        sim->p.reset_emergency_min_memory = 0;
        sim->p.step[LEVEL_RESTART].enabled = false;
        sim_policy_changed(sim);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        climb_into_high(sim, 30 * MB, 600, false, FINDS_NONE);
        first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        expect(first);
        for (unsigned i = 0; i < 50; i++) {
                set_ws(sim, MIN(sim->s.memory_current + 30 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
                resets_free(sim, FINDS_NONE);
        }
        expect(!find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (first - sim->log) + 1));
        sim_free(sim);
}

/* A young server climbing in an emergency: its emergency reset finds no session, and the retry on
 * growth is still out (a swamped server's listing) when the working set reaches restart.at. The
 * restart does not wait for that long shot: it comes at once, the OOM still further away than
 * sql.query-timeout (waiting for the first emergency reset is test_emergency_reset_not_behind_the_pool's). */
static void test_restart_not_held_by_a_retry(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        for (unsigned i = 0; i < 900 && !find(sim, T_RESTART, 0); i++) {
                set_ws(sim, MIN(sim->s.memory_current + 30 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
                for (unsigned j = 0; j < sim->out.n_decisions; j++) {
                        const Decision *d = &sim->out.decisions[j];
                        if (decision_class(d) != T_RESET)
                                continue;
                        if (strstr(d->reason, "; again: "))
                                sim->s.pending |= 1u << ACTION_RESET; /* out, its answer never comes */
                        else
                                action_feedback_add(&sim->fb, d, &(ActionResult) { .error = -ENOENT, .found_nothing = true });
                }
        }
        const Decision *retry = find_text(sim, T_RESET, "; again: ", 0);
        const Decision *r = find(sim, T_RESTART, 0);
        expect(retry && r && retry < r);
        expect(!strstr(r->reason, "not waited for"));
        expect(sim->out.eta > sim->p.sql_query_timeout);
        check_invariants(sim);
        sim_free(sim);
}

static void test_emergency_reset_not_behind_the_pool(void **state) {
        for (int young = 0; young < 2; young++) {
                Sim *sim = sim_new(false);
                /* A trim that helps, and may come again within the wait. */
                sim->p.step[LEVEL_TRIM].cooldown = 30 * SEC;
                sim_policy_changed(sim);
                if (young)
                        sim->s.uptime = 2 * USEC_PER_MINUTE;
                for (unsigned i = 0; i < 600 && !find(sim, T_RESET, 0); i++) {
                        set_ws(sim, sim->s.memory_current + 5 * MB); /* OOM in about 17 minutes */
                        sim_tick(sim, SEC);
                        trims_free(sim, 100 * MB);
                }
                expect(find(sim, T_TRIM, 0) && !sim->e->act[ACTION_TRIM].spent);
                const Decision *r = find(sim, T_RESET, 0);
                expect(r && !r->emergency && r->code != ACTION_EMERGENCY_RESET);
                Decision reset = *r;
                sim->s.pending = 1u << ACTION_RESET;
                unsigned mark = sim->n;
                for (unsigned i = 0; i < 90; i++) {
                        set_ws(sim, MIN(sim->s.memory_current + 20 * MB, sim->s.memory_high));
                        sim_tick(sim, SEC);
                        trims_free(sim, 100 * MB);
                }
                /* The ladder is at the top, in the emergency: it waits for the reset. */
                expect(sim->e->level >= LEVEL_RESTART && sim->out.eta <= sim->p.emergency_eta);
                expect(!find(sim, T_POOL, mark) && !find(sim, T_RESTART, mark) && !find(sim, T_RESET, mark) &&
                       !find(sim, T_TRIM, mark));
                /* It found none at reset.min-memory. */
                sim->s.pending = 0;
                ActionResult res = { .error = -ENOENT };
                action_feedback_add(&sim->fb, &reset, &res);
                set_ws(sim, MIN(sim->s.memory_current + 20 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
                const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, mark);
                expect(er && !find(sim, T_POOL, mark) && !find(sim, T_RESTART, mark));
                expect(find_text(sim, T_EFFECT, "reset failed: not tried again for 10m (an emergency reset excepted)", mark));
                /* The old server's restart comes once the emergency reset is over. */
                resets_free_nothing(sim);
                sim_tick(sim, SEC);
                expect(young ? !find(sim, T_RESTART, mark) : find(sim, T_RESTART, mark) != NULL);
                check_invariants(sim);
                sim_free(sim);
        }
}

/* A reset at reset.min-memory whose result is not in yet, though the actuator no longer counts
 * it as pending (it finished; the daemon has not collected its result), when the rise becomes
 * an emergency: no reset is decided before that result, so that a failure is charged to the
 * reset that failed. It found none: that does not hold the emergency reset back, which ends
 * sessions, and again after reset.cooldown; nor does the emergency reset's success end the
 * backoff announced for the reset at reset.min-memory (check_invariants). */
static void test_emergency_reset_after_an_uncollected_reset(void **state) {
        Sim *sim = sim_new(false);
        sim->p.settle = 5 * USEC_PER_MINUTE; /* the working set does not stand in for the result */
        sim_policy_changed(sim);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        for (unsigned i = 0; i < 1800 && !find(sim, T_RESET, 0); i++) {
                set_ws(sim, sim->s.memory_current + 3 * MB); /* OOM in about 28 minutes */
                sim_tick(sim, SEC);
                trims_free(sim, 100 * MB);
        }
        const Decision *r = find(sim, T_RESET, 0);
        expect(r && r->code != ACTION_EMERGENCY_RESET);
        Decision reset = *r;
        unsigned mark = sim->n;
        for (unsigned i = 0; i < 90; i++) {
                set_ws(sim, MIN(sim->s.memory_current + 20 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
        }
        expect(sim->out.eta <= sim->p.emergency_eta && !find(sim, T_RESET, mark));
        ActionResult res = { .error = -ENOENT };
        action_feedback_add(&sim->fb, &reset, &res);
        set_ws(sim, MIN(sim->s.memory_current + 20 * MB, sim->s.memory_high));
        sim_tick(sim, SEC);
        const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, mark);
        expect(er && find_text(sim, T_EFFECT, "reset failed: not tried again for 10m (an emergency reset excepted)", mark));
        /* It ends sessions (100M by its measure); the server climbs on, the emergency lasts. */
        for (unsigned i = 0; i < 300; i++) {
                resets_free(sim, 100 * MB);
                set_ws(sim, MIN(sim->s.memory_current + 2 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
        }
        const Decision *again = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (er - sim->log) + 1);
        expect(again && sim->at[again - sim->log] - sim->at[er - sim->log] < sim->p.step[LEVEL_RESET].backoff);
        /* The reset at reset.min-memory is still held back by the backoff its failure announced,
         * which the emergency resets' results did not end. */
        expect(sim->e->act[ACTION_RESET].spent &&
               sim->e->act[ACTION_RESET].backoff_until >= sim->at[er - sim->log] + sim->p.step[LEVEL_RESET].backoff);
        check_invariants(sim);
        sim_free(sim);
}

static void test_emergency_reset_flickering(void **state) {
        Sim *sim = flicker(600, 0);
        expect(count(sim, T_RESET, 0) >= 2);
        expect(!find_text(sim, T_SET_HIGH, "making way", 0));
        check_invariants(sim);
        sim_free(sim);

        /* The same, every reset failing (the server's socket refuses memgov): a failed emergency
         * reset is not tried again within reset.backoff, whatever the emergency does; the failure
         * of a reset at reset.min-memory would not have held it back, and its line says so. */
        sim = flicker(1300, -EPERM);
        const Decision *first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        const Decision *second = first ? find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (first - sim->log) + 1) : NULL;
        expect(first && second && count(sim, T_RESET, 0) == 3);
        expect(sim->at[second - sim->log] - sim->at[first - sim->log] >= sim->p.step[LEVEL_RESET].backoff);
        const Decision *failed = find(sim, T_EFFECT, (unsigned) (first - sim->log));
        expect(failed && failed->code == EFFECT_FAILED && !strstr(failed->reason, "excepted"));
        check_invariants(sim);
        sim_free(sim);

        /* A young server climbing into the throttle's memory.high, PSI full under the guard: its
         * emergency reset found nothing; with the restart, memory.high makes way up to
         * restart.at; without one, there is nothing to make way for. */
        for (int restart = 0; restart < 2; restart++) {
                sim = sim_new(false);
                sim->p.step[LEVEL_RESTART].enabled = restart;
                sim_policy_changed(sim);
                sim->s.uptime = 2 * USEC_PER_MINUTE;
                climb_into_high(sim, 30 * MB, 300, true, FINDS_NONE);
                expect(find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0));
                expect(!find_text(sim, T_SET_HIGH, "making way", 0) == !restart);
                sim_free(sim);
        }
}

/* A dry run (or a replay of a trace without the reset's own measurement): the working set falls
 * after the emergency reset, but nothing was carried out, and it comes once an emergency. */
/* The emergency reset not carried out (the session kept for the actions still awaits the reply
 * to its last statement: the server answers nothing): no failure, no backoff of reset.backoff;
 * it comes again once reset.cooldown is over while the emergency lasts. */
static void test_emergency_reset_not_done(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        const Decision *first = NULL, *second = NULL;
        for (unsigned i = 0; i < 900 && !second; i++) {
                set_ws(sim, MIN(sim->s.memory_current + 30 * MB, sim->s.memory_high));
                sim_tick(sim, SEC);
                for (unsigned j = 0; j < sim->out.n_decisions; j++)
                        if (decision_class(&sim->out.decisions[j]) == T_RESET) {
                                ActionResult r = { .not_done = true };
                                snprintf(r.detail, sizeof(r.detail), "reset not carried out: no reply");
                                action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                        }
                first = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
                if (first)
                        second = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (first - sim->log) + 1);
        }
        expect(first && second);
        usec_t apart = sim->at[second - sim->log] - sim->at[first - sim->log];
        expect(apart >= sim->p.step[LEVEL_RESET].cooldown && apart < sim->p.step[LEVEL_RESET].backoff);
        const Decision *nd = find_code(sim, T_EFFECT, EFFECT_NOT_DONE, (unsigned) (first - sim->log));
        expect(nd && nd < second && strstr(nd->reason, "reset not carried out: not judged, no backoff"));
        expect(!find_code(sim, T_EFFECT, EFFECT_FAILED, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_emergency_reset_dry_run_once(void **state) {
        Sim *sim = sim_new(true);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        unsigned after = 0, calm = 0;
        for (unsigned i = 0; i < 900 && after < 130; i++) {
                uint64_t ws = sim->s.memory_current + 20 * MB;
                for (unsigned j = 0; j < sim->out.n_decisions; j++)
                        if (sim->out.decisions[j].code == ACTION_EMERGENCY_RESET &&
                            decision_class(&sim->out.decisions[j]) == T_RESET)
                                ws -= 50 * MB;
                set_ws(sim, MIN(ws, sim->s.memory_high));
                sim_tick(sim, SEC);
                if (find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0)) {
                        after++;
                        if (sim->out.eta > sim->p.emergency_eta)
                                calm++;
                }
        }
        /* One emergency, more than two reset.cooldowns long. */
        expect(after == 130 && calm == 0);
        const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        const Decision *eff = NULL;
        for (unsigned i = (unsigned) (er - sim->log); i < sim->n && !eff; i++)
                if (sim->log[i].kind == DECISION_EFFECT && sim->log[i].action == ACTION_RESET)
                        eff = &sim->log[i];
        /* What the working set did is counted as freed; nothing measured it. */
        expect(eff && eff->code == EFFECT_FREED && eff->value >= sim->p.reset_emergency_min_memory);
        expect(!find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (er - sim->log) + 1));
        sim_free(sim);
}

static void test_reset_recheck_and_params(void **state) {
        Sim *sim = sim_new(true);
        sim->p.reset_in_trx = IN_TRX_EMERGENCY;
        sim_policy_changed(sim);
        set_ws(sim, 9 * GB + 300 * MB); /* 93 % */
        sim_run(sim, 60 * SEC, SEC);
        const Decision *r = find(sim, T_RESET, 0);
        expect(r && r->reset.max == 4 && r->reset.min_memory == 64 * MB && r->reset.min_idle == 30 * SEC);
        expect(r && !r->reset.in_trx); /* not an emergency */
        expect(r->reset.max == 4 && r->reset.min_memory == 64 * MB);

        /* Level stays at reset through hysteresis, but the working set fell under reset.at:
         * the destructive step is not taken on the stale level. */
        unsigned mark = sim->n;
        set_ws(sim, 9 * GB); /* 90 % */
        sim_run(sim, 10 * 60 * SEC, 5 * SEC);
        expect(sim->e->level == LEVEL_RESET);
        expect(count(sim, T_RESET, mark) == 0);
        check_invariants(sim);
        sim_free(sim);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_emergency_reset_on_the_new_process),
                cmocka_unit_test(test_emergency_reset_stalled_any_session),
                cmocka_unit_test(test_emergency_reset_at_the_reset_rung),
                cmocka_unit_test(test_emergency_reset_finds_sessions_grown),
                cmocka_unit_test(test_emergency_reset_regrowth_capped),
                cmocka_unit_test(test_emergency_reset_again_after_fewer),
                cmocka_unit_test(test_restart_not_held_by_a_retry),
                cmocka_unit_test(test_emergency_reset_not_behind_the_pool),
                cmocka_unit_test(test_emergency_reset_after_an_uncollected_reset),
                cmocka_unit_test(test_emergency_reset_flickering),
                cmocka_unit_test(test_emergency_reset_dry_run_once),
                cmocka_unit_test(test_emergency_reset_not_done),
                cmocka_unit_test(test_reset_recheck_and_params),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
