/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pool rung: InnoDB's buffer pool shrunk by pool.step of its configured size, not below
 * pool.floor, when the reset is called for and does not help; grown back one step at a time once
 * calm. It decides; src/act/pool.c carries it out. */
#include <stdio.h>

#include "engine-internal.h"

static PoolState *state(const Engine *e) {
        return engine_rung_state(e, LEVEL_POOL);
}


/* The steps down from the configured size to pool.floor: memgov knows the pool is at its floor
 * once it took them all (the actuator says so too, where it runs: a replay has none). */
static bool pool_at_floor(const Policy *p, const Engine *e) {
        uint32_t room = p->pool_floor < 10000 ? 10000 - p->pool_floor : 0;
        unsigned max = p->pool_step > 0 ? (room + p->pool_step - 1) / p->pool_step : 0;
        return state(e)->steps >= max;
}

/* The buffer pool without a threshold of its own is for when reset is called for (its at or
 * eta, with the hysteresis once there) and is not helping (no session holds enough to end, or
 * ending them gave back too little), or is not enabled: a smaller pool costs every client its
 * cache, which per byte given back costs more throughput than ending the sessions that hold the
 * most.
 * Measured (bench/pool-vs-reset): 4936 transactions lost per 100 MiB for the pool, 15 for a reset. */
static bool pool_called_for(const Tick *k) {
        const StepPolicy *s = &k->p->step[LEVEL_POOL];
        if (s->at > 0 || s->eta > 0)
                return true;
        return k->e->level >= LEVEL_POOL ? step_stays(k, LEVEL_RESET) : step_enters(k, LEVEL_RESET);
}

/* A step down of the buffer pool looks at this very sample once more, as the destructive steps
 * do: the level lags (hysteresis, one rung per tick, a settle on the way down), and a server
 * whose growth is over must not lose its cache to it. Still called for: its own thresholds, the
 * restart's (the pool is the cheaper step on the way there), or reset's while the working set
 * still rises. */
static bool pool_recheck(const Tick *k) {
        const StepPolicy *s = &k->p->step[LEVEL_POOL];
        if (s->at > 0 || s->eta > 0)
                return step_enters(k, LEVEL_POOL);
        return (step_available(k, LEVEL_RESTART) && step_enters(k, LEVEL_RESTART)) ||
               (k->rising && step_enters(k, LEVEL_RESET));
}

/* The buffer pool grows back one step at a time: only memgov's own steps (a server that shrank
 * it by itself is left as it chose), only when calm below throttle for pool.grow-after, and only
 * when what the last step gave back fits under the point where the ladder would move again, with
 * the hysteresis: growing must not bring the shrink straight back. */
static bool plan_pool_grow(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (state(e)->steps == 0 || !p->step[LEVEL_POOL].enabled || restart_pending(e) || k->emergency)
                return false;
        if (e->level >= LEVEL_THROTTLE || k->now - e->calm_since < p->pool_grow_after ||
            k->now - e->act[ACTION_POOL].last < p->pool_grow_after || e->act[ACTION_POOL].pending ||
            e->act[ACTION_POOL].spent)
                return false; /* a step that failed or did not help: not again, up or down, before its backoff */
        if (e->last_action > 0 && k->now - e->last_action < p->settle)
                return false;
        uint32_t entry = p->step[LEVEL_POOL].at     ? p->step[LEVEL_POOL].at
                         : p->step[LEVEL_THROTTLE].at ? p->step[LEVEL_THROTTLE].at
                                                      : p->step[LEVEL_TRIM].at;
        if (entry == 0)
                return false;
        uint64_t room = apply_bp(k->budget, entry - MIN(entry, p->hysteresis));
        int64_t gain = e->act[ACTION_POOL].last_gain;
        uint64_t back = gain > 0 ? (uint64_t) gain : 0;
        if (k->ws + back > room)
                return false;
        Decision *d = emit_action(k, ACTION_POOL,
                                  "%s: grow the buffer pool back one step (%u of memgov's step(s) down left), calm "
                                  "for %s and room for the %s it gave back",
                                  ctx(k), state(e)->steps, format_timespan(t, k->now - e->calm_since),
                                  format_bytes(a, back));
        if (d) {
                d->pool.grow = true;
                d->pool.configured = state(e)->configured;
                d->pool.step = p->pool_step;
                d->pool.floor = p->pool_floor;
                d->pool.grow_max = SIZE_UNLIMITED;
        }
        state(e)->steps--;
        state(e)->growing = true;
        note_action(k, ACTION_POOL, false);
        return true;
}
static bool pool_exhausted(const Tick *k) {
        return k->e->act[ACTION_POOL].spent || pool_at_floor(k->p, k->e);
}

static bool pool_plan(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;

        if (e->level >= LEVEL_POOL && !k->wait_for_reset && step_available(k, LEVEL_POOL) && !e->act[ACTION_POOL].spent &&
            !pool_at_floor(p, e) && cooldown_over(k, ACTION_POOL, LEVEL_POOL) && pool_recheck(k)) {
                char s1[FORMAT_PERCENT_MAX], s2[FORMAT_PERCENT_MAX];
                high_out_of_the_way_of_pool(k);
                Decision *d = emit_action(k, ACTION_POOL,
                                          "%s: shrink the buffer pool by %s of its configured size, not below %s of it",
                                          ctx(k), format_bp(s1, p->pool_step), format_bp(s2, p->pool_floor));
                if (d) {
                        d->pool.configured = state(e)->configured;
                        d->pool.step = p->pool_step;
                        d->pool.floor = p->pool_floor;
                        d->pool.grow_max = SIZE_UNLIMITED;
                }
                state(e)->steps++;
                state(e)->growing = false;
                note_action(k, ACTION_POOL, true);
                return true;
        }
        return false;
}

/* The step down did not happen (at the floor, or no pool). */
static bool pool_failed(Tick *k, ActionKind a, bool was_pending, usec_t backoff, const char **but) {
        Engine *e = k->e;
        if (!state(e)->growing && state(e)->steps > 0)
                state(e)->steps--;
        return false;
}

/* A step not carried out (the server answered nothing) is no step either. */
static void pool_not_done(Tick *k, ActionKind a) {
        (void) pool_failed(k, a, true, 0, NULL);
}

/* A new server process starts at its configured buffer pool: nothing to grow back, and its
 * configured size is to be found again. */
static void pool_new_process(Tick *k) {
        state(k->e)->steps = 0;
        state(k->e)->configured = 0;
}

/* The size the server was configured with, as a step found it before changing anything: every
 * later step is a share of that, not of the size memgov left. Not from a step for the process
 * that is gone. */
static void pool_results(Tick *k) {
        if ((k->s->based & (1u << ACTION_POOL)) && !for_gone_process(k->e, ACTION_POOL))
                state(k->e)->configured = k->s->baseline[ACTION_POOL];
}

const Rung rung_pool = {
        .level = LEVEL_POOL,
        .state_size = sizeof(PoolState),
        .exhausted = pool_exhausted,
        .climbed_to = pool_called_for,
        .results = pool_results,
        .new_process = pool_new_process,
        .failed = pool_failed,
        .not_done = pool_not_done,
        .plan = pool_plan,
        .calm = plan_pool_grow,
};

/* A step down of the buffer pool decided and not judged yet. */
bool pool_shrinking(const Engine *e) {
        return e->act[ACTION_POOL].pending && !state(e)->growing;
}
