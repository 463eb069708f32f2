/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>

#include "test-util.h"

#include "memgov/engine.h"
#include "memgov/feedback.h"
#include "memgov/units.h"
#include "engine-internal.h"

/* The rungs' own state, as the rungs keep it. */
#define ADMIT(sim) ((AdmitState *) engine_rung_state((sim)->e, LEVEL_ADMIT))
#define POOL(sim) ((PoolState *) engine_rung_state((sim)->e, LEVEL_POOL))
#define RESTART(sim) ((RestartState *) engine_rung_state((sim)->e, LEVEL_RESTART))
#define THROTTLE(sim) ((ThrottleState *) engine_rung_state((sim)->e, LEVEL_THROTTLE))

#define MB (1ULL << 20)
#define GB (1ULL << 30)
#define SEC USEC_PER_SEC
#define BUDGET (10 * GB)
/* memory.high and memory.max are kept in pages. */
#define PAGE_DOWN(x) ((x) - (x) % 4096)
#define CALM PAGE_DOWN(BUDGET - apply_bp(BUDGET, 300))

/* The helpers below look for decisions by class (engine.h): an action, or another kind. */
#define T_TRIM     (DECISION_ACTION + ACTION_TRIM)
#define T_SET_HIGH (DECISION_ACTION + ACTION_SET_HIGH)
#define T_SET_MAX  (DECISION_ACTION + ACTION_SET_MAX)
#define T_RESET    (DECISION_ACTION + ACTION_RESET)
#define T_RESTART  (DECISION_ACTION + ACTION_RESTART)
#define T_POOL     (DECISION_ACTION + ACTION_POOL)
#define T_ADMIT    (DECISION_ACTION + ACTION_ADMIT)
#define T_LEVEL    decision_kind_class(DECISION_LEVEL)
#define T_EFFECT   decision_kind_class(DECISION_EFFECT)
#define T_HOLD     decision_kind_class(DECISION_HOLD)
#define T_EVENT    decision_kind_class(DECISION_EVENT)

/* Drives the engine the way the daemon and replay do: one sample per tick. */
typedef struct Sim {
        Policy p;
        Engine *e;
        ActionFeedback fb; /* what the next tick tells the engine of its actions */
        Sample s;
        usec_t now;
        EngineOutput out;
        Decision log[4096];
        usec_t at[4096];
        unsigned n;
} Sim;

static Sim *sim_new(bool simulate) {
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

static void sim_free(Sim *sim) {
        engine_free(sim->e);
        free(sim);
}

/* Re-initialise after changing sim->p. */
static void sim_policy_changed(Sim *sim) {
        assert_int_equal(policy_validate(&sim->p, "test", NULL, NULL), 0);
        EngineOptions o = sim->e->opts;
        engine_free(sim->e);
        assert_int_equal(engine_new(&sim->p, &o, &sim->e), 0);
}

static void sim_tick(Sim *sim, usec_t dt) {
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
        sim->s.failed = sim->s.reported = sim->s.not_done = 0;
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

static void sim_run(Sim *sim, usec_t duration, usec_t step) {
        for (usec_t t = 0; t < duration; t += step)
                sim_tick(sim, step);
}

static void set_ws(Sim *sim, uint64_t ws) {
        sim->s.memory_current = ws;
        sim->s.inactive_file = 0;
}

static unsigned count(const Sim *sim, unsigned k, unsigned from) {
        unsigned c = 0;
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k)
                        c++;
        return c;
}

static const Decision *find(const Sim *sim, unsigned k, unsigned from) {
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k)
                        return &sim->log[i];
        return NULL;
}

static const Decision *find_text(const Sim *sim, unsigned k, const char *text, unsigned from) {
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k && strstr(sim->log[i].reason, text))
                        return &sim->log[i];
        return NULL;
}

/* The engine tests assert what was decided and why by code; the prose is the golden files'. */
static const Decision *find_code(const Sim *sim, unsigned k, DecisionCode code, unsigned from) {
        for (unsigned i = from; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == k && sim->log[i].code == code)
                        return &sim->log[i];
        return NULL;
}

/* A move of the ladder from one rung to another; code _DECISION_CODE_MAX: for any reason. */
static const Decision *find_level(const Sim *sim, Level from_l, Level to_l, DecisionCode code, unsigned from) {
        for (unsigned i = from; i < sim->n; i++) {
                const Decision *d = &sim->log[i];
                if (d->kind == DECISION_LEVEL && d->from == from_l && d->level == to_l &&
                    (code == _DECISION_CODE_MAX || d->code == code))
                        return d;
        }
        return NULL;
}

/* When the last decision of this kind was taken, 0 if none. */
static usec_t last_at(const Sim *sim, unsigned k) {
        for (unsigned i = sim->n; i > 0; i--)
                if (decision_class(&sim->log[i - 1]) == k)
                        return sim->at[i - 1];
        return 0;
}

static void dump(const Sim *sim) {
        for (unsigned i = 0; i < sim->n; i++)
                fprintf(stderr, "  %6" PRIu64 "s %-12s %s\n", sim->at[i] / SEC, decision_name(&sim->log[i]),
                        sim->log[i].reason);
}

#define expect(cond)                                   \
        do {                                           \
                if (!(cond)) {                         \
                        dump(sim);                     \
                        fail_msg("expected: %s", #cond); \
                }                                      \
        } while (0)

/* What holds in every run: ladder actions settle before the next one (unless the ETA is an
 * emergency), at most one rung per tick, trims and resets respect their cooldowns. */
static void check_invariants(const Sim *sim) {
        usec_t last_action = 0, last_of[_ACTION_KIND_MAX] = {}, last_emergency_reset = 0;
        usec_t last_level_tick = 0;
        /* A failure's backoff: the action that failed not again before it; an emergency reset
         * only past the backoff of an emergency reset's failure. */
        usec_t failed_until[_ACTION_KIND_MAX] = {}, emergency_failed_until = 0;
        bool last_reset_emergency = false, carry_again = false;
        for (unsigned i = 0; i < sim->n; i++) {
                const Decision *d = &sim->log[i];
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
                                        emergency_failed_until = 0;
                                /* The emergency reset's reset.cooldown is of the old process's
                                 * sessions. */
                                last_emergency_reset = 0;
                        }
                if (d->kind == DECISION_EFFECT && d->code == EFFECT_FAILED && action_info(d->action)->paced) {
                        usec_t until = sim->at[i] + action_info(d->action)->backoff(&sim->p);
                        if (d->action == ACTION_RESET && last_reset_emergency)
                                emergency_failed_until = until;
                        failed_until[d->action] = until;
                }
                if (decision_is_action(d) && action_info(d->action)->paced) {
                        bool emergency_reset = d->code == ACTION_EMERGENCY_RESET;
                        if (emergency_reset ? sim->at[i] < emergency_failed_until : sim->at[i] < failed_until[d->action]) {
                                dump(sim);
                                fail_msg("%s within the backoff of its failure", decision_name(d));
                        }
                        if (d->action == ACTION_RESET)
                                last_reset_emergency = emergency_reset;
                }
                /* The ladder's own actions: those paced by their rung (the registry's "paced"). */
                if (decision_is_action(d) && action_info(d->action)->paced) {
                        /* Admission carried to a new process is not paced by the old one's actions. */
                        if (last_action && !d->emergency && !d->admit.carried && sim->at[i] - last_action < sim->p.settle) {
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
                        if (exempt && last_emergency_reset &&
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

static void test_calm(void **state) {
        Sim *sim = sim_new(false);
        set_ws(sim, 5 * GB);
        sim_run(sim, 600 * SEC, 5 * SEC);
        /* The only decision: memory.high to its calm value, the budget minus 3 %. */
        expect(sim->n == 1);
        expect(decision_class(&sim->log[0]) == T_SET_HIGH);
        expect(sim->log[0].value == CALM);
        expect(sim->log[0].value % 4096 == 0);
        expect(sim->log[0].old_value == SIZE_UNLIMITED);
        expect(sim->e->level == LEVEL_NORMAL);
        expect(sim->out.next_sample == 5 * SEC);
        expect(sim->out.n_decisions == 0); /* and nothing more on the ticks after it */
        check_invariants(sim);
        sim_free(sim);
}

/* A recorded trace's clock may start at 0 (a replay of one that does): an action at time 0 is
 * an action all the same, and its cooldown and settle hold. */
static void test_action_at_time_zero(void **state) {
        Sim *sim = sim_new(false);
        sim->now = 0;
        set_ws(sim, BUDGET / 100 * 80);
        sim_tick(sim, 0);
        assert_int_equal(count(sim, T_TRIM, 0), 1);
        sim_run(sim, 5 * USEC_PER_MINUTE, 5 * SEC);
        assert_int_equal(count(sim, T_TRIM, 0), 1);
        sim_free(sim);
}

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

static void test_effect_from_working_set(void **state) {
        Sim *sim = sim_new(true);
        /* A minute just under 75 % (a rise there would be a trend: it would bring the trim
         * sooner), one step over it (a trim), then the working set falls by about 500M. */
        for (unsigned i = 0; i < 60; i++) {
                set_ws(sim, 7 * GB + (uint64_t) (i % 2) * (GB / 100) + 480 * MB);
                sim_tick(sim, SEC);
        }
        unsigned mark = sim->n;
        set_ws(sim, 7 * GB + 600 * MB);
        sim_tick(sim, SEC);
        expect(find(sim, T_TRIM, mark));
        set_ws(sim, 7 * GB);
        sim_run(sim, 20 * SEC, SEC);
        const Decision *eff = find(sim, T_EFFECT, mark);
        /* Measured on medians: the level before was 7.49G (not the 7.6G of the last sample). */
        expect(eff && eff->value > 450 * MB && eff->value < 550 * MB);
        expect(eff->code == EFFECT_FREED && eff->action == ACTION_TRIM);

        /* A spike at the decision is not mistaken for the level: no phantom gain. */
        check_invariants(sim);
        sim_free(sim);
        sim = sim_new(true);
        set_ws(sim, 7 * GB);
        sim_run(sim, 30 * SEC, SEC);
        set_ws(sim, 7 * GB + 700 * MB);
        sim_tick(sim, SEC); /* one sample at 77 %: trim */
        expect(find(sim, T_TRIM, 0));
        set_ws(sim, 7 * GB);
        sim_run(sim, 20 * SEC, SEC);
        eff = find(sim, T_EFFECT, 0);
        /* A dry run measures nothing: the effect is said to be an assumption. */
        expect(eff && eff->value == 0 && eff->code == EFFECT_TOO_LITTLE && eff->action == ACTION_TRIM);
        check_invariants(sim);
        sim_free(sim);
}

static void test_hysteresis(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 8 * GB);
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->e->level == LEVEL_TRIM);
        /* 72 %: below trim.at but within the 5 % hysteresis: stays. */
        set_ws(sim, 7 * GB + 200 * MB);
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->e->level == LEVEL_TRIM);
        /* 69 %: leaves. */
        set_ws(sim, 6 * GB + 900 * MB);
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL);
        expect(find_level(sim, LEVEL_TRIM, LEVEL_NORMAL, LEVEL_DOWN_CALM, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_eta_trigger(void **state) {
        Sim *sim = sim_new(true);
        /* 50 % and rising 1G/h: 5h to the budget, under trim.eta 6h, while far below trim.at. */
        uint64_t ws = 4 * GB;
        for (unsigned i = 0; i < 3600; i++) {
                set_ws(sim, ws + (uint64_t) i * (GB / 3600));
                sim_tick(sim, SEC);
        }
        const Decision *l = find(sim, T_LEVEL, 0);
        expect(l && l->level == LEVEL_TRIM);
        expect(l && l->code == LEVEL_UP_ETA);
        expect(strstr(l->reason, "rising 1G/h"));
        expect(find(sim, T_TRIM, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_one_rung_per_tick_and_settle(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 5 * GB);
        sim_run(sim, 10 * SEC, SEC);
        unsigned mark = sim->n;

        /* 93 % at once, flat: trim first, then each rung only once the last action settled. */
        set_ws(sim, 9 * GB + 300 * MB);
        sim_tick(sim, SEC);
        usec_t t0 = sim->now;
        sim_run(sim, 120 * SEC, SEC);
        Level seen[8];
        usec_t when[8];
        unsigned n = 0;
        for (unsigned i = mark; i < sim->n && n < 8; i++)
                if (sim->log[i].kind == DECISION_LEVEL && sim->log[i].level > sim->log[i].from) {
                        seen[n] = sim->log[i].level;
                        when[n++] = sim->at[i];
                }
        expect(n == 3);
        expect(seen[0] == LEVEL_TRIM && when[0] == t0);
        expect(seen[1] == LEVEL_THROTTLE && when[1] >= t0 + 15 * SEC);
        expect(seen[2] == LEVEL_RESET);
        expect(find(sim, T_RESET, mark));
        /* Flat: nothing rises, so a reset that frees nothing does not bring the buffer pool. */
        expect(!find(sim, T_POOL, mark));
        /* memory.high came down toward working set + 2 %, from the calm value, 1 % per 5s. */
        const Decision *h = find_text(sim, T_SET_HIGH, "throttle", mark);
        expect(h && h->value < h->old_value);
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

/* 93 % and rising 100K/s (about 350M/h: the OOM hours away), one sample a second: trim, throttle
 * and reset come; the reset finds no session to end (its actuator fails, as when none holds
 * reset.min-memory), and the buffer pool is next. Stops at the first pool decision. */
static void to_pool(Sim *sim) {
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
static void pool_result(Sim *sim, int error, uint64_t freed) {
        const Decision *d = NULL;
        for (unsigned i = sim->n; i > 0 && !d; i--)
                if (decision_class(&sim->log[i - 1]) == T_POOL)
                        d = &sim->log[i - 1];
        assert_non_null(d);
        ActionResult r = { .error = error, .has_freed = error == 0 && freed > 0, .freed = freed };
        action_feedback_add(&sim->fb, d, &r);
}

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

/* A server at 90 % for a minute: throttled, memory.high on its way to (or at) the returned
 * target, the working set + 2 %. */
static Sim *sim_throttled(uint64_t *ret_want) {
        Sim *sim = sim_new(false);
        set_ws(sim, 9 * GB); /* 90 % */
        sim_run(sim, 60 * SEC, SEC);
        expect(sim->e->level >= LEVEL_THROTTLE);
        *ret_want = PAGE_DOWN(9 * GB + apply_bp(BUDGET, 200));
        return sim;
}

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

        /* The stall is over, avg10 still shows it: the guard holds until both are under half of it. */
        sim->s.memory_high = sim->e->limits.high_set;
        sim->s.psi.full.avg10 = 1500;
        sim_run(sim, 3 * SEC, SEC);
        expect(THROTTLE(sim)->psi_guard);
        sim->s.psi.full.avg10 = 500;
        sim_tick(sim, SEC);
        expect(!THROTTLE(sim)->psi_guard);
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

static void ramp_to_restart(Sim *sim) {
        set_ws(sim, 9 * GB + 700 * MB); /* 97 % */
        sim_run(sim, 120 * SEC, SEC);
}

/* A budget.size below memory.max: the raise starts from memory.max and the restore puts back
 * exactly what memory.max was, never the (smaller) budget. */
static void test_max_raise_with_smaller_budget(void **state) {
        Sim *sim = sim_new(false);
        sim->p.budget_mode = BUDGET_SIZE;
        sim->p.budget_size = 8 * GB;
        sim_policy_changed(sim);
        set_ws(sim, 8 * GB - 200 * MB); /* 97.5 % of the 8G budget */
        sim_run(sim, 120 * SEC, SEC);
        const Decision *m = find(sim, T_SET_MAX, 0);
        expect(m && m->old_value == BUDGET && m->value == PAGE_DOWN(BUDGET + apply_bp(8 * GB, 500)));
        unsigned mark = sim->n;
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_tick(sim, SEC);
        const Decision *back = find(sim, T_SET_MAX, mark);
        expect(back && back->value == BUDGET);
        expect(sim->s.memory_max == BUDGET);
        sim_free(sim);
}

/* Leaving: memory.high back as found, a raised memory.max restored; nothing in a dry run. */
static void test_leave(void **state) {
        Decision d[2];
        Sim *sim = sim_new(false);
        sim_tick(sim, SEC);
        /* The calm memory.high was written from "max". */
        expect(sim->s.memory_high == CALM);
        expect(engine_leave(sim->e, "memgov stops", d, 2) == 1 && decision_class(&d[0]) == T_SET_HIGH && d[0].value == SIZE_UNLIMITED &&
               strstr(d[0].reason, "as it was found"));
        ramp_to_restart(sim);
        expect(sim->e->limits.max_raised);
        /* While the server stops, memory.high is out of the way at max (as it was found): only
         * memory.max to put back. */
        expect(sim->s.memory_high == SIZE_UNLIMITED);
        expect(engine_leave(sim->e, "memgov stops", d, 2) == 1 && decision_class(&d[0]) == T_SET_MAX && d[0].value == BUDGET);
        sim_free(sim);

        sim = sim_new(true);
        ramp_to_restart(sim);
        expect(engine_leave(sim->e, "memgov stops", d, 2) == 0);
        sim_free(sim);
}

static void test_restart_and_max_raise(void **state) {
        Sim *sim = sim_new(false);
        ramp_to_restart(sim);
        const Decision *r = find(sim, T_RESTART, 0);
        expect(r && strstr(r->reason, "graceful restart (1 of at most 1 in 24h)"));
        /* The figures it was decided on travel with it (the hooks' environment). */
        expect(r->working_set == 9 * GB + 700 * MB && r->budget == BUDGET);
        const Decision *m = find(sim, T_SET_MAX, 0);
        expect(m && m->value == PAGE_DOWN(BUDGET + apply_bp(BUDGET, 500)) && m->old_value == BUDGET);
        /* The raise comes before the restart, in the same tick. */
        expect(m < r);
        expect(RESTART(sim)->pending);

        /* A new server process: the restart is done and memory.max goes back. */
        unsigned mark = sim->n;
        expect(sim->s.memory_max == PAGE_DOWN(BUDGET + apply_bp(BUDGET, 500)));
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_tick(sim, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_DONE, mark));
        const Decision *back = find(sim, T_SET_MAX, mark);
        expect(back && back->value == BUDGET);
        expect(!RESTART(sim)->pending);
        /* Budget stayed 10G while memory.max was raised. */
        expect(sim->out.budget == BUDGET);
        check_invariants(sim);
        sim_free(sim);
}

/* While the server stops, memory.max is raised again by restart.max-raise each time the server
 * comes within half of it of the raised value, up to restart.max-raise-total, never past host RAM
 * minus budget.host-reserve; a raise again that fails leaves the one before it, and the restore
 * after the restart puts back what memory.max was before any. */
static void test_stop_raises_again(void **state) {
        const uint64_t step = apply_bp(BUDGET, 500);
        Sim *sim = sim_new(false);
        ramp_to_restart(sim);
        expect(RESTART(sim)->pending && sim->s.memory_max == PAGE_DOWN(BUDGET + step));
        unsigned mark = sim->n;
        set_ws(sim, BUDGET + step / 4); /* not within half a step of the raised limit */
        sim_run(sim, 3 * SEC, SEC);
        expect(count(sim, T_SET_MAX, mark) == 0);
        /* Page cache up to the raised limit, the working set well under it: no raise. */
        mark = sim->n;
        sim->s.memory_current = sim->s.memory_max - MB;
        sim->s.inactive_file = step;
        sim_run(sim, 3 * SEC, SEC);
        expect(count(sim, T_SET_MAX, mark) == 0);
        uint64_t want = PAGE_DOWN(BUDGET + step);
        for (unsigned i = 2; i <= 4; i++) {
                mark = sim->n;
                set_ws(sim, sim->s.memory_max - step / 4);
                sim_tick(sim, SEC);
                const Decision *m = find(sim, T_SET_MAX, mark);
                want = PAGE_DOWN(want + step);
                expect(m && m->old_value + step >= m->value && m->value == want && strstr(m->reason, "stopping server"));
                expect(count(sim, T_SET_MAX, mark) == 1);
        }
        expect(sim->s.memory_max == PAGE_DOWN(PAGE_DOWN(PAGE_DOWN(PAGE_DOWN(BUDGET + step) + step) + step) + step));
        /* 20 % of the budget in all: no more. */
        mark = sim->n;
        set_ws(sim, sim->s.memory_max - 10 * MB);
        sim_run(sim, 3 * SEC, SEC);
        expect(count(sim, T_SET_MAX, mark) == 0);
        /* The new server process: memory.max back to what it was before the first raise. */
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_tick(sim, SEC);
        const Decision *back = find(sim, T_SET_MAX, mark);
        expect(back && back->value == BUDGET && sim->s.memory_max == BUDGET);
        check_invariants(sim);
        sim_free(sim);

        /* The host's bound: 1G reserve, 300M above the first raise. */
        sim = sim_new(false);
        sim->p.host_reserve = GB;
        sim->s.has |= SAMPLE_HAS_HOST;
        sim->s.host_total = BUDGET + step + 300 * MB + GB;
        ramp_to_restart(sim);
        mark = sim->n;
        set_ws(sim, sim->s.memory_max - MB);
        sim_tick(sim, SEC);
        const Decision *m = find(sim, T_SET_MAX, mark);
        expect(m && m->value == PAGE_DOWN(BUDGET + step + 300 * MB) && strstr(m->reason, "host-reserve"));
        mark = sim->n;
        set_ws(sim, sim->s.memory_max - MB);
        sim_run(sim, 3 * SEC, SEC);
        expect(count(sim, T_SET_MAX, mark) == 0);
        sim_free(sim);

        /* No room at all above memory.max: the restart goes on, and says so. */
        sim = sim_new(false);
        sim->p.host_reserve = GB;
        sim->s.has |= SAMPLE_HAS_HOST;
        sim->s.host_total = BUDGET + GB;
        ramp_to_restart(sim);
        const Decision *r = find(sim, T_RESTART, 0);
        expect(r && strstr(r->reason, "memory.max not raised: no room") && !find(sim, T_SET_MAX, 0));
        sim_free(sim);

        /* A raise again that fails: the first raise holds, and is restored after the restart. */
        sim = sim_new(false);
        ramp_to_restart(sim);
        uint64_t first = sim->s.memory_max;
        set_ws(sim, first - MB);
        mark = sim->n;
        sim_tick(sim, SEC);
        expect(find(sim, T_SET_MAX, mark));
        sim->s.memory_max = first; /* not written */
        sim->s.failed = 1u << ACTION_SET_MAX;
        sim_tick(sim, SEC);
        expect(sim->e->limits.max_raised && sim->e->limits.max_raised_to == first);
        mark = sim->n;
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_run(sim, 120 * SEC, SEC);
        back = find(sim, T_SET_MAX, mark);
        expect(back && back->value == BUDGET && sim->s.memory_max == BUDGET);
        sim_free(sim);

        /* The new server process while a raise again is still being written: the restore waits
         * for it (one write of memory.max at a time), then puts memory.max back. */
        sim = sim_new(false);
        ramp_to_restart(sim);
        set_ws(sim, sim->s.memory_max - MB);
        mark = sim->n;
        sim_tick(sim, SEC);
        expect(count(sim, T_SET_MAX, mark) == 1);
        sim->s.pending = 1u << ACTION_SET_MAX;
        mark = sim->n;
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_run(sim, 3 * SEC, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_DONE, mark) && count(sim, T_SET_MAX, mark) == 0);
        sim->s.pending = 0;
        sim_tick(sim, SEC);
        back = find(sim, T_SET_MAX, mark);
        expect(back && back->value == BUDGET && sim->s.memory_max == BUDGET && !sim->e->limits.max_raised);
        check_invariants(sim);
        sim_free(sim);
}

/* The restore of memory.max decided and not carried out yet: the sample still shows the raised
 * value, and the budget (hence the calm memory.high) stays the one memory.max is going back to. */
static void test_budget_while_max_restore_pending(void **state) {
        Sim *sim = sim_new(false);
        ramp_to_restart(sim);
        uint64_t raised = sim->s.memory_max;
        expect(raised > BUDGET);
        unsigned mark = sim->n;
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_tick(sim, SEC);
        expect(find(sim, T_SET_MAX, mark));
        /* The write has not landed: memory.max still raised, the restore pending. */
        sim->s.memory_max = raised;
        sim->s.pending |= 1u << ACTION_SET_MAX;
        for (unsigned i = 0; i < 5; i++) {
                sim_tick(sim, SEC);
                expect(sim->out.budget == BUDGET);
        }
        for (unsigned i = mark; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == T_SET_HIGH && sim->log[i].value != SIZE_UNLIMITED)
                        expect(sim->log[i].value <= CALM);
        sim->s.pending = 0;
        sim->s.memory_max = BUDGET;
        sim_tick(sim, SEC);
        expect(sim->out.budget == BUDGET);
        sim_free(sim);
}

/* The resets this tick decided find no session to end (or cannot connect): they fail. */
#define FINDS_NONE UINT64_MAX
static void resets_fail(Sim *sim, int error) {
        for (unsigned j = 0; j < sim->out.n_decisions; j++)
                if (decision_class(&sim->out.decisions[j]) == T_RESET) {
                        ActionResult r = { .error = error };
                        action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                }
}

/* The resets this tick decided end sessions and free this much, as the reset measures it (its
 * RSS may not fall: the server grows meanwhile), or find none (FINDS_NONE); the trims alike. */
static void resets_free(Sim *sim, uint64_t freed) {
        if (freed == FINDS_NONE) {
                resets_fail(sim, -ENOENT);
                return;
        }
        for (unsigned j = 0; j < sim->out.n_decisions; j++)
                if (decision_class(&sim->out.decisions[j]) == T_RESET) {
                        ActionResult r = { .error = 0, .has_freed = true, .freed = freed };
                        action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                }
}

static void resets_free_nothing(Sim *sim) {
        resets_free(sim, 0);
}


static void trims_free(Sim *sim, uint64_t freed) {
        for (unsigned j = 0; j < sim->out.n_decisions; j++)
                if (decision_class(&sim->out.decisions[j]) == T_TRIM) {
                        ActionResult r = { .error = 0, .has_freed = true, .freed = freed };
                        action_feedback_add(&sim->fb, &sim->out.decisions[j], &r);
                }
}

/* A young server stalled at its limit: the working set flat at 97% (no ETA), PSI full 30%. The
 * stall is the emergency: the emergency reset, then the restart min-uptime would hold. Without the
 * stall (PSI full 5%) the restart stays held. */
static void stall_at_limit(Sim *sim, uint32_t full) {
        sim->s.uptime = 5 * USEC_PER_MINUTE;
        sim->s.psi.full.avg10 = full;
        set_ws(sim, BUDGET - apply_bp(BUDGET, 300));
}

static void stalled_at_limit(Sim *sim, uint32_t full) {
        stall_at_limit(sim, full);
        for (unsigned i = 0; i < 300 && !find(sim, T_RESTART, 0); i++) {
                sim_tick(sim, SEC);
                resets_free_nothing(sim);
        }
}

static void test_restart_when_stalled_at_limit(void **state) {
        Sim *sim = sim_new(false);
        stalled_at_limit(sim, 3000);
        const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        const Decision *r = find(sim, T_RESTART, 0);
        expect(er && strstr(er->reason, "stalled at restart.at: PSI full avg10 30% >= throttle.full-guard 20%"));
        expect(r && r > er && strstr(r->reason, "emergency: stalled at restart.at (PSI full)"));
        expect(sim->out.eta == USEC_INFINITY || sim->out.eta > sim->p.emergency_eta);
        sim_free(sim);

        sim = sim_new(false);
        stalled_at_limit(sim, 500);
        expect(!find(sim, T_RESTART, 0) && find_code(sim, T_HOLD, HOLD_MIN_UPTIME, 0));
        expect(!find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0));
        sim_free(sim);
}

/* Stalled at restart.at with the emergency reset still out (a server that answers no one is slow
 * to list its sessions): no OOM is coming to bound the wait, and the server answers nothing
 * meanwhile. The restart waits for the reset for sql.query-timeout, then goes, and says why. */
static void test_restart_when_stalled_behind_a_reset(void **state) {
        Sim *sim = sim_new(false);
        stall_at_limit(sim, 3000);
        for (unsigned i = 0; i < 300 && !find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0); i++)
                sim_tick(sim, SEC);
        const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        expect(er && !find(sim, T_RESTART, 0));
        usec_t reset_at = er ? sim->at[er - sim->log] : 0;
        sim->s.pending = 1u << ACTION_RESET;
        const Decision *r = NULL;
        for (unsigned i = 0; i < 120 && !r; i++) {
                sim_tick(sim, SEC);
                r = find(sim, T_RESTART, 0);
                expect(r || sim->now - reset_at < sim->p.sql_query_timeout);
        }
        expect(r && sim->at[r - sim->log] - reset_at >= sim->p.sql_query_timeout &&
               sim->at[r - sim->log] - reset_at < sim->p.sql_query_timeout + 2 * SEC);
        expect(r && strstr(r->reason, "not waited for longer") && sim->e->act[ACTION_RESET].pending);
        expect(sim->out.eta == USEC_INFINITY || sim->out.eta > sim->p.emergency_eta);
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

/* A young server (restart.min-uptime holds its restart) growing fast: in the emergency, the reset
 * rung's reset is the emergency reset, before the pool step and the restart, well below
 * restart.at (which a server pressing on the throttle's memory.high does not reach: the kernel
 * holds it there, stalled); and again once reset.cooldown is over while the emergency lasts.
 * Rising slowly (no emergency), pressing on memory.high ends nothing. */
static unsigned climb_into_high(Sim *sim, uint64_t per_sec, unsigned seconds, bool to_restart, uint64_t freed) {
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

static void test_emergency_reset_at_the_reset_rung(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        unsigned at = climb_into_high(sim, 30 * MB, 600, false, 100 * MB);
        const Decision *er = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0);
        expect(er && strstr(er->reason, "OOM under restart.emergency-eta 10m"));
        expect(er->emergency && er->reset.max == sim->p.reset_emergency_max &&
               er->reset.min_memory == sim->p.reset_emergency_min_memory);
        /* The first reset of the emergency, and nothing above the reset rung before it. */
        expect(find(sim, T_RESET, 0) == er);
        expect(!find(sim, T_POOL, 0) && !find(sim, T_RESTART, 0));
        /* Well below restart.at, and not pressing on memory.high yet. */
        expect(at < sim->p.step[LEVEL_RESTART].at);
        expect(sim->s.memory_current + apply_bp(BUDGET, sim->p.throttle_margin) / 2 < sim->s.memory_high);

        /* It freed 100M; the server climbs on. After reset.cooldown, the restart held back by
         * min-uptime, it comes again; that one finds no session, and there is no third:
         * memory.high makes way, and at restart.at, in the emergency, the restart min-uptime
         * would hold. */
        unsigned mark = sim->n;
        at = climb_into_high(sim, 30 * MB, 600, true, FINDS_NONE);
        const Decision *again = find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, mark);
        expect(again && strstr(again->reason, "; the restart held back"));
        expect(sim->at[again - sim->log] - sim->at[er - sim->log] >= sim->p.step[LEVEL_RESET].cooldown);
        expect(!find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, (unsigned) (again - sim->log) + 1));
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
         * benchmark): it comes again after reset.cooldown. Where it finds no session: once an
         * emergency. */
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
                expect((second == NULL) == none);
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

/* The emergency reset's answer is waited for before the restart, but not past the OOM: with the
 * reset still out (a server slow to list its sessions), the restart waits while the OOM is
 * sql.query-timeout away or more, and goes once it is nearer, the reset still out, its log line
 * saying so. In the outcome benchmark's storm the restart at 96% waited 2 s so, the OOM 2-4 s
 * away. For an old server, whose restart the ETA calls for, and a young one, whose restart only
 * restart.at and the emergency allow: it waits there too, at restart.at, while the OOM is far
 * enough. */
static void test_restart_not_behind_a_reset_past_the_oom(void **state) {
        for (int young = 0; young < 2; young++) {
                Sim *sim = sim_new(false);
                if (young)
                        sim->s.uptime = 2 * USEC_PER_MINUTE;
                for (unsigned i = 0; i < 900 && !find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0); i++) {
                        /* An OOM 7 minutes away when first seen: an emergency from the start. */
                        set_ws(sim, sim->s.memory_current + 12 * MB);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                }
                expect(find_code(sim, T_RESET, ACTION_EMERGENCY_RESET, 0) && !find(sim, T_RESTART, 0));
                /* The emergency reset is out, and stays out: no result, and the actuator at it. */
                expect(sim->e->act[ACTION_RESET].pending);
                sim->s.pending = 1u << ACTION_RESET;
                unsigned mark = sim->n, waited_at_restart_at = 0;
                const Decision *restart = NULL;
                for (unsigned i = 0; i < 900 && !restart && sim->s.memory_current < BUDGET; i++) {
                        set_ws(sim, sim->s.memory_current + 20 * MB);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                        restart = find(sim, T_RESTART, mark);
                        if (restart)
                                break;
                        /* Waiting: the OOM not nearer than sql.query-timeout, or (young) the working
                         * set not at restart.at. */
                        expect(sim->out.eta >= sim->p.sql_query_timeout ||
                               (young && sim->out.ws_bp < sim->p.step[LEVEL_RESTART].at));
                        if (sim->out.ws_bp >= sim->p.step[LEVEL_RESTART].at)
                                waited_at_restart_at++;
                }
                /* It went before the OOM, the reset still out, once the OOM was nearer than
                 * sql.query-timeout, and said so. */
                expect(restart != NULL && sim->out.eta < sim->p.sql_query_timeout && sim->s.memory_current < BUDGET);
                expect(restart && strstr(restart->reason, "the reset under way not waited for"));
                expect(!young || waited_at_restart_at > 0);
                expect(sim->e->act[ACTION_RESET].pending && !find(sim, T_RESET, mark));
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

/* An emergency that flickers (a stall at restart.at whose PSI full dips under the guard for one
 * sample every 20 s), the restart disabled: the emergency reset, though each dip ends one
 * emergency, never comes within reset.cooldown of the last; and memory.high, with no restart to
 * make way for, does not make way. */
static Sim *flicker(unsigned seconds, int reset_error) {
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

/* A young server rising 60M/s, each action that gives memory back (the trim, the resets, the pool
 * step) giving back 4% of the budget, the rise going on after it: memgov's own drops do not make
 * the trend read "falling" (see trend.h) while the server climbs. */
static void test_own_drops_keep_the_trend(void **state) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        set_ws(sim, 4 * GB);
        unsigned drops = 0, blind = 0;
        for (unsigned i = 0; i < 120 && !find(sim, T_RESTART, 0); i++) {
                uint64_t ws = sim->s.memory_current + 60 * MB;
                for (unsigned j = 0; j < sim->out.n_decisions; j++) {
                        const Decision *d = &sim->out.decisions[j];
                        unsigned c = decision_class(d);
                        if (c != T_TRIM && c != T_RESET && c != T_POOL)
                                continue;
                        ActionResult r = { .error = 0, .has_freed = true, .freed = apply_bp(BUDGET, 400) };
                        action_feedback_add(&sim->fb, d, &r);
                        ws -= apply_bp(BUDGET, 400);
                        drops++;
                }
                set_ws(sim, MIN(ws, sim->s.memory_high));
                sim_tick(sim, SEC);
                /* After the first drop, rising: the trend says so. */
                if (drops > 0 && sim->out.trend_valid && !(sim->out.slope > 0))
                        blind++;
        }
        if (drops < 2 || blind > 0)
                fail_msg("%u drops of memgov's own; %u ticks after them read as not rising", drops, blind);
        sim_free(sim);
}

static void test_restart_guard_rails(void **state) {
        /* At most one a day. */
        Sim *sim = sim_new(true);
        ramp_to_restart(sim);
        expect(count(sim, T_RESTART, 0) == 1);
        sim->s.pid = 300;
        sim->s.uptime = 2 * USEC_PER_HOUR; /* past min-uptime */
        sim_run(sim, 2 * USEC_PER_HOUR, 10 * SEC);
        expect(count(sim, T_RESTART, 0) == 1);
        const Decision *h = find_code(sim, T_HOLD, HOLD_MAX_PER_DAY, 0);
        expect(h && h->action == ACTION_RESTART);
        /* Shown once, not on every tick. */
        expect(count(sim, T_HOLD, 0) <= 3);
        /* A day later, allowed again. */
        sim_run(sim, USEC_PER_DAY, 60 * SEC);
        expect(count(sim, T_RESTART, 0) == 2);
        check_invariants(sim);
        sim_free(sim);

        /* Minimum uptime. */
        sim = sim_new(true);
        sim->s.uptime = 10 * USEC_PER_MINUTE;
        ramp_to_restart(sim);
        expect(count(sim, T_RESTART, 0) == 0);
        expect(find_code(sim, T_HOLD, HOLD_MIN_UPTIME, 0));
        check_invariants(sim);
        sim_free(sim);

        /* A young server at restart.at still climbing, the OOM killer minutes away (a server
         * just back from an OOM kill): min-uptime does not hold the graceful restart back... */
        sim = sim_new(true);
        sim->s.uptime = 53 * SEC;
        for (unsigned i = 0; i < 60; i++) {
                set_ws(sim, 9 * GB + 600 * MB + (uint64_t) i * (3 * MB)); /* 96 %, +180M/min */
                sim_tick(sim, SEC);
        }
        const Decision *r = find(sim, T_RESTART, 0);
        expect(r && r->emergency);
        expect(!find_code(sim, T_HOLD, HOLD_MIN_UPTIME, 0));
        /* ...and before it, once, the largest sessions down to reset.emergency-min-memory: a
         * storm of many small sessions has none at reset.min-memory. */
        unsigned n_emergency = 0, first_emergency = sim->n;
        for (unsigned i = 0; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == T_RESET && sim->log[i].code == ACTION_EMERGENCY_RESET) {
                        expect(sim->log[i].emergency && sim->log[i].reset.max == sim->p.reset_emergency_max &&
                               sim->log[i].reset.min_memory == sim->p.reset_emergency_min_memory);
                        first_emergency = MIN(first_emergency, i);
                        n_emergency++;
                }
        expect(n_emergency == 1 && first_emergency < (unsigned) (r - sim->log));
        expect(sim->p.reset_emergency_max == 16 && sim->p.reset_emergency_min_memory == 8 * MB);
        check_invariants(sim);
        sim_free(sim);

        /* With emergency-max-per-step = 0, the restart alone. */
        sim = sim_new(true);
        sim->p.reset_emergency_max = 0;
        sim_policy_changed(sim);
        sim->s.uptime = 53 * SEC;
        for (unsigned i = 0; i < 60; i++) {
                set_ws(sim, 9 * GB + 600 * MB + (uint64_t) i * (3 * MB));
                sim_tick(sim, SEC);
        }
        expect(find(sim, T_RESTART, 0));
        for (unsigned i = 0; i < sim->n; i++)
                expect(sim->log[i].code != ACTION_EMERGENCY_RESET);
        check_invariants(sim);
        sim_free(sim);
        /* ...while a young server warming up, far below restart.at, is left alone even with a
         * steep rise. */
        sim = sim_new(true);
        sim->s.uptime = 53 * SEC;
        for (unsigned i = 0; i < 60; i++) {
                set_ws(sim, 5 * GB + (uint64_t) i * (60 * MB));
                sim_tick(sim, SEC);
        }
        expect(count(sim, T_RESTART, 0) == 0);
        check_invariants(sim);
        sim_free(sim);

        /* Restarts remembered from before a governor restart count. */
        sim = sim_new(true);
        usec_t earlier = sim->s.wall - 3 * USEC_PER_HOUR;
        engine_restore_restarts(sim->e, &earlier, 1);
        ramp_to_restart(sim);
        expect(count(sim, T_RESTART, 0) == 0);
        expect(find_code(sim, T_HOLD, HOLD_MAX_PER_DAY, 0));
        check_invariants(sim);
        sim_free(sim);
}

/* A database server that listens on nothing yet is starting: its steep rise (caches, recovery)
 * is no leak. The ladder waits: no trim, no memory.high lowered, no reset, pool, admission or
 * restart, said once; once it accepts clients, the trend starts over and the ladder is whole
 * again. Without the signal, the same rise climbs the ladder. */
static void start_ramp(Sim *sim, bool known) {
        sim->s.uptime = 2 * SEC;
        sim->s.accepting = 0;
        if (known)
                sim->s.has |= SAMPLE_HAS_ACCEPTING;
        for (unsigned i = 0; i < 60; i++) {
                set_ws(sim, 2 * GB + (uint64_t) i * (130 * MB)); /* 20 % -> 97 % in a minute */
                sim_tick(sim, SEC);
        }
}

static void test_starting_server(void **state) {
        Sim *sim = sim_new(false);
        start_ramp(sim, true);
        expect(sim->e->level == LEVEL_NORMAL && count(sim, T_LEVEL, 0) == 0);
        expect(count(sim, T_TRIM, 0) == 0 && count(sim, T_RESTART, 0) == 0 && count(sim, T_RESET, 0) == 0 &&
               count(sim, T_POOL, 0) == 0 && count(sim, T_ADMIT, 0) == 0);
        for (unsigned i = 0; i < sim->n; i++)
                if (decision_class(&sim->log[i]) == T_SET_HIGH)
                        expect(sim->log[i].value >= CALM);
        unsigned holds = 0;
        for (unsigned i = 0; i < sim->n; i++)
                holds += decision_class(&sim->log[i]) == T_HOLD && sim->log[i].code == HOLD_STARTING;
        expect(holds == 1);
        expect(!find_code(sim, T_EVENT, EVENT_SERVER_READY, 0));

        /* It accepts clients: said, and the trend is new (no ETA from the startup's rise). */
        unsigned mark = sim->n;
        sim->s.accepting = 1;
        sim_tick(sim, SEC);
        const Decision *ready = find_code(sim, T_EVENT, EVENT_SERVER_READY, mark);
        expect(ready && strstr(ready->reason, "2G") && strstr(ready->reason, "9.5G"));
        expect(!sim->out.trend_valid && sim->out.eta == USEC_INFINITY);
        /* At 97 %, the rungs come back on their thresholds. */
        sim_run(sim, 60 * SEC, SEC);
        expect(sim->e->level > LEVEL_TRIM);
        expect(find_level(sim, LEVEL_NORMAL, LEVEL_TRIM, LEVEL_UP_AT, mark) &&
               find_level(sim, LEVEL_TRIM, LEVEL_THROTTLE, LEVEL_UP_AT, mark));
        check_invariants(sim);
        sim_free(sim);

        /* The same rise with nothing known of the server's sockets: the ladder climbs. */
        sim = sim_new(false);
        start_ramp(sim, false);
        expect(sim->e->level > LEVEL_TRIM);
        expect(!find_code(sim, T_HOLD, HOLD_STARTING, 0));
        sim_free(sim);
}

/* A new server process, where the signal exists, starts by starting: the first samples of it,
 * before the kept session has a word on it, hold the ladder too, for a bounded time. */
static void test_new_process_starting(void **state) {
        Sim *sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 1;
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL);

        /* pid 555 at 97 %, nothing known of it yet: nothing above normal. */
        unsigned mark = sim->n;
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        sim->s.has &= ~SAMPLE_HAS_ACCEPTING;
        set_ws(sim, 9 * GB + 700 * MB);
        sim_run(sim, 25 * SEC, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, mark));
        expect(sim->e->level == LEVEL_NORMAL && count(sim, T_TRIM, mark) == 0 && count(sim, T_LEVEL, mark) == 0);
        expect(find_code(sim, T_HOLD, HOLD_STARTING, mark));

        /* Then it says it listens on nothing: still starting, the hold not said twice. */
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 0;
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL && count(sim, T_LEVEL, mark) == 0);
        unsigned holds = 0;
        for (unsigned i = mark; i < sim->n; i++)
                holds += decision_class(&sim->log[i]) == T_HOLD && sim->log[i].code == HOLD_STARTING;
        expect(holds == 1);
        sim->s.accepting = 1;
        sim_run(sim, 60 * SEC, SEC);
        expect(find_code(sim, T_EVENT, EVENT_SERVER_READY, mark));
        expect(sim->e->level > LEVEL_TRIM);
        sim_free(sim);

        /* A new process on which the signal never has a word: the ladder waits 30 s, no longer. */
        sim = sim_new(false);
        sim->s.has |= SAMPLE_HAS_ACCEPTING;
        sim->s.accepting = 1;
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        mark = sim->n;
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        sim->s.has &= ~SAMPLE_HAS_ACCEPTING;
        set_ws(sim, 9 * GB + 700 * MB);
        sim_run(sim, 20 * SEC, SEC);
        expect(sim->e->level == LEVEL_NORMAL);
        sim_run(sim, 60 * SEC, SEC);
        expect(sim->e->level > LEVEL_TRIM && !find_code(sim, T_EVENT, EVENT_SERVER_READY, mark));
        check_invariants(sim);
        sim_free(sim);

        /* Where the signal never existed, a new process is not held at all. */
        sim = sim_new(false);
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        set_ws(sim, 9 * GB + 700 * MB);
        sim_run(sim, 20 * SEC, SEC);
        expect(sim->e->level > LEVEL_NORMAL && !find_code(sim, T_HOLD, HOLD_STARTING, 0));
        sim_free(sim);
}

static void test_restart_windows_and_emergency(void **state) {
        Sim *sim = sim_new(true);
        unsigned n;
        /* Monday 12:00 is outside "Sat..Sun 02:00-06:00". */
        assert_int_equal(parse_windows("Sat..Sun 02:00-06:00", sim->p.windows, POLICY_MAX_WINDOWS, &n), 0);
        sim->p.n_windows = n;
        sim_policy_changed(sim);
        ramp_to_restart(sim);
        expect(count(sim, T_RESTART, 0) == 0);
        expect(find_code(sim, T_HOLD, HOLD_WINDOW, 0));

        /* The ETA falls under emergency-eta (10m): the window no longer holds it back. */
        uint64_t ws = 9 * GB + 700 * MB;
        for (unsigned i = 0; i < 900 && !find(sim, T_RESTART, 0); i++) {
                ws += 1 * MB; /* 3.5G/h: 300M left -> ~5 min */
                set_ws(sim, ws);
                sim_tick(sim, SEC);
        }
        const Decision *r = find(sim, T_RESTART, 0);
        expect(r && r->emergency && strstr(r->reason, "emergency: outside the windows"));
        check_invariants(sim);
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

static void test_failures(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 8 * GB);
        sim_tick(sim, SEC);
        expect(find(sim, T_TRIM, 0));
        /* The actuator reports through the next sample that the trim failed. */
        sim->s.failed = 1u << ACTION_TRIM;
        sim_tick(sim, SEC);
        const Decision *e = find_code(sim, T_EFFECT, EFFECT_FAILED, 0);
        expect(e && e->action == ACTION_TRIM);
        expect(sim->e->act[ACTION_TRIM].spent);
        /* The backoff (1h) outlasts the cooldown (10m): it is what "next in" shows. */
        expect(engine_action_ready_at(sim->e, &sim->p, ACTION_TRIM) == sim->now + 60 * 60 * SEC);
        /* No measurement of an action that failed. */
        sim_run(sim, 60 * SEC, SEC);
        expect(!find_code(sim, T_EFFECT, EFFECT_FREED, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_oom_kill_event(void **state) {
        Sim *sim = sim_new(true);
        sim_tick(sim, SEC);
        sim->s.events.oom_kill = 1;
        sim->s.events.oom = 1;
        sim_tick(sim, SEC);
        const Decision *e = find(sim, T_EVENT, 0);
        expect(e && e->code == EVENT_OOM_KILL && e->oom_kill);
        check_invariants(sim);
        sim_free(sim);
}

static void test_server_restart_not_by_us(void **state) {
        Sim *sim = sim_new(true);
        sim_tick(sim, SEC);
        sim->s.pid = 555;
        sim->s.uptime = SEC;
        sim_tick(sim, SEC);
        const Decision *e = find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, 0);
        expect(e && !e->oom_kill);
        check_invariants(sim);
        sim_free(sim);
}

static void test_no_cgroup(void **state) {
        Sim *sim = sim_new(true);
        sim->s.has = SAMPLE_HAS_PROCESS | SAMPLE_HAS_HOST;
        sim->s.host_total = 16 * GB;
        sim->s.rss = 14 * GB; /* budget = host RAM - 1G = 15G: 93 % */
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->out.budget == 15 * GB);
        expect(count(sim, T_SET_HIGH, 0) == 0);
        expect(find_code(sim, T_HOLD, HOLD_THROTTLE_NO_CGROUP, 0));
        /* Throttle is skipped: trim, then reset on its own threshold. */
        expect(find_level(sim, LEVEL_TRIM, LEVEL_RESET, LEVEL_UP_AT, 0));
        check_invariants(sim);
        sim_free(sim);
}

static void test_no_budget(void **state) {
        Sim *sim = sim_new(true);
        sim->s.has = SAMPLE_HAS_WS;
        sim->s.ws = 5 * GB;
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->out.budget == SIZE_UNKNOWN);
        expect(count(sim, T_HOLD, 0) == 1);
        expect(sim->log[0].code == HOLD_NO_BUDGET);
        /* A budget from the policy makes it work. */
        sim->p.budget_mode = BUDGET_SIZE;
        sim->p.budget_size = 6 * GB;
        sim_run(sim, 30 * SEC, SEC);
        expect(sim->out.budget == 6 * GB);
        expect(find(sim, T_TRIM, 0)); /* 5G of 6G = 83 % */
        check_invariants(sim);
        sim_free(sim);
}

static void test_deterministic(void **state) {
        Sim *a = sim_new(true), *b = sim_new(true);
        for (unsigned i = 0; i < 3000; i++) {
                uint64_t ws = 4 * GB + (uint64_t) i * 2 * MB + (i % 37) * 3 * MB;
                set_ws(a, ws);
                set_ws(b, ws);
                sim_tick(a, SEC);
                sim_tick(b, SEC);
        }
        assert_int_equal(a->n, b->n);
        assert_true(a->n > 5);
        for (unsigned i = 0; i < a->n; i++)
                assert_string_equal(a->log[i].reason, b->log[i].reason);
        sim_free(a);
        sim_free(b);
}

static void test_reload_disables_level(void **state) {
        Sim *sim = sim_new(true);
        set_ws(sim, 9 * GB + 300 * MB);
        sim_run(sim, 120 * SEC, SEC);
        expect(sim->e->level == LEVEL_RESET);
        Policy old = sim->p;
        sim->p.step[LEVEL_RESET].enabled = false;
        sim->p.step[LEVEL_RESTART].enabled = false;
        engine_set_policy(sim->e, &old, &sim->p);
        expect(sim->e->level == LEVEL_THROTTLE);
        unsigned mark = sim->n;
        sim_run(sim, 120 * SEC, SEC);
        expect(count(sim, T_RESET, mark) == 0);
        check_invariants(sim);
        sim_free(sim);
}

static void test_live_restart_timeout(void **state) {
        Sim *sim = sim_new(false);
        ramp_to_restart(sim);
        expect(RESTART(sim)->pending);
        unsigned mark = sim->n;
        /* No new process within stop-timeout (15m): said once, memory.max restored. */
        sim_run(sim, 16 * 60 * SEC, 10 * SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_TIMEOUT, mark));
        const Decision *m = find(sim, T_SET_MAX, mark);
        expect(m && m->value == BUDGET);
        expect(!RESTART(sim)->pending);
        check_invariants(sim);
        sim_free(sim);
}

/* The trend at every sample spacing, from a 1 s fast interval to an RSS log every 15 minutes,
 * with the default trend (30m window, 30 points, min-points 6): a steady rise of 1G/h is known
 * within a few spacings, at its rate. */
static void test_trend_at_every_spacing(void **state) {
        static const struct {
                usec_t spacing, known_by;
        } cases[] = {
                { 1 * SEC, 30 * SEC },      /* the short scale: 2 s points over the last minute */
                { 10 * SEC, 2 * 60 * SEC }, /* still the short scale */
                { 60 * SEC, 8 * 60 * SEC }, /* the window's own points */
                { 600 * SEC, 70 * 60 * SEC },   /* a 10-minute log: the window stretched */
                { 900 * SEC, 105 * 60 * SEC },  /* a 15-minute log */
        };
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                Sim *sim = sim_new(true);
                usec_t elapsed = 0, known = 0;
                double slope = 0;
                for (; elapsed <= 4 * 3600 * SEC && !known; elapsed += cases[c].spacing) {
                        set_ws(sim, 2 * GB + (uint64_t) ((double) GB * (double) elapsed / (3600.0 * SEC)));
                        sim_tick(sim, cases[c].spacing);
                        if (sim->out.trend_valid) {
                                known = elapsed;
                                slope = sim->out.slope * 3600.0;
                        }
                }
                if (!known || known > cases[c].known_by || slope < 0.9 * (double) GB || slope > 1.1 * (double) GB)
                        fail_msg("spacing %llus: trend known after %llus (expected by %llus), %.0f M/h",
                                 (unsigned long long) (cases[c].spacing / SEC), (unsigned long long) (known / SEC),
                                 (unsigned long long) (cases[c].known_by / SEC), slope / (double) MB);
                sim_free(sim);
        }

        /* Hourly samples: too sparse even stretched; the context says which key to change. */
        Sim *sim = sim_new(true);
        for (unsigned i = 0; i < 12; i++) {
                set_ws(sim, 2 * GB + i * (GB / 4));
                sim_tick(sim, 3600 * SEC);
        }
        expect(!sim->out.trend_valid && sim->out.eta == USEC_INFINITY);
        set_ws(sim, 8 * GB); /* 80 %: a trim, whose reason carries the context */
        sim_tick(sim, 3600 * SEC);
        expect(find_text(sim, T_TRIM, "samples too sparse for trend.window 30m (set it to 5h or more)", 0));
        sim_free(sim);
}

/* A fast event has an ETA before the window's trend exists, believed only four times as far ahead
 * as the last minute's trend looked back; a step does not pass for a rise. */
static void test_trend_short_scale(void **state) {
        /* A storm: +100M a second from 3G, sampled every second: the OOM a minute away. */
        Sim *sim = sim_new(true);
        usec_t first_eta = 0;
        for (unsigned i = 0; i < 60 && !first_eta; i++) {
                set_ws(sim, 3 * GB + (uint64_t) i * 100 * MB);
                sim_tick(sim, SEC);
                if (sim->out.eta != USEC_INFINITY)
                        first_eta = (usec_t) i * SEC;
        }
        expect(first_eta > 0 && first_eta <= 20 * SEC);
        sim_free(sim);

        /* +1G a minute from 3G: the OOM 7 minutes away is not believed from a rise seen for
         * seconds; the first ETA believed is at most 4 minutes ahead, and it comes while the
         * working set is still under trim.at (75%). The trend says it rises all along. */
        sim = sim_new(true);
        first_eta = 0;
        usec_t eta = 0;
        for (unsigned i = 0; i < 300 && !first_eta; i++) {
                set_ws(sim, 3 * GB + (uint64_t) i * (GB / 60));
                sim_tick(sim, SEC);
                if (sim->out.eta != USEC_INFINITY) {
                        first_eta = (usec_t) i * SEC;
                        eta = sim->out.eta;
                } else if (i > 20)
                        expect(sim->out.trend_valid && sim->out.slope > 0);
        }
        expect(first_eta > 60 * SEC && eta <= 4 * USEC_PER_MINUTE && sim->s.memory_current < apply_bp(BUDGET, 7500));
        sim_free(sim);

        /* A step: a buffer pool allocated at once, then flat. Never a rise, never an ETA. */
        sim = sim_new(true);
        set_ws(sim, 3 * GB);
        sim_run(sim, 20 * SEC, SEC);
        set_ws(sim, 7 * GB);
        for (unsigned i = 0; i < 120; i++) {
                sim_tick(sim, SEC);
                expect(sim->out.eta == USEC_INFINITY);
        }
        sim_free(sim);
}


/* A connection storm: the working set from 89.5 % rising 300K/s (at admit.at 90 % after about
 * 170 s, its ETA about an hour: reset.at 92 % is 11 minutes away), the server's connections from
 * `from` rising `per_s` a second after a minute of calm at `from`. Stops at the first admission
 * decision, or after 400 s. */
#define STORM_WS (9165 * MB)
static void storm(Sim *sim, unsigned from, unsigned per_s) {
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

/* A restart decided while admission's raise is being put back (the write not landed, the sample
 * still raised): the stop's raise starts from memory.max as it was, and goes back to it. */
static void test_restart_raise_beside_a_restore_in_flight(void **state) {
        Sim *sim = sim_new(false);
        storm(sim, 20, 1);
        const Decision *m = find(sim, T_SET_MAX, 0);
        expect(m && m->old_value == BUDGET);
        uint64_t admit_raised = sim->s.memory_max;
        unsigned mark = sim->n;
        set_ws(sim, 2 * GB);
        sim_run(sim, sim->p.admit_raise_for + 2 * SEC, SEC);
        const Decision *back = find(sim, T_SET_MAX, mark);
        expect(back && back->value == BUDGET);
        /* The restore not written yet: the restart waits for it, and says so once. */
        sim->s.memory_max = admit_raised;
        sim->s.pending |= 1u << ACTION_SET_MAX;
        mark = sim->n;
        set_ws(sim, 9 * GB + 700 * MB);
        for (unsigned t = 0; t < 600 && !find_code(sim, T_HOLD, HOLD_MAX_WRITE, mark); t++)
                sim_tick(sim, SEC);
        expect(find_code(sim, T_HOLD, HOLD_MAX_WRITE, mark));
        sim_run(sim, 3 * SEC, SEC);
        expect(!find(sim, T_RESTART, mark) && !find(sim, T_SET_MAX, mark));
        unsigned holds = 0;
        for (unsigned i = mark; i < sim->n; i++)
                holds += decision_class(&sim->log[i]) == T_HOLD && sim->log[i].code == HOLD_MAX_WRITE;
        expect(holds == 1);
        /* Written: the restart, its raise from the value put back. */
        sim->s.memory_max = BUDGET;
        sim->s.pending = 0;
        sim_tick(sim, SEC);
        const Decision *r = find(sim, T_RESTART, mark);
        const Decision *raise = find(sim, T_SET_MAX, mark);
        expect(r && raise && raise->old_value == BUDGET && raise->value == PAGE_DOWN(BUDGET + apply_bp(BUDGET, 500)));
        expect(sim->e->limits.max_original == BUDGET);
        check_invariants(sim);
        sim_free(sim);

        /* The restore fails instead: admission's raise stays and serves the restart, which raises
         * nothing more and puts memory.max back once the server is back. */
        sim = sim_new(false);
        storm(sim, 20, 1);
        set_ws(sim, 2 * GB);
        sim_run(sim, sim->p.admit_raise_for + 2 * SEC, SEC);
        sim->s.memory_max = admit_raised;
        sim->s.pending = 1u << ACTION_SET_MAX;
        mark = sim->n;
        set_ws(sim, 9 * GB + 700 * MB);
        for (unsigned t = 0; t < 600 && !find_code(sim, T_HOLD, HOLD_MAX_WRITE, mark); t++)
                sim_tick(sim, SEC);
        sim->s.pending = 0;
        sim->s.failed = 1u << ACTION_SET_MAX;
        sim_tick(sim, SEC);
        for (unsigned t = 0; t < 5 && !find(sim, T_RESTART, mark); t++)
                sim_tick(sim, SEC);
        expect(find(sim, T_RESTART, mark) && !find(sim, T_SET_MAX, mark) && sim->e->limits.max_raised &&
               sim->e->limits.max_original == BUDGET && sim->s.memory_max == admit_raised);
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

/* A young server rising until the reset rung's reset (at reset.min-memory) is decided. */
static Sim *young_server_to_reset(void) {
        Sim *sim = sim_new(false);
        sim->s.uptime = 2 * USEC_PER_MINUTE;
        for (unsigned i = 0; i < 1800 && !find(sim, T_RESET, 0); i++) {
                set_ws(sim, sim->s.memory_current + 3 * MB); /* OOM in about 28 minutes */
                sim_tick(sim, SEC);
                trims_free(sim, 0);
        }
        return sim;
}

/* A reset aimed at a server process that is gone: with the limits and the restart on an action
 * thread of their own, a reset can still be running when the restart stops the server, and
 * fails there. Its failure comes after the new process was seen (late), or before it, while the
 * old one stops: either way it holds no rung of the new process. A trim that freed too little on
 * the old process keeps its backoff. */
static void test_failure_against_the_old_process(void **state) {
        for (int late = 0; late < 2; late++) {
                Sim *sim = young_server_to_reset();
                const Decision *r = find(sim, T_RESET, 0);
                expect(r && sim->e->act[ACTION_TRIM].spent);
                Decision reset = *r;
                ActionResult res = { .error = -ECONNRESET };
                if (!late)
                        action_feedback_add(&sim->fb, &reset, &res);
                sim_tick(sim, SEC);
                expect(late || (sim->e->act[ACTION_RESET].spent && sim->e->act[ACTION_RESET].failed));

                unsigned mark = sim->n;
                sim->s.pid = 200;
                sim->s.uptime = 5 * SEC;
                set_ws(sim, 2 * GB);
                sim_tick(sim, SEC);
                expect(find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, mark));
                if (late) {
                        action_feedback_add(&sim->fb, &reset, &res);
                        sim_tick(sim, SEC);
                        const Decision *gone = find_code(sim, T_EFFECT, EFFECT_FAILED_GONE, mark);
                        expect(gone && gone->action == ACTION_RESET &&
                               strstr(gone->reason, "reset failed against the server process that is gone"));
                        expect(!find_code(sim, T_EFFECT, EFFECT_FAILED, mark));
                }
                expect(!sim->e->act[ACTION_RESET].spent && !sim->e->act[ACTION_RESET].pending);
                expect(sim->e->act[ACTION_TRIM].spent);

                /* The new server climbs as the old one did: its reset comes within the backoff
                 * the failure would have set, and no trim within the trim's. */
                usec_t failed_at = sim->at[mark - 1];
                mark = sim->n;
                for (unsigned i = 0; i < 1800 && !find(sim, T_RESET, mark); i++) {
                        set_ws(sim, sim->s.memory_current + 10 * MB);
                        sim_tick(sim, SEC);
                        trims_free(sim, 0);
                }
                const Decision *again = find(sim, T_RESET, mark);
                expect(again && sim->at[again - sim->log] - failed_at < sim->p.step[LEVEL_RESET].backoff);
                expect(!find(sim, T_TRIM, mark));
                check_invariants(sim);
                sim_free(sim);
        }
}

/* A reset that ended sessions on a server process that is gone by the time its result comes (a
 * restart that did not wait for it): what it measured is the old process's, and is counted
 * neither as a gain nor as too little for the new one. */
static void test_success_against_the_old_process(void **state) {
        Sim *sim = young_server_to_reset();
        const Decision *r = find(sim, T_RESET, 0);
        if (!r) {
                sim_free(sim);
                fail_msg("no reset decided");
                return;
        }
        Decision reset = *r;
        sim->s.pending = 1u << ACTION_RESET;
        unsigned mark = sim->n;
        sim->s.pid = 200;
        sim->s.uptime = 5 * SEC;
        set_ws(sim, 2 * GB);
        sim_tick(sim, SEC);
        expect(find_code(sim, T_EVENT, EVENT_RESTART_FOREIGN, mark) && sim->e->act[ACTION_RESET].pending);
        sim->s.pending = 0;
        ActionResult res = { .error = 0, .has_freed = true, .freed = 9 * GB };
        action_feedback_add(&sim->fb, &reset, &res);
        sim_tick(sim, SEC);
        const Decision *gone = find_code(sim, T_EFFECT, EFFECT_DONE_GONE, mark);
        expect(gone && gone->action == ACTION_RESET);
        expect(!find_code(sim, T_EFFECT, EFFECT_FREED, mark) && !find_code(sim, T_EFFECT, EFFECT_TOO_LITTLE, mark));
        expect(!sim->e->act[ACTION_RESET].pending && !sim->e->act[ACTION_RESET].spent &&
               !sim->e->act[ACTION_RESET].gain_measured);
        check_invariants(sim);
        sim_free(sim);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_calm),
                cmocka_unit_test(test_trim_on_threshold_and_cooldown),
                cmocka_unit_test(test_action_at_time_zero),
                cmocka_unit_test(test_effect_from_working_set),
                cmocka_unit_test(test_hysteresis),
                cmocka_unit_test(test_eta_trigger),
                cmocka_unit_test(test_one_rung_per_tick_and_settle),
                cmocka_unit_test(test_ineffective_trim_escalates_to_throttle),
                cmocka_unit_test(test_trim_not_done_not_judged),
                cmocka_unit_test(test_pool_when_reset_not_helping),
                cmocka_unit_test(test_pool_not_below_reset),
                cmocka_unit_test(test_pool_step_out_of_memory_high),
                cmocka_unit_test(test_pool_not_once_growth_is_over),
                cmocka_unit_test(test_pool_at_floor),
                cmocka_unit_test(test_pool_steps_stop_at_floor),
                cmocka_unit_test(test_pool_grows_back_with_hysteresis),
                cmocka_unit_test(test_pool_grows_back_after_calm),
                cmocka_unit_test(test_throttle_planner),
                cmocka_unit_test(test_throttle_guard_sees_stall_at_once),
                cmocka_unit_test(test_foreign_memory_high_adopted),
                cmocka_unit_test(test_foreign_memory_high_between_steps),
                cmocka_unit_test(test_restart_and_max_raise),
                cmocka_unit_test(test_max_raise_with_smaller_budget),
                cmocka_unit_test(test_stop_raises_again),
                cmocka_unit_test(test_leave),
                cmocka_unit_test(test_budget_while_max_restore_pending),
                cmocka_unit_test(test_restart_when_stalled_at_limit),
                cmocka_unit_test(test_restart_when_stalled_behind_a_reset),
                cmocka_unit_test(test_high_out_of_the_way_when_the_restart_is_held),
                cmocka_unit_test(test_emergency_reset_on_the_new_process),
                cmocka_unit_test(test_emergency_reset_at_the_reset_rung),
                cmocka_unit_test(test_emergency_reset_not_behind_the_pool),
                cmocka_unit_test(test_restart_not_behind_a_reset_past_the_oom),
                cmocka_unit_test(test_emergency_reset_after_an_uncollected_reset),
                cmocka_unit_test(test_emergency_reset_flickering),
                cmocka_unit_test(test_emergency_reset_dry_run_once),
                cmocka_unit_test(test_own_drops_keep_the_trend),
                cmocka_unit_test(test_restart_guard_rails),
                cmocka_unit_test(test_starting_server),
                cmocka_unit_test(test_new_process_starting),
                cmocka_unit_test(test_restart_windows_and_emergency),
                cmocka_unit_test(test_reset_recheck_and_params),
                cmocka_unit_test(test_failures),
                cmocka_unit_test(test_oom_kill_event),
                cmocka_unit_test(test_server_restart_not_by_us),
                cmocka_unit_test(test_no_cgroup),
                cmocka_unit_test(test_no_budget),
                cmocka_unit_test(test_deterministic),
                cmocka_unit_test(test_reload_disables_level),
                cmocka_unit_test(test_live_restart_timeout),
                cmocka_unit_test(test_trend_at_every_spacing),
                cmocka_unit_test(test_trend_short_scale),
                cmocka_unit_test(test_admit_on_rising_connections),
                cmocka_unit_test(test_admit_fit),
                cmocka_unit_test(test_admit_restore_hysteresis),
                cmocka_unit_test(test_admit_not_with_flat_connections),
                cmocka_unit_test(test_admit_rise_share),
                cmocka_unit_test(test_admit_max_raise_bounded),
                cmocka_unit_test(test_restart_raise_beside_a_restore_in_flight),
                cmocka_unit_test(test_admit_dry_run),
                cmocka_unit_test(test_admit_failure_and_new_server),
                cmocka_unit_test(test_admit_carried_to_new_server),
                cmocka_unit_test(test_admit_failed_lowering_carried),
                cmocka_unit_test(test_admit_carried_failure_tried_again),
                cmocka_unit_test(test_failure_against_the_old_process),
                cmocka_unit_test(test_success_against_the_old_process),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
