/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "engine-sim.h"

Sim *sim_new(bool simulate) {
        Sim *sim = calloc(1, sizeof(Sim));
        assert_non_null(sim);
        assert_int_equal(policy_load_default(&sim->p), 0);
        sim->now = 1000 * SEC;
        sim->s = (Sample) {
                .has = SAMPLE_HAS_WALL | SAMPLE_HAS_CGROUP | SAMPLE_HAS_EVENTS | SAMPLE_HAS_PSI | SAMPLE_HAS_PROCESS |
                       SAMPLE_HAS_UPTIME,
                /* Monday 2026-08-10 12:00:00 UTC */
                .wall = 1786363200ULL * SEC,
                .memory_current = 5 * GB,
                .memory_high = SIZE_UNLIMITED,
                .memory_max = BUDGET,
                .psi = { .has_full = true },
                .pid = 100,
                .uptime = 10 * USEC_PER_DAY,
        };
        /* As the daemon: a dry run carries nothing out, so its effects are assumed. */
        EngineOptions o = { .simulate = simulate, .effects_assumed = simulate };
        assert_int_equal(engine_new(&sim->p, &o, &sim->e), 0);
        return sim;
}

void sim_free(Sim *sim) {
        engine_free(sim->e);
        free(sim);
}

/* Re-initialise after changing sim->p. */
void sim_policy_changed(Sim *sim) {
        assert_int_equal(policy_validate(&sim->p, "test", NULL, NULL), 0);
        EngineOptions o = sim->e->opts;
        engine_free(sim->e);
        assert_int_equal(engine_new(&sim->p, &o, &sim->e), 0);
}

void sim_tick(Sim *sim, usec_t dt) {
        sim->now += dt;
        sim->s.wall += dt;
        if (sim->s.has & SAMPLE_HAS_UPTIME)
                sim->s.uptime += dt;
        sim->s.mono = sim->now;
        engine_tick(sim->e, &sim->fb, &sim->p, &sim->s, 0, &sim->out);
        for (unsigned i = 0; i < sim->out.n_decisions && sim->n < ELEMENTSOF(sim->log); i++) {
                sim->log[sim->n] = sim->out.decisions[i];
                sim->at[sim->n] = sim->now;
                sim->n++;
        }
        sim->s.failed = sim->s.reported = sim->s.not_done = sim->s.found_nothing = sim->s.found_fewer = 0;
        memset(sim->s.freed, 0, sizeof(sim->s.freed));
        /* Live: the writes land, as the actuators would make them; dry-run: nothing changes. */
        if (!sim->e->opts.simulate)
                for (unsigned i = 0; i < sim->out.n_decisions; i++) {
                        const Decision *d = &sim->out.decisions[i];
                        if (decision_class(d) == T_SET_HIGH)
                                sim->s.memory_high = d->value;
                        else if (decision_class(d) == T_SET_MAX)
                                sim->s.memory_max = d->value;
                }
}

void sim_run(Sim *sim, usec_t duration, usec_t step) {
        for (usec_t t = 0; t < duration; t += step)
                sim_tick(sim, step);
}

void set_ws(Sim *sim, uint64_t ws) {
        sim->s.memory_current = ws;
        sim->s.inactive_file = 0;
}

unsigned count(const Sim *sim, unsigned k, unsigned from) {
        unsigned c = 0;
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k)
                        c++;
        return c;
}

const Decision *find(const Sim *sim, unsigned k, unsigned from) {
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k)
                        return &sim->log[i];
        return NULL;
}

const Decision *find_text(const Sim *sim, unsigned k, const char *text, unsigned from) {
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k && strstr(sim->log[i].reason, text))
                        return &sim->log[i];
        return NULL;
}

/* The engine tests assert what was decided and why by code; the prose is the golden files'. */
const Decision *find_code(const Sim *sim, unsigned k, DecisionCode code, unsigned from) {
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k && sim->log[i].code == code)
                        return &sim->log[i];
        return NULL;
}

/* A move of the ladder from one rung to another; code _DECISION_CODE_MAX: for any reason. */
const Decision *find_level(const Sim *sim, Level from_l, Level to_l, DecisionCode code, unsigned from) {
        for (unsigned i = from; i < sim->n; i++) {
                const Decision *d = &sim->log[i];
                if (d->kind == DECISION_LEVEL && d->from == from_l && d->level == to_l &&
                    (code == _DECISION_CODE_MAX || d->code == code))
                        return d;
        }
        return NULL;
}

/* When the last decision of this kind was taken, 0 if none. */
usec_t last_at(const Sim *sim, unsigned k) {
        for (unsigned i = sim->n; i > 0; i--)
                if (decision_class(&sim->log[i - 1]) == k)
                        return sim->at[i - 1];
        return 0;
}

void dump(const Sim *sim) {
        for (unsigned i = 0; i < sim->n; i++)
                fprintf(stderr, "  %6" PRIu64 "s %-12s %s\n", sim->at[i] / SEC, decision_name(&sim->log[i]),
                        sim->log[i].reason);
}


/* What holds in every run: ladder actions settle before the next one (unless the ETA is an
 * emergency), at most one rung per tick, trims and resets respect their cooldowns. */
void check_invariants(const Sim *sim) {
        usec_t last_action = 0, last_of[_ACTION_KIND_MAX] = {}, last_emergency_reset = 0;
        usec_t last_level_tick = 0;
        /* A failure's backoff: the action that failed not again before it; an emergency reset
         * only past the backoff of an emergency reset's failure. */
        usec_t failed_until[_ACTION_KIND_MAX] = {}, emergency_failed_until = 0;
        bool last_reset_emergency = false, carry_again = false;
        /* The last emergency reset found no session: the next comes on the working set's growth,
         * whatever reset.cooldown and the backoff say, and says so. */
        bool regrowth = false;
        for (unsigned i = 0; i < sim->n; i++) {
                const Decision *d = &sim->log[i];
                bool regrown = false;
                if (strlen(d->reason) + 1 >= sizeof(d->reason)) {
                        dump(sim);
                        fail_msg("a reason cut at %zu bytes: \"%s\"", sizeof(d->reason) - 1, d->reason);
                }
                /* The lowering carried to a new process that failed is tried again at once, up to
                 * three tries: not within its cooldown's reach. */
                if (d->kind == DECISION_EFFECT && d->code == EFFECT_FAILED_CARRY)
                        carry_again = true;
                /* A new server process: the settings memgov changed are paced afresh, and no failure
                 * against the old process holds what acts on the server. */
                if (d->kind == DECISION_EVENT && (d->code == EVENT_RESTART_DONE || d->code == EVENT_RESTART_FOREIGN))
                        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                                if (action_info(a)->process_setting)
                                        last_of[a] = failed_until[a] = 0;
                                if (action_info(a)->lane == ACTION_LANE_SERVER)
                                        failed_until[a] = 0;
                                if (a == ACTION_RESET)
                                        emergency_failed_until = 0, regrowth = false;
                                /* The emergency reset's reset.cooldown is of the old process's
                                 * sessions. */
                                last_emergency_reset = 0;
                        }
                if (d->kind == DECISION_EFFECT && d->code == EFFECT_FAILED && action_info(d->action)->paced) {
                        usec_t until = sim->at[i] + action_info(d->action)->backoff(&sim->p);
                        if (d->action == ACTION_RESET)
                                regrowth = last_reset_emergency &&
                                           strstr(d->reason, "the emergency reset again once the working set has grown");
                        if (d->action == ACTION_RESET && last_reset_emergency && !regrowth)
                                emergency_failed_until = until;
                        failed_until[d->action] = until;
                }
                /* So does one that ended every session at its floor, fewer than its max. */
                if (d->kind == DECISION_EFFECT && d->action == ACTION_RESET && d->code != EFFECT_FAILED &&
                    strstr(d->reason, "the emergency reset again once the working set has grown"))
                        regrowth = last_reset_emergency;
                if (decision_is_action(d) && action_info(d->action)->paced) {
                        bool emergency_reset = d->code == ACTION_EMERGENCY_RESET;
                        regrown = emergency_reset && regrowth && strstr(d->reason, "; again: ");
                        if (emergency_reset && !regrowth && strstr(d->reason, "; again: ")) {
                                dump(sim);
                                fail_msg("an emergency reset on growth after one that found some, as many as its max");
                        }
                        if (d->action == ACTION_RESET)
                                regrowth = false;
                        if (emergency_reset ? sim->at[i] < emergency_failed_until : sim->at[i] < failed_until[d->action]) {
                                dump(sim);
                                fail_msg("%s within the backoff of its failure", decision_name(d));
                        }
                        if (d->action == ACTION_RESET)
                                last_reset_emergency = emergency_reset;
                }
                /* The ladder's own actions: those paced by their rung (the registry's "paced"). */
                if (decision_is_action(d) && action_info(d->action)->paced) {
                        /* Admission carried to a new process is not paced by the old one's actions
                         * (admit is the union member of admission's decisions only). */
                        bool carried = d->action == ACTION_ADMIT && d->admit.carried;
                        if (last_action && !d->emergency && !carried && sim->at[i] - last_action < sim->p.settle) {
                                dump(sim);
                                fail_msg("two actions %" PRIu64 "us apart, under settle", sim->at[i] - last_action);
                        }
                        Level l = action_info(d->action)->level;
                        /* The emergency reset comes past the cooldown of a reset at reset.min-memory, and
                         * after reset.cooldown of the last emergency reset. */
                        bool exempt = d->code == ACTION_EMERGENCY_RESET && d->emergency;
                        bool again = carry_again && d->action == ACTION_ADMIT && d->admit.carried;
                        if (d->action == ACTION_ADMIT)
                                carry_again = false;
                        if (last_of[d->action] && !exempt && !again &&
                            sim->at[i] - last_of[d->action] < sim->p.step[l].cooldown) {
                                dump(sim);
                                fail_msg("%s repeated within its cooldown", decision_name(d));
                        }
                        if (exempt && !regrown && last_emergency_reset &&
                            sim->at[i] - last_emergency_reset < sim->p.step[LEVEL_RESET].cooldown) {
                                dump(sim);
                                fail_msg("emergency reset repeated within reset.cooldown");
                        }
                        if (exempt)
                                last_emergency_reset = sim->at[i];
                        last_action = last_of[d->action] = sim->at[i];
                }
                if (d->kind == DECISION_LEVEL) {
                        if (last_level_tick == sim->at[i]) {
                                dump(sim);
                                fail_msg("two rungs in one tick");
                        }
                        last_level_tick = sim->at[i];
                }
        }
}


/* 93 % and rising 100K/s (about 350M/h: the OOM hours away), one sample a second: trim, throttle
 * and reset come; the reset finds no session to end (its actuator fails, as when none holds
 * reset.min-memory), and the buffer pool is next. Stops at the first pool decision. */
void to_pool(Sim *sim) {
        bool reset_failed = false;
        for (usec_t t = 0; t < 600 * SEC && !find(sim, T_POOL, 0); t += SEC) {
                set_ws(sim, 9 * GB + 300 * MB + t / SEC * (MB / 10));
                sim_tick(sim, SEC);
                if (!reset_failed && sim->out.n_decisions > 0 &&
                    decision_class(&sim->out.decisions[sim->out.n_decisions - 1]) == T_RESET) {
                        action_feedback_fail(&sim->fb, ACTION_RESET);
                        reset_failed = true;
                }
        }
}

/* The actuator's answer to the latest pool decision, as the next sample brings it back. */
void pool_result(Sim *sim, int error, uint64_t freed) {
        const Decision *d = NULL;
        for (unsigned i = sim->n; i > 0 && !d; i--)
                if (decision_class(&sim->log[i - 1]) == T_POOL)
                        d = &sim->log[i - 1];
        assert_non_null(d);
        ActionResult r = { .error = error, .has_freed = error == 0 && freed > 0, .freed = freed };
        action_feedback_add(&sim->fb, d, &r);
}

/* A server at 90 % for a minute: throttled, memory.high on its way to (or at) the returned
 * target, the working set + 2 %. */
Sim *sim_throttled(uint64_t *ret_want) {
        Sim *sim = sim_new(false);
        set_ws(sim, 9 * GB); /* 90 % */
        sim_run(sim, 60 * SEC, SEC);
        expect(sim->e->level >= LEVEL_THROTTLE);
        *ret_want = PAGE_DOWN(9 * GB + apply_bp(BUDGET, 200));
        return sim;
}

void ramp_to_restart(Sim *sim) {
        set_ws(sim, 9 * GB + 700 * MB); /* 97 % */
        sim_run(sim, 120 * SEC, SEC);
}

/* The resets this tick decided find no session to end (or cannot connect): they fail. */
static void resets_result(Sim *sim, int error, bool found_nothing) {
        for (unsigned j = 0; j < sim->out.n_decisions; j++)
                if (decision_class(&sim->out.decisions[j]) == T_RESET) {
                        ActionResult r = { .error = error, .found_nothing = found_nothing };
                        action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                }
}

void resets_fail(Sim *sim, int error) {
        resets_result(sim, error, false);
}

/* The resets this tick decided end sessions and free this much, as the reset measures it (its
 * RSS may not fall: the server grows meanwhile), or find none (FINDS_NONE); the trims alike. */
void resets_free(Sim *sim, uint64_t freed) {
        if (freed == FINDS_NONE) {
                resets_result(sim, -ENOENT, true);
                return;
        }
        for (unsigned j = 0; j < sim->out.n_decisions; j++)
                if (decision_class(&sim->out.decisions[j]) == T_RESET) {
                        ActionResult r = { .error = 0, .has_freed = true, .freed = freed };
                        action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                }
}

void resets_free_nothing(Sim *sim) {
        resets_free(sim, 0);
}

void trims_free(Sim *sim, uint64_t freed) {
        for (unsigned j = 0; j < sim->out.n_decisions; j++)
                if (decision_class(&sim->out.decisions[j]) == T_TRIM) {
                        ActionResult r = { .error = 0, .has_freed = true, .freed = freed };
                        action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                }
}

/* A young server stalled at its limit: the working set flat at 97% (no ETA), PSI full 30%. The
 * stall is the emergency: the emergency reset, then the restart min-uptime would hold. Without the
 * stall (PSI full 5%) the restart stays held. */
void stall_at_limit(Sim *sim, uint32_t full) {
        sim->s.uptime = 5 * USEC_PER_MINUTE;
        sim->s.psi.full.avg10 = full;
        set_ws(sim, BUDGET - apply_bp(BUDGET, 300));
}

void stalled_at_limit(Sim *sim, uint32_t full) {
        stall_at_limit(sim, full);
        for (unsigned i = 0; i < 300 && !find(sim, T_RESTART, 0); i++) {
                sim_tick(sim, SEC);
                resets_free_nothing(sim);
        }
}

/* A young server (restart.min-uptime holds its restart) growing fast: in the emergency, the reset
 * rung's reset is the emergency reset, before the pool step and the restart, well below
 * restart.at (which a server pressing on the throttle's memory.high does not reach: the kernel
 * holds it there, stalled); and again once reset.cooldown is over while the emergency lasts.
 * Rising slowly (no emergency), pressing on memory.high ends nothing. */
unsigned climb_into_high(Sim *sim, uint64_t per_sec, unsigned seconds, bool to_restart, uint64_t freed) {
        for (unsigned i = 0; i < seconds && !find(sim, T_RESTART, 0) &&
                             (to_restart || !find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0));
             i++) {
                uint64_t ws = MIN(sim->s.memory_current + per_sec, sim->s.memory_high);
                set_ws(sim, ws);
                sim_tick(sim, SEC);
                resets_free(sim, freed);
        }
        return ratio_bp(sim->s.memory_current, BUDGET);
}

/* An emergency that flickers (a stall at restart.at whose PSI full dips under the guard for one
 * sample every 20 s), the restart disabled: the emergency reset, though each dip ends one
 * emergency, never comes within reset.cooldown of the last; and memory.high, with no restart to
 * make way for, does not make way. */
Sim *flicker(unsigned seconds, int reset_error) {
        Sim *sim = sim_new(false);
        sim->p.step[LEVEL_RESTART].enabled = false;
        sim_policy_changed(sim);
        set_ws(sim, BUDGET - apply_bp(BUDGET, 300));
        for (unsigned i = 0; i < seconds; i++) {
                sim->s.psi.full.avg10 = i % 20 == 19 ? 0 : 3000;
                set_ws(sim, MIN(BUDGET - apply_bp(BUDGET, 300), sim->s.memory_high));
                sim_tick(sim, SEC);
                if (reset_error)
                        resets_fail(sim, reset_error);
                else
                        resets_free_nothing(sim);
        }
        return sim;
}

/* A database server that listens on nothing yet is starting: its steep rise (caches, recovery)
 * is no leak. The ladder waits: no trim, no memory.high lowered, no reset, pool, admission or
 * restart, said once; once it accepts clients, the trend starts over and the ladder is whole
 * again. Without the signal, the same rise climbs the ladder. */
void start_ramp(Sim *sim, bool known) {
        sim->s.uptime = 2 * SEC;
        sim->s.accepting = 0;
        if (known)
                sim->s.has |= SAMPLE_HAS_ACCEPTING;
        for (unsigned i = 0; i < 60; i++) {
                set_ws(sim, 2 * GB + (uint64_t) i * (130 * MB)); /* 20 % -> 97 % in a minute */
                sim_tick(sim, SEC);
        }
}

/* A connection storm: the working set from 89.5 % rising 300K/s (at admit.at 90 % after about
 * 170 s, its ETA about an hour: reset.at 92 % is 11 minutes away), the server's connections from
 * `from` rising `per_s` a second after a minute of calm at `from`. Stops at the first admission
 * decision, or after 400 s. */
void storm(Sim *sim, unsigned from, unsigned per_s) {
        sim->s.has |= SAMPLE_HAS_CONNECTIONS;
        sim->s.connections = from;
        set_ws(sim, STORM_WS);
        sim_run(sim, 60 * SEC, SEC);
        for (unsigned t = 0; t < 400 && !find(sim, T_ADMIT, 0); t++) {
                set_ws(sim, STORM_WS + (uint64_t) t * 300 * 1024);
                sim->s.connections = from + t * per_s;
                sim_tick(sim, SEC);
        }
}

void pool_reading(Sim *sim, uint64_t in_use, uint64_t room) {
        sim->s.has |= SAMPLE_HAS_POOL_FILL;
        sim->s.pool_in_use = in_use;
        sim->s.pool_room = room;
        sim->s.pool_read = sim->now + SEC - 300 * USEC_PER_MSEC;
}

/* A young server rising until the reset rung's reset (at reset.min-memory) is decided. */
Sim *young_server_to_reset(void) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        for (unsigned i = 0; i < 1800 && !find(sim, T_RESET, 0); i++) {
                set_ws(sim, sim->s.memory_current + 3 * MB); /* OOM in about 28 minutes */
                sim_tick(sim, SEC);
                trims_free(sim, 0);
        }
        return sim;
}
