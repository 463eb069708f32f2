/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The admission rung (src/core/rung-admit.c). */
#include "engine-sim.h"

static void test_admit_on_rising_connections(void **state) {
        Sim *sim = sim_new(false);
        storm(sim, 20, 1);
        const Decision *d = find(sim, T_ADMIT, 0);
        expect(d && !d->admit.restore && d->admit.headroom == 10 && d->admit.floor == 10);
        /* At admit.at, nothing more fits under it: the headroom. */
        expect(d->admit.fit == 0);
        /* At its threshold, with the connections risen: before reset, which was never decided. */
        expect(d->working_set >= apply_bp(BUDGET, sim->p.step[LEVEL_ADMIT].at));
        expect(find_level(sim, LEVEL_THROTTLE, LEVEL_ADMIT, LEVEL_UP_AT, 0));
        expect(d->admit.connections >= 20 + 20);
        expect(find_level(sim, LEVEL_THROTTLE, LEVEL_ADMIT, _DECISION_CODE_MAX, 0));
        expect(!find(sim, T_RESET, 0));
        expect(ADMIT(sim)->lowered);
        /* memory.max raised by admit.max-raise (5 %) in the same tick, for admit.raise-for. */
        const Decision *m = find(sim, T_SET_MAX, 0);
        expect(m && m->value == PAGE_DOWN(BUDGET + apply_bp(BUDGET, 500)) && m->old_value == BUDGET);
        expect(sim->s.memory_max == m->value);
        usec_t lowered = last_at(sim, T_ADMIT);

        /* Admission holds: the count and the working set flat. It is not lowered twice, and
         * memory.max goes back after raise-for, while the budget stayed put. */
        unsigned mark = sim->n;
        sim_run(sim, 150 * SEC, SEC);
        expect(count(sim, T_ADMIT, mark) == 0);
        const Decision *back = find(sim, T_SET_MAX, mark);
        expect(back && back->value == BUDGET && back->budget == BUDGET);
        expect(sim->s.memory_max == BUDGET);
        expect(sim->e->level == LEVEL_ADMIT);

        /* Calm: max_connections put back once below throttle for admit.restore-after, not before
         * (the trim spent and the trend still rising after the fall keep the ladder at throttle a
         * while). */
        mark = sim->n;
        set_ws(sim, 6 * GB);
        usec_t calm = 0;
        for (unsigned t = 0; t < 3600 && !find(sim, T_ADMIT, mark); t++) {
                sim_tick(sim, SEC);
                if (sim->e->level >= LEVEL_THROTTLE)
                        calm = 0;
                else if (!calm)
                        calm = sim->now;
        }
        const Decision *r = find(sim, T_ADMIT, mark);
        expect(r && r->admit.restore && calm > 0);
        usec_t restored = last_at(sim, T_ADMIT);
        expect(restored - calm >= sim->p.admit_restore_after && restored - calm < sim->p.admit_restore_after + 2 * SEC);
        expect(restored - lowered >= sim->p.admit_restore_after);
        expect(!ADMIT(sim)->lowered && count(sim, T_ADMIT, mark) == 1);
        check_invariants(sim);
        sim_free(sim);
}

/* The storm goes on after admission, faster: the emergency reset that follows ends the newest
 * sessions first (the storm's newcomers), not the largest. */
static void test_admit_emergency_reset_newest_first(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        storm(sim, 20, 1);
        expect(find(sim, T_ADMIT, 0) && ADMIT(sim)->lowered);
        /* Through memory.high, as a storm's sessions go (the kernel throttles, the server grows). */
        const Decision *er = NULL;
        for (unsigned t = 0; t < 120 && !er; t++) {
                set_ws(sim, MIN(sim->s.memory_current + 10 * MB, BUDGET - 200 * MB));
                sim->s.connections++;
                sim_tick(sim, SEC);
                resets_free(sim, 100 * MB);
                er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        }
        expect(er && er->reset.newest_first && er->reset.max == sim->p.reset_emergency_max);
        expect(er && strstr(er->reason, "up to 16 of the newest session(s) holding at least 8M, idle or not (a connection "
                                        "storm, as admission judges one"));
        check_invariants(sim);
        sim_free(sim);
}

/* A storm with admission off (or not there yet: its threshold not reached, its lowering held
 * back): 20 connections flat for a minute, then one more a second, each bringing 10M. The growth
 * came with the new connections, and the emergency reset ends the newest sessions first. */
static void test_emergency_reset_newest_first_unadmitted(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        sim->p.step[LEVEL_ADMIT].enabled = false;
        sim->s.has |= SAMPLE_HAS_CONNECTIONS;
        sim->s.connections = 20;
        set_ws(sim, 8 * GB);
        sim_run(sim, 60 * SEC, SEC);
        const Decision *er = NULL;
        for (unsigned t = 0; t < 200 && !er; t++) {
                set_ws(sim, MIN(sim->s.memory_current + 10 * MB, BUDGET - 200 * MB));
                sim->s.connections++;
                sim_tick(sim, SEC);
                trims_free(sim, 0);
                er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        }
        expect(!find(sim, T_ADMIT, 0) && !ADMIT(sim)->lowered && !ADMIT(sim)->tried);
        expect(er && er->reset.newest_first && strstr(er->reason, "of the newest session(s)"));
        /* Its newcomers, the clients over the 20 there before, go whether or not they still grow
         * while in the statement they ran at the last listing. */
        expect(er && er->reset.growing_only && er->reset.newcomers == sim->s.connections - 20);
        char want[96];
        snprintf(want, sizeof(want), " or more, or of the storm's %u newcomers, in the statement they ran then",
                 sim->s.connections - 20);
        expect(er && strstr(er->reason, want));
        check_invariants(sim);
        sim_free(sim);
}

/* A ramp of clients: from 3 connections at 3.6G to 127, the working set rising fast, then slowly.
 * Admission enters on its ETA well under admit.at, and leaves room for the connections that fit
 * under admit.at at the working set's cost per connection over the rise (admit.fit); without
 * admit.fit, the headroom only. Cheap connections (a working set from 5G, 30 connections, rising
 * more slowly) would fit by the hundreds: no more than the rise so far. Fewest connections seen on
 * the server process before give no cost: the headroom. */
enum { FIT_OFF, FIT_RAMP, FIT_CHEAP, FIT_PROCESS_BEFORE, _FIT_MAX };
static void test_admit_fit(void **state) {
        for (unsigned v = 0; v < _FIT_MAX; v++) {
                Sim *sim = sim_new(false);
                sim->p.admit_fit = v != FIT_OFF;
                sim->s.has |= SAMPLE_HAS_CONNECTIONS;
                sim->s.connections = 3;
                uint64_t ws = v == FIT_CHEAP ? 5 * GB : 3600 * MB, from = ws;
                set_ws(sim, ws);
                sim_run(sim, 60 * SEC, SEC);
                if (v == FIT_PROCESS_BEFORE) {
                        sim->s.pid = 200;
                        sim_tick(sim, SEC);
                }
                unsigned conns = v == FIT_CHEAP ? 30 : 127;
                sim->s.connections = conns;
                for (unsigned t = 0; t < 600 && !find(sim, T_ADMIT, 0); t++) {
                        ws += v == FIT_CHEAP ? 20 * MB : t < 30 ? 100 * MB : 10 * MB;
                        set_ws(sim, ws);
                        sim_tick(sim, SEC);
                }
                const Decision *d = find(sim, T_ADMIT, 0);
                expect(d && !d->admit.restore && d->admit.connections == conns);
                uint64_t bound = apply_bp(BUDGET, sim->p.step[LEVEL_ADMIT].at);
                expect(d->working_set < bound);
                uint64_t cost = (d->working_set - from) / (conns - 3);
                uint64_t fits = (bound - d->working_set) / cost;
                switch (v) {
                case FIT_RAMP:
                        expect(d->admit.fit == fits && fits > 10 && fits < conns - 3);
                        expect(strstr(d->reason, "more that fit under") && !strstr(d->reason, "rise so far"));
                        break;
                case FIT_CHEAP:
                        expect(fits > conns - 3 && d->admit.fit == conns - 3);
                        expect(strstr(d->reason, "as many as the rise so far"));
                        break;
                case FIT_PROCESS_BEFORE:
                        expect(d->admit.fit == 0 && strstr(d->reason, "server process before"));
                        break;
                default:
                        expect(d->admit.fit == 0 && d->admit.headroom == 10 && !strstr(d->reason, "fit"));
                }
                check_invariants(sim);
                sim_free(sim);
        }
}

/* Calm that does not last (a working set back near throttle) does not put max_connections back. */
static void test_admit_restore_hysteresis(void **state) {
        Sim *sim = sim_new(false);
        storm(sim, 20, 1);
        expect(ADMIT(sim)->lowered);
        unsigned mark = sim->n;
        unsigned calm_spells = 0;
        for (unsigned i = 0; i < 3; i++) {
                /* down until calm, calm for 8 minutes (under admit.restore-after 10m), back up */
                set_ws(sim, 6 * GB);
                for (unsigned t = 0; t < 3600 && sim->e->level >= LEVEL_THROTTLE; t++)
                        sim_tick(sim, SEC);
                calm_spells += sim->e->level < LEVEL_THROTTLE;
                sim_run(sim, 8 * 60 * SEC, SEC);
                set_ws(sim, 9 * GB); /* back to throttle */
                for (unsigned t = 0; t < 600 && sim->e->level < LEVEL_THROTTLE; t++)
                        sim_tick(sim, SEC);
                expect(sim->e->level >= LEVEL_THROTTLE);
        }
        expect(calm_spells == 3);
        expect(count(sim, T_ADMIT, mark) == 0);
        expect(ADMIT(sim)->lowered);
        check_invariants(sim);
        sim_free(sim);
}

/* The same growth with a flat connection count: admission would not help, the ladder goes from
 * throttle on to reset as without the rung. A rise under admit.min-rise is flat too. */
static void test_admit_not_with_flat_connections(void **state) {
        for (unsigned per = 0; per < 2; per++) {
                Sim *sim = sim_new(false);
                sim->s.has |= SAMPLE_HAS_CONNECTIONS;
                sim->s.connections = 170;
                set_ws(sim, 8 * GB + 700 * MB);
                sim_run(sim, 60 * SEC, SEC);
                for (unsigned t = 0; t < 300; t++) {
                        set_ws(sim, 8 * GB + 700 * MB + (uint64_t) t * 2 * MB);
                        /* a rise of 15 (under min-rise 20) over 300 s, or none */
                        sim->s.connections = 170 + (per ? t / 20 : 0);
                        sim_tick(sim, SEC);
                }
                expect(count(sim, T_ADMIT, 0) == 0);
                expect(find_level(sim, LEVEL_THROTTLE, LEVEL_RESET, _DECISION_CODE_MAX, 0));
                expect(find(sim, T_RESET, 0));
                check_invariants(sim);
                sim_free(sim);
        }
}

/* A rise that is a small share of many connections is no storm (admit.min-rise-share). */
static void test_admit_rise_share(void **state) {
        Sim *sim = sim_new(false);
        storm(sim, 2000, 1); /* +400 in 400 s, 20 % of 2000 */
        expect(count(sim, T_ADMIT, 0) == 0);
        sim_free(sim);
        sim = sim_new(false);
        sim->p.admit_min_rise_share = 1000; /* 10 % */
        storm(sim, 2000, 1);
        expect(count(sim, T_ADMIT, 0) == 1);
        sim_free(sim);
}

/* The raise never goes past host RAM minus budget.host-reserve; none without room, none with
 * admit.max-raise 0 or a read-only cgroup file system. */
static void test_admit_max_raise_bounded(void **state) {
        Sim *sim = sim_new(false);
        sim->p.host_reserve = GB;
        sim->s.has |= SAMPLE_HAS_HOST;
        sim->s.host_total = BUDGET + sim->p.host_reserve + 100 * MB;
        storm(sim, 20, 1);
        expect(find(sim, T_ADMIT, 0));
        const Decision *m = find(sim, T_SET_MAX, 0);
        expect(m && m->value == PAGE_DOWN(BUDGET + 100 * MB) && strstr(m->reason, "host-reserve"));
        sim_free(sim);

        sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_HOST;
        sim->s.host_total = BUDGET + 200 * MB; /* less than the reserve (auto: 1G) above memory.max */
        storm(sim, 20, 1);
        expect(find(sim, T_ADMIT, 0) && !find(sim, T_SET_MAX, 0));
        sim_free(sim);

        /* A small host keeps an eighth of its RAM (auto), not 1G: a 768M host with no memory.max
         * has a budget of 672M (it had none under a fixed 1G). */
        sim = sim_new(false);
        expect(policy_host_reserve(&sim->p, 768 * MB) == 96 * MB && policy_host_reserve(&sim->p, 64 * GB) == GB);
        sim->s.has |= SAMPLE_HAS_HOST;
        sim->s.host_total = 768 * MB;
        sim->s.memory_max = SIZE_UNLIMITED;
        set_ws(sim, 100 * MB);
        sim_tick(sim, SEC);
        expect(sim->out.budget == 672 * MB);
        sim_free(sim);

        sim = sim_new(false);
        sim->p.admit_max_raise = 0;
        storm(sim, 20, 1);
        expect(find(sim, T_ADMIT, 0) && !find(sim, T_SET_MAX, 0));
        sim_free(sim);
}

/* A dry run decides the same (the actuator only says "would"), assumes nothing was written, and
 * has nothing to put back when memgov stops. */
static void test_admit_dry_run(void **state) {
        Decision d[3];
        Sim *sim = sim_new(true);
        storm(sim, 20, 1);
        expect(find(sim, T_ADMIT, 0) && find(sim, T_SET_MAX, 0));
        expect(sim->s.memory_max == BUDGET);
        expect(engine_leave(sim->e, "memgov stops", d, 3) == 0);
        sim_free(sim);

        /* Live: memgov stopping puts memory.max and max_connections back. */
        sim = sim_new(false);
        storm(sim, 20, 1);
        unsigned n = engine_leave(sim->e, "memgov stops", d, 3);
        expect(n == 3 && decision_class(&d[1]) == T_SET_MAX && d[1].value == BUDGET &&
               decision_class(&d[2]) == T_ADMIT && d[2].admit.restore);
        sim_free(sim);
}

/* A lowering that failed (the account lacks the privilege): not again before its backoff, and
 * the ladder goes on to reset on reset's own thresholds. A new server process starts at its own
 * max_connections: nothing to put back. */
static void test_admit_failure_and_new_server(void **state) {
        Sim *sim = sim_new(false);
        storm(sim, 20, 1);
        expect(ADMIT(sim)->lowered);
        action_feedback_fail(&sim->fb, ACTION_ADMIT);
        unsigned mark = sim->n;
        for (unsigned t = 0; t < 200; t++) {
                set_ws(sim, 9 * GB + 100 * MB + (uint64_t) t * 2 * MB);
                sim->s.connections += 1;
                sim_tick(sim, SEC);
        }
        const Decision *f = find_code(sim, T_EFFECT, EFFECT_FAILED, mark);
        expect(f && f->action == ACTION_ADMIT);
        expect(!ADMIT(sim)->lowered && count(sim, T_ADMIT, mark) == 0);
        expect(find(sim, T_RESET, mark));
        sim_free(sim);

        /* A storm against a new server process, admission not in place on the one before (its
         * max_connections put back): admission lowers the new one again, within admit.cooldown
         * of the lowering on the old process. */
        sim = sim_new(false);
        storm(sim, 20, 1);
        expect(ADMIT(sim)->lowered);
        usec_t lowered = last_at(sim, T_ADMIT);
        ADMIT(sim)->lowered = ADMIT(sim)->tried = false; /* as a restore leaves them */
        sim->s.pid = 200;
        sim->s.uptime = SEC;
        sim->s.connections = 5;
        set_ws(sim, STORM_WS);
        mark = sim->n;
        sim_tick(sim, SEC);
        expect(!ADMIT(sim)->lowered && count(sim, T_ADMIT, mark) == 0);
        for (unsigned t = 0; t < 60 && !find(sim, T_ADMIT, mark); t++) {
                set_ws(sim, STORM_WS + (uint64_t) t * 2 * MB);
                sim->s.connections = 5 + 2 * t;
                sim_tick(sim, SEC);
        }
        const Decision *again = find(sim, T_ADMIT, mark);
        expect(again && !again->admit.restore && !again->admit.carried &&
               sim->at[again - sim->log] - lowered < sim->p.step[LEVEL_ADMIT].cooldown);
        expect(ADMIT(sim)->lowered);
        sim_free(sim);
}

/* A lowering not carried out (the session kept for the actions still awaits the reply to its
 * last statement: the server answers nothing): max_connections as it was, no failure and no
 * backoff of admit.backoff; lowered again once admit.cooldown is over while the storm lasts. */
static void test_admit_not_done(void **state) {
        Sim *sim = sim_new(false);
        storm(sim, 20, 1);
        expect(ADMIT(sim)->lowered);
        const Decision *first = find(sim, T_ADMIT, 0);
        expect(first);
        ActionResult r = { .not_done = true };
        action_feedback_add(&sim->fb, first, &r);
        unsigned mark = sim->n;
        const Decision *again = NULL;
        for (unsigned t = 0; t < 300 && !again; t++) {
                set_ws(sim, STORM_WS + (uint64_t) t * MB);
                sim->s.connections += 1;
                sim_tick(sim, SEC);
                if (t == 0)
                        expect(!ADMIT(sim)->lowered);
                again = find(sim, T_ADMIT, mark);
        }
        const Decision *nd = find_code(sim, T_EFFECT, EFFECT_NOT_DONE, mark);
        expect(nd && nd->action == ACTION_ADMIT);
        expect(!find_code(sim, T_EFFECT, EFFECT_FAILED, mark));
        expect(again && !again->admit.restore);
        usec_t apart = sim->at[again - sim->log] - sim->at[first - sim->log];
        expect(apart >= sim->p.step[LEVEL_ADMIT].cooldown && apart < sim->p.step[LEVEL_ADMIT].backoff);
        expect(ADMIT(sim)->lowered);
        check_invariants(sim);
        sim_free(sim);
}

static void test_admit_carried_to_new_server(void **state) {
        Sim *sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 1;
        storm(sim, 20, 1);
        const Decision *first = find(sim, T_ADMIT, 0);
        expect(first && !first->admit.carried && ADMIT(sim)->lowered);

        /* The new process: starting (listening on nothing yet), small. Nothing yet. */
        unsigned mark = sim->n;
        sim->s.pid = 300;
        sim->s.uptime = SEC;
        sim->s.accepting = 0;
        sim->s.connections = 2;
        set_ws(sim, 2 * GB);
        sim_run(sim, 10 * SEC, SEC);
        expect(count(sim, T_ADMIT, mark) == 0 && !ADMIT(sim)->lowered);
        expect(sim->out.next_sample == sim->p.fast_interval);

        /* It takes clients: a sample without the count, then the application's clients back
         * (a rise under admit.min-rise). Nothing yet. */
        sim->s.accepting = 1;
        sim->s.has &= ~SAMPLE_HAS_CONNECTIONS;
        sim_tick(sim, SEC);
        sim->s.has |= SAMPLE_HAS_CONNECTIONS;
        sim->s.connections = 12;
        sim_tick(sim, SEC);
        expect(count(sim, T_ADMIT, mark) == 0 && ADMIT(sim)->carry);
        /* The storm's clients are back: lowered in that tick, to the 20 before the storm, not
         * to the 60 connected now. */
        sim->s.connections = 60;
        sim_tick(sim, SEC);
        const Decision *d = find(sim, T_ADMIT, mark);
        expect(d && !d->admit.restore && d->admit.carried && d->admit.connections == 20 && d->admit.headroom == 10 &&
               d->admit.floor == 10);
        expect(d->working_set < apply_bp(BUDGET, sim->p.step[LEVEL_TRIM].at));
        expect(ADMIT(sim)->lowered && !ADMIT(sim)->carry);
        /* No memory.max raise for it: the new process is far from its limit. */
        const Decision *raise = find(sim, T_SET_MAX, mark);
        expect(!raise || raise->value == BUDGET);

        /* Once, not again as the storm goes on; put back once calm for admit.restore-after. */
        unsigned after = sim->n;
        for (unsigned t = 0; t < 50; t++) {
                sim->s.connections = 60 + t;
                sim_tick(sim, SEC);
        }
        expect(count(sim, T_ADMIT, after) == 0);
        /* Watched closely (sampling.fast-interval) for a minute after it took clients, at 20%
         * of the budget and the ladder down to normal; then at sampling.interval again. */
        expect(sim->out.next_sample == sim->p.fast_interval && sim->e->level == LEVEL_NORMAL);
        sim_run(sim, 20 * SEC, SEC);
        expect(sim->out.next_sample == sim->p.interval && sim->e->level == LEVEL_NORMAL);
        sim_run(sim, sim->p.admit_restore_after + 60 * SEC, SEC);
        const Decision *r = find(sim, T_ADMIT, after);
        expect(r && r->admit.restore && !ADMIT(sim)->lowered);

        /* The next process: admission no longer in place, nothing carried. */
        mark = sim->n;
        sim->s.pid = 301;
        sim->s.uptime = SEC;
        sim_run(sim, 20 * SEC, SEC);
        expect(count(sim, T_ADMIT, mark) == 0);
        check_invariants(sim);
        sim_free(sim);

        /* The storm over when the new process takes clients: only the application's come back,
         * nothing is lowered, and a rise after admit.rise-window (the day's traffic) is not
         * taken for the storm. */
        sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 1;
        storm(sim, 20, 1);
        expect(ADMIT(sim)->lowered);
        mark = sim->n;
        sim->s.pid = 303;
        sim->s.uptime = SEC;
        sim->s.accepting = 0;
        sim->s.connections = 2;
        set_ws(sim, 2 * GB);
        sim_run(sim, 10 * SEC, SEC);
        sim->s.accepting = 1;
        sim->s.connections = 15;
        sim_run(sim, sim->p.admit_rise_window + 10 * SEC, SEC);
        expect(count(sim, T_ADMIT, mark) == 0 && !ADMIT(sim)->carry);
        sim->s.connections = 60;
        sim_run(sim, 10 * SEC, SEC);
        expect(count(sim, T_ADMIT, mark) == 0);
        sim_free(sim);

        /* Admission disabled by a policy reload before the new process: nothing carried. */
        sim = sim_new(false);
        storm(sim, 20, 1);
        expect(ADMIT(sim)->lowered);
        Policy old = sim->p;
        sim->p.step[LEVEL_ADMIT].enabled = false;
        engine_set_policy(sim->e, &old, &sim->p);
        mark = sim->n;
        sim->s.pid = 302;
        sim->s.uptime = SEC;
        set_ws(sim, 2 * GB);
        sim_run(sim, 20 * SEC, SEC);
        for (unsigned i = mark; i < sim->n; i++)
                expect(!(decision_class(&sim->log[i]) == T_ADMIT && sim->log[i].admit.carried));
        expect(!ADMIT(sim)->carry);
        sim_free(sim);
}

/* A lowering that failed on the old process (the swamped server dropped its query) is carried
 * to the new one all the same: the storm is still there. Unless it was over: calm for
 * admit.restore-after before the new process, nothing carried. */
static void test_admit_failed_lowering_carried(void **state) {
        for (unsigned calm = 0; calm <= 1; calm++) {
                Sim *sim = sim_new(false);
                sim->s.has |= SAMPLE_HAS_ACCEPTING;
                sim->s.accepting = 1;
                storm(sim, 20, 1);
                expect(find(sim, T_ADMIT, 0) && ADMIT(sim)->lowered);
                sim->s.failed = 1u << ACTION_ADMIT;
                sim_tick(sim, SEC);
                expect(!ADMIT(sim)->lowered && find_code(sim, T_EFFECT, EFFECT_FAILED, 0));
                if (calm) {
                        set_ws(sim, 2 * GB);
                        sim_run(sim, sim->p.admit_restore_after + 120 * SEC, SEC);
                }
                unsigned mark = sim->n;
                sim->s.pid = 300;
                sim->s.uptime = SEC;
                sim->s.connections = 2;
                set_ws(sim, 2 * GB);
                sim_run(sim, 3 * SEC, SEC);
                sim->s.connections = 60;
                sim_tick(sim, SEC);
                const Decision *d = find(sim, T_ADMIT, mark);
                if (calm)
                        expect(!d && !ADMIT(sim)->carry);
                else
                        expect(d && d->admit.carried && d->admit.connections == 20);
                check_invariants(sim);
                sim_free(sim);
        }
}

/* Admission in place when the server process goes (a graceful restart, an OOM kill) is carried to
 * the new one: in the outcome benchmark's storm, the clients came back to the new server faster
 * than its working set reached admit.at, and the kernel killed it. The new process's
 * max_connections is lowered once it takes clients, to the connections before the storm plus
 * admit.headroom, whatever its working set and the count now; put back when calm, as any. */
/* The lowering carried to a new server process that fails (its handshake reset by the swamped
 * server) is tried again at the next sample, up to three tries; then it backs off as any
 * admission's failure. */
static void test_admit_carried_failure_tried_again(void **state) {
        Sim *sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 1;
        storm(sim, 20, 1);
        expect(ADMIT(sim)->lowered);
        sim->s.pid = 300;
        sim->s.uptime = SEC;
        sim->s.connections = 2;
        set_ws(sim, 2 * GB);
        sim_run(sim, 3 * SEC, SEC);
        unsigned mark = sim->n;
        sim->s.connections = 60;
        sim_tick(sim, SEC);
        expect(count(sim, T_ADMIT, mark) == 1);
        for (unsigned i = 1; i <= 3; i++) {
                mark = sim->n;
                sim->s.failed = 1u << ACTION_ADMIT;
                sim->s.connections += 5;
                sim_tick(sim, SEC);
                const Decision *f = find(sim, T_EFFECT, mark);
                if (i < 3) {
                        /* Said, and tried again in the same tick (the next sample after the failure). */
                        expect(f && f->code == EFFECT_FAILED_CARRY && strstr(f->reason, "tries)"));
                        const Decision *again = find(sim, T_ADMIT, mark);
                        expect(again && again->admit.carried && again->admit.connections == 20);
                } else {
                        expect(f && f->code == EFFECT_FAILED && strstr(f->reason, "not tried again for"));
                        expect(count(sim, T_ADMIT, mark) == 0 && !ADMIT(sim)->lowered);
                }
        }
        mark = sim->n;
        sim->s.connections += 5;
        sim_run(sim, 20 * SEC, SEC);
        expect(count(sim, T_ADMIT, mark) == 0);
        check_invariants(sim);
        sim_free(sim);
}

/* A client ramping its threads, doubling every `every` seconds (1 to 128), beside sessions
 * connected already that grow 3M/s on their own; each new connection costs 2M. The connections
 * rise as in a storm, and the ETA brings admission's thresholds within minutes, but the sessions
 * connected already grow more on their own than the new ones brought: admission is passed by,
 * said once with its figures, and the ladder goes on to reset, which finds the growing sessions.
 * The same ramp where each new connection brings its growth (100M each, nothing growing besides):
 * a storm, admission lowers max_connections. With `fall`, the working set falls by as much in the
 * middle of each step (a trim). */
static void ramp(Sim *sim, unsigned every, uint64_t grows_per_s, uint64_t per_connection, uint64_t fall) {
        unsigned threads = 1;
        uint64_t ws = 6 * GB;
        sim->s.has |= SAMPLE_HAS_CONNECTIONS;
        sim->s.connections = 4 + threads + 1;
        set_ws(sim, ws);
        sim_run(sim, 60 * SEC, SEC);
        for (unsigned t = 1; t <= 1500 && !find(sim, T_ADMIT, 0) && !find(sim, T_RESET, 0); t++) {
                ws += grows_per_s;
                if (t % every == 0 && threads < 128) {
                        ws += threads * per_connection;
                        threads *= 2;
                        sim->s.connections = 4 + threads + 1;
                }
                if (t % every == every / 2)
                        ws -= fall;
                set_ws(sim, ws);
                sim_tick(sim, SEC);
                trims_free(sim, 0);
        }
}

static void test_admit_not_for_growing_sessions(void **state) {
        for (unsigned every = 10; every <= 40; every += 30) {
                Sim *sim = sim_new(false);
                ramp(sim, every, 3 * MB, 2 * MB, 0);
                expect(count(sim, T_ADMIT, 0) == 0 && !ADMIT(sim)->lowered);
                expect(find(sim, T_RESET, 0));
                expect(find_level(sim, LEVEL_THROTTLE, LEVEL_RESET, _DECISION_CODE_MAX, 0));
                /* The ramp of 10 s steps over for minutes when the ladder gets there: no new
                 * clients (the count not a quarter of admit.min-rise over the most before the last
                 * quarter of admit.rise-window). The one of 40 s steps still under way: the growth
                 * weighed. */
                const Decision *h = find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0);
                expect(h && h->action == ACTION_ADMIT && strstr(h->reason, "admission passed by") &&
                       strstr(h->reason, every == 10 ? "before its last 1m15s (no new clients: 5 more would be)" : "G/h while the count stood still)"));
                /* Said once while it lasts. */
                unsigned said = 0;
                for (unsigned i = 0; i < sim->n; i++)
                        said += decision_class(&sim->log[i]) == T_HOLD && sim->log[i].code == HOLD_ADMIT_NOT_STORM;
                expect(said == 1);
                check_invariants(sim);
                sim_free(sim);
        }

        Sim *sim = sim_new(false);
        ramp(sim, 40, 0, 100 * MB, 0);
        const Decision *d = find(sim, T_ADMIT, 0);
        expect(d && !d->admit.restore && !find(sim, T_RESET, 0));
        expect(!find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0));
        check_invariants(sim);
        sim_free(sim);
}

/* A storm as memgov samples it when calm: a sample every 5 s, the connections counted once in
 * SAMPLE_CONNECTIONS_EVERY samples (the count kept in between), beside a slow leak of 100K/s
 * before and during it. The samples between two counts did not see the count stand still: it is a
 * storm, and admission lowers max_connections. */
static void test_admit_storm_counted_sparsely(void **state) {
        Sim *sim = sim_new(false);
        uint64_t ws = STORM_WS - 300 * MB;
        sim->s.has |= SAMPLE_HAS_CONNECTIONS;
        sim->s.connections = 20;
        set_ws(sim, ws);
        for (unsigned t = 0; t < 24; t++) {
                ws += 500 * 1024;
                set_ws(sim, ws);
                sim_tick(sim, 5 * SEC);
        }
        for (unsigned t = 0, connections = 20; t < 120 && !find(sim, T_ADMIT, 0); t++) {
                connections += 5; /* 1 a second */
                ws += 500 * 1024 + 5 * MB;
                if (t % SAMPLE_CONNECTIONS_EVERY == 0)
                        sim->s.connections = connections;
                set_ws(sim, ws);
                sim_tick(sim, 5 * SEC);
        }
        const Decision *d = find(sim, T_ADMIT, 0);
        expect(d && !find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0));
        /* Counted over minutes, with buckets that saw no count between those that rose. */
        expect(d->admit.connections > 100);
        check_invariants(sim);
        sim_free(sim);
}

/* A storm after a steady leak: 60 connections flat for 400 s while the working set rises 3M/s
 * (its ETA known, and under admit.eta), then 10 connections more at each count (once in five
 * 1 s samples) bringing 4M each. The sessions connected grow 3M/s on their own, the new
 * connections bring 8M/s: a storm from its first counts, admission lowers at once, before the
 * reset. Weighed against the leak over the whole window (900M), it would take two minutes of the
 * storm, and the reset would come first; so it would if a client that came 200 s before (60 to
 * 61) began the rise: it is another rise, a run of its own. */
static void test_admit_storm_after_leak(void **state) {
        for (unsigned early = 0; early < 2; early++) {
                Sim *sim = sim_new(false);
                uint64_t ws = 5 * GB;
                unsigned connections = 60;
                sim->s.has |= SAMPLE_HAS_CONNECTIONS;
                sim->s.connections = connections;
                for (unsigned t = 0; t < 400; t++) {
                        if (early && t == 200)
                                sim->s.connections = ++connections;
                        set_ws(sim, ws += 3 * MB);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                }
                expect(!find(sim, T_ADMIT, 0) && !find(sim, T_RESET, 0));
                usec_t began = sim->now;
                unsigned before = connections;
                for (unsigned t = 1; t <= 300 && !find(sim, T_ADMIT, 0) && !find(sim, T_RESET, 0); t++) {
                        ws += 3 * MB;
                        if (t % SAMPLE_CONNECTIONS_EVERY == 0) {
                                connections += 10;
                                ws += 40 * MB;
                                sim->s.connections = connections;
                        }
                        set_ws(sim, ws);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                }
                const Decision *d = find(sim, T_ADMIT, 0);
                expect(d && !d->admit.restore && !find(sim, T_RESET, 0));
                expect(!find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0));
                /* At the second count of the storm: a rise of admit.min-rise 20. */
                expect(d->admit.connections == before + 20 && last_at(sim, T_ADMIT) - began <= 15 * SEC);
                check_invariants(sim);
                sim_free(sim);
        }
}

/* The ramp beside growing sessions, doubling every 40 s, each new connection bringing 8M, the
 * sessions growing 6M/s, with a fall of 150M (over trend.drop, 1% of the budget) in the middle of
 * each stretch where the count stands still (a trim): falls are no part of the sessions' own
 * rate, and admission is still passed by. Counted with the falls, the sessions would seem to
 * grow 2.25M/s, less than the connections brought. */
static void test_admit_not_for_growing_sessions_trimmed(void **state) {
        Sim *sim = sim_new(false);
        ramp(sim, 40, 6 * MB, 8 * MB, 150 * MB);
        expect(count(sim, T_ADMIT, 0) == 0 && sim->e->level >= LEVEL_THROTTLE);
        expect(find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0));
        check_invariants(sim);
        sim_free(sim);
}

/* A storm in bursts: every 15 s, 10 clients come at once and bring 20M each, 4 s before the
 * count (taken once in five 1 s samples) sees them; nothing grows between bursts. What came
 * before the count saw it is the burst's, not a rate of the sessions connected: a storm, and
 * admission lowers at admit.at. */
static void test_admit_storm_in_bursts(void **state) {
        Sim *sim = sim_new(false);
        uint64_t ws = 8800 * MB;
        unsigned connections = 60;
        sim->s.has |= SAMPLE_HAS_CONNECTIONS;
        sim->s.connections = connections;
        set_ws(sim, ws);
        sim_run(sim, 60 * SEC, SEC);
        for (unsigned t = 1; t <= 300 && !find(sim, T_ADMIT, 0) && !find(sim, T_RESET, 0); t++) {
                if (t % 15 == 11) {
                        connections += 10;
                        ws += 200 * MB;
                }
                if (t % SAMPLE_CONNECTIONS_EVERY == 0)
                        sim->s.connections = connections;
                set_ws(sim, ws);
                sim_tick(sim, SEC);
                trims_free(sim, 0);
        }
        const Decision *d = find(sim, T_ADMIT, 0);
        expect(d && !d->admit.restore && !find(sim, T_RESET, 0) && !find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0));
        check_invariants(sim);
        sim_free(sim);
}

/* A storm a few minutes after a start, while the buffer pool fills: 6 connections flat for 330 s,
 * the working set rising 1.5M/s of which 1M/s the pool's pages (read every 2 s), then the pool
 * full and 10 connections more at each count (once in five 1 s samples) bringing 7.5M, the
 * sessions growing 0.5M/s. The pool's first fill is not the sessions' own growth: a storm, and
 * admission lowers within the storm's first minute, before any reset. Without the pool's readings
 * the sessions seem to grow 1.5M/s on their own, more than the storm brings: admission is passed
 * by (as it was on MySQL 9.7). */
static void test_admit_storm_while_pool_fills(void **state) {
        for (unsigned readings = 0; readings < 2; readings++) {
                Sim *sim = sim_new(false);
                uint64_t ws = 7 * GB, in_use = 100 * MB, room = 330 * MB;
                unsigned connections = 6;
                sim->s.has |= SAMPLE_HAS_CONNECTIONS;
                sim->s.connections = connections;
                for (unsigned t = 0; t < 390 && !find(sim, T_ADMIT, 0); t++) {
                        uint64_t fill = MIN(room, MB);
                        in_use += fill;
                        room -= fill;
                        ws += fill + 512 * 1024;
                        if (t >= 330 && t % SAMPLE_CONNECTIONS_EVERY == 0) {
                                connections += 10;
                                ws += 7680 * 1024;
                                sim->s.connections = connections;
                        }
                        set_ws(sim, ws);
                        if (readings && t % 2 == 0)
                                pool_reading(sim, in_use, room);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                }
                const Decision *d = find(sim, T_ADMIT, 0);
                if (readings) {
                        expect(d && !d->admit.restore && !find(sim, T_RESET, 0));
                        expect(!find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0));
                } else {
                        expect(!d && find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0));
                }
                check_invariants(sim);
                sim_free(sim);
        }
}

/* Clients that connected at once and then stood: 6 connections, 31 more at once, then the count
 * at 37 and 38 in turn (a probe connecting twice a second) and the working set flat for 90 s;
 * then it grows 10M/s on its own towards admit.at and past it. No new clients come (the count not
 * a quarter of admit.min-rise over the most before the last quarter of admit.rise-window):
 * refusing new connections would not stop the growth, admission is passed by, said so, and the
 * ladder goes on to reset. So it is when 25 of them go and come back 10 s later (a client's
 * restart): they are no new clients. With clients still coming instead (10 more every 15 s,
 * bringing 150M, nothing growing besides), beside the same probe, it is a storm, and admission
 * lowers. */
static void test_admit_not_once_clients_stood(void **state) {
        for (unsigned variant = 0; variant < 3; variant++) {
                bool coming = variant == 1, back = variant == 2;
                Sim *sim = sim_new(false);
                uint64_t ws = 8 * GB + 512 * MB;
                unsigned connections = 6;
                sim->s.has |= SAMPLE_HAS_CONNECTIONS;
                sim->s.connections = connections;
                set_ws(sim, ws);
                sim_run(sim, 60 * SEC, SEC);
                connections += 31;
                for (unsigned t = 1; t <= 600 && !find(sim, T_ADMIT, 0) && !find(sim, T_RESET, 0); t++) {
                        if (t > 90 && !coming)
                                ws += 10 * MB;
                        if (t > 90 && coming && t % 15 == 0) {
                                connections += 10;
                                ws += 150 * MB;
                        }
                        sim->s.connections = connections + t % 2 - (back && t >= 95 && t < 105 ? 25 : 0);
                        set_ws(sim, ws);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                }
                const Decision *d = find(sim, T_ADMIT, 0);
                const Decision *h = find_code(sim, T_HOLD, HOLD_ADMIT_NOT_STORM, 0);
                if (coming) {
                        expect(d && !d->admit.restore && !find(sim, T_RESET, 0) && !h);
                } else {
                        expect(!d && find(sim, T_RESET, 0) && !ADMIT(sim)->lowered);
                        expect(h && strstr(h->reason, " connections, up from 6 within") &&
                               strstr(h->reason, "before its last 1m15s (no new clients: 5 more would be)") &&
                               strstr(h->reason, "(admission passed by)"));
                }
                check_invariants(sim);
                sim_free(sim);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_admit_on_rising_connections),
                cmocka_unit_test(test_admit_emergency_reset_newest_first),
                cmocka_unit_test(test_emergency_reset_newest_first_unadmitted),
                cmocka_unit_test(test_admit_fit),
                cmocka_unit_test(test_admit_restore_hysteresis),
                cmocka_unit_test(test_admit_not_with_flat_connections),
                cmocka_unit_test(test_admit_not_for_growing_sessions),
                cmocka_unit_test(test_admit_storm_counted_sparsely),
                cmocka_unit_test(test_admit_storm_after_leak),
                cmocka_unit_test(test_admit_storm_in_bursts),
                cmocka_unit_test(test_admit_storm_while_pool_fills),
                cmocka_unit_test(test_admit_not_once_clients_stood),
                cmocka_unit_test(test_admit_not_for_growing_sessions_trimmed),
                cmocka_unit_test(test_admit_rise_share),
                cmocka_unit_test(test_admit_max_raise_bounded),
                cmocka_unit_test(test_admit_dry_run),
                cmocka_unit_test(test_admit_failure_and_new_server),
                cmocka_unit_test(test_admit_not_done),
                cmocka_unit_test(test_admit_carried_to_new_server),
                cmocka_unit_test(test_admit_failed_lowering_carried),
                cmocka_unit_test(test_admit_carried_failure_tried_again),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
