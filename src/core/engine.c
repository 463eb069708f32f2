/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The ladder: each tick, the situation (situation.c), the results of the actions (effects.c) and
 * the limits (limits.c) first; then the level moves where the signals point, higher while the
 * rung there is not helping; then the rungs of the table (rungs.c) plan, from the top down. The
 * rungs themselves are rung-*.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-internal.h"

/* How long a new server process is sampled at sampling.fast-interval after it takes clients. */
#define NEW_PROCESS_WATCH USEC_PER_MINUTE

bool step_available(const Tick *k, Level l) {
        if (!k->p->step[l].enabled)
                return false;
        /* A server that is still starting grows by its caches and its recovery, a rise that
         * ends: throttling it only slows its start, it has no session to reset and no pool to
         * resize, a restart would only start it over, and a trim finds nothing freed yet (and
         * often no thread to take it: one thread, busy). memgov waits for it. */
        if (k->starting && l > LEVEL_NORMAL)
                return false;
        const Rung *r = engine_rung(l);
        return !r || !r->available || r->available(k);
}

/* A rung whose action did not help (or failed) for now. */
static bool step_exhausted(const Tick *k, Level l) {
        const Rung *r = engine_rung(l);
        return r && r->exhausted && r->exhausted(k);
}

/* Why the ladder moves from `from` up to `l`, when the signals call for `sig`. */
static DecisionCode why_step(const Tick *k, Level l, Level from, Level sig, char *buf, size_t n) {
        char a[FORMAT_PERCENT_MAX], t[FORMAT_TIMESPAN_MAX];
        const StepPolicy *s = &k->p->step[l];
        const char *name = level_to_string(l);

        if (s->at > 0 && k->ws_bp >= s->at) {
                snprintf(buf, n, "at or above %s.at %s", name, format_bp(a, s->at));
                return LEVEL_UP_AT;
        }
        if (s->eta > 0 && k->eta <= s->eta) {
                snprintf(buf, n, "OOM ETA under %s.eta %s", name, format_timespan(t, s->eta));
                return LEVEL_UP_ETA;
        }
        /* A rung above called for on its own thresholds: this one is passed on the way there. */
        if (sig > l) {
                char why[96];
                DecisionCode code = why_step(k, sig, from, sig, why, sizeof(why));
                snprintf(buf, n, "on the way to %s: %s", level_to_string(sig), why);
                return code;
        }
        snprintf(buf, n, "%s is not helping and the working set still rises", level_to_string(from));
        return LEVEL_UP_NOT_HELPING;
}

static void set_level(Tick *k, Level to, DecisionCode code, const char *why) {
        Engine *e = k->e;
        Level from = e->level;

        e->level = to;
        e->level_since = k->now;
        if (to > from)
                e->climb_peak = k->ws;
        if (from >= LEVEL_THROTTLE && to < LEVEL_THROTTLE)
                e->calm_since = k->now;
        k->out->level = to;
        Decision *d = emit_code(k, DECISION_LEVEL, code, "%s: %s -> %s (%s)", ctx(k), level_to_string(from),
                                level_to_string(to), why);
        if (d)
                d->from = from;
        /* Holds of rungs we left may be shown again when we come back. */
        if (to < from)
                for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++)
                        e->hold_shown[a] = CODE_NONE;
}

/* The highest rung the signals call for, with hysteresis for the rungs already reached. */
static Level signal_level(const Tick *k) {
        for (Level l = _LEVEL_MAX - 1; l > LEVEL_NORMAL; l--) {
                if (!step_available(k, l))
                        continue;
                if (l <= k->e->level ? step_stays(k, l) : step_enters(k, l))
                        return l;
        }
        return LEVEL_NORMAL;
}

static Level next_above(const Tick *k, Level l) {
        for (Level n = l + 1; n < _LEVEL_MAX; n++)
                if (step_available(k, n))
                        return n;
        return l;
}

static Level next_below(const Tick *k, Level l) {
        for (Level n = l; n > LEVEL_NORMAL; n--)
                if (step_available(k, n - 1) || n - 1 == LEVEL_NORMAL)
                        return n - 1;
        return LEVEL_NORMAL;
}

bool step_enters(const Tick *k, Level l) {
        const StepPolicy *s = &k->p->step[l];
        return (s->at > 0 && k->ws_bp >= s->at) || (s->eta > 0 && k->eta <= s->eta);
}

bool step_stays(const Tick *k, Level l) {
        const StepPolicy *s = &k->p->step[l];
        usec_t eta_exit = s->eta + apply_bp(s->eta, k->p->eta_hysteresis);
        return (s->at > 0 && (uint64_t) k->ws_bp + k->p->hysteresis >= s->at) ||
               (s->eta > 0 && k->eta <= eta_exit);
}

/* Destructive steps look at this very sample once more: is the step still called for? The
 * level may lag (hysteresis, one rung per tick); the action must not. */
bool recheck(const Tick *k, Level l) {
        return step_enters(k, l);
}

bool cooldown_over(const Tick *k, ActionKind a, Level l) {
        const ActionState *st = &k->e->act[a];
        return st->last == 0 || k->now - st->last >= k->p->step[l].cooldown;
}

/* An action of rung l came out of its backoff since the ladder reached the level it is at. */
static bool backoff_ended(const Tick *k, Level l) {
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                const ActionState *st = &k->e->act[a];
                if (action_info(a)->level == l && st->backoff_until > k->e->level_since && st->backoff_until <= k->now)
                        return true;
        }
        return false;
}

static void act(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;

        FOREACH_RUNG_DOWN(r)
                if (r->busy && r->busy(k))
                        return;
        FOREACH_RUNG_DOWN(r)
                if (r->early && r->early(k))
                        return;
        if (e->last_action > 0 && k->now - e->last_action < p->settle && !k->emergency)
                return; /* let the last action show its effect first */

        FOREACH_RUNG_DOWN(r)
                if (r->prepare)
                        r->prepare(k);
        /* Pre-emption: a rung's action ahead of the ladder's order (the emergency reset). */
        FOREACH_RUNG_DOWN(r)
                if (r->urgent && r->urgent(k))
                        return;
        FOREACH_RUNG_DOWN(r)
                if (r->plan && e->level >= r->level && r->plan(k))
                        return;
}


int engine_new(const Policy *p, const EngineOptions *opts, Engine **ret) {
        Engine *e = calloc(1, sizeof(Engine));
        if (!e)
                return -ENOMEM;
        FOREACH_RUNG_UP(r)
                if (r->state_size > 0 && !(e->rung_state[r->level] = calloc(1, r->state_size))) {
                        engine_free(e);
                        return -ENOMEM;
                }
        if (opts)
                e->opts = *opts;
        if (e->opts.page_size == 0)
                e->opts.page_size = 4096;
        e->level = LEVEL_NORMAL;
        e->last_budget = SIZE_UNKNOWN;
        trends_init(e, p);
        *ret = e;
        return 0;
}

Engine *engine_free(Engine *e) {
        if (!e)
                return NULL;
        for (Level l = 0; l < _LEVEL_MAX; l++)
                free(e->rung_state[l]);
        free(e);
        return NULL;
}

void *engine_rung_state(const Engine *e, Level l) {
        return e->rung_state[l];
}

Level engine_level(const Engine *e) {
        return e->level;
}

const ActionState *engine_action(const Engine *e, ActionKind a) {
        return &e->act[a];
}

bool engine_memory_high(const Engine *e, uint64_t *ret) {
        if (e->limits.high_known)
                *ret = e->limits.high_set;
        return e->limits.high_known;
}

void engine_set_policy(Engine *e, const Policy *old, const Policy *p) {
        if (old->trend_window != p->trend_window || old->trend_points != p->trend_points ||
            old->trend_min_points != p->trend_min_points)
                trends_init(e, p);
        /* A step the new policy disables cannot stay the current level; nor can a rung that holds
         * the level only while it is in place (admission: a rung only in a connection storm). */
        while (e->level > LEVEL_NORMAL &&
               (!p->step[e->level].enabled ||
                (engine_rung(e->level)->holds_level && !engine_rung(e->level)->holds_level(e))))
                e->level--;
}


void engine_set_effects_assumed(Engine *e, bool assumed) {
        e->opts.effects_assumed = assumed;
}

void engine_set_simulate(Engine *e, bool simulate) {
        e->opts.effects_assumed = simulate;
        if (e->opts.simulate == simulate)
                return;
        e->opts.simulate = simulate;
        /* What a dry run assumed it wrote or did was never written or done: forgotten. */
        limits_simulate(e);
        FOREACH_RUNG_DOWN(r)
                if (r->simulate)
                        r->simulate(e);
}

unsigned engine_leave(const Engine *e, const char *why, Decision *ret, unsigned max) {
        if (e->opts.simulate)
                return 0;
        unsigned n = limits_leave(e, why, ret, max);
        FOREACH_RUNG_UP(r)
                if (r->leave)
                        n += r->leave(e, why, ret + n, max - n);
        return n;
}


void engine_step(Engine *e, const Policy *p, const Sample *s, usec_t now, EngineOutput *out) {
        Tick k = { .e = e, .p = p, .s = s, .now = now, .out = out };
        const char *budget_source = "";

        memset(out, 0, offsetof(EngineOutput, decisions));
        out->n_decisions = 0;
        out->now = now;
        out->wall = (s->has & SAMPLE_HAS_WALL) ? s->wall : 0;
        out->utc_offset = s->utc_offset;
        out->level = e->level;
        out->eta = USEC_INFINITY;
        out->next_sample = p->interval;
        k.eta = USEC_INFINITY;

        FOREACH_RUNG_UP(r)
                if (r->results)
                        r->results(&k);

        k.ws = out->ws = sample_working_set(s);
        if (k.ws == SIZE_UNKNOWN) {
                hold(&k, -1, HOLD_NO_WS, "the sample holds no working set: nothing to decide on");
                /* The actuators' failures come with this sample only: not lost with its figures. */
                observe_failures(&k);
                remember(e, s);
                return;
        }
        k.budget = out->budget = resolve_budget(&k, &budget_source);
        if (k.budget == SIZE_UNKNOWN || k.budget == 0) {
                out->budget = SIZE_UNKNOWN;
                hold(&k, -1, HOLD_NO_BUDGET,
                     "no budget: the sample has no memory.max and no host RAM (set budget.size, or --budget)");
                observe_failures(&k);
                remember(e, s);
                return;
        }
        e->notice_shown = CODE_NONE;
        e->last_budget = k.budget;
        recent_add(e, now, k.ws);
        FOREACH_RUNG_UP(r)
                if (r->sample)
                        r->sample(&k);
        observe_startup(&k);

        trend_add(&e->trend, s->mono, k.ws, apply_bp(k.budget, p->trend_drop));
        trend_add(&e->trend_short, s->mono, k.ws, apply_bp(k.budget, p->trend_drop));
        const Trend *tr = trend_in_use(e);
        k.eta = out->eta = short_trend_eta(&k, tr, pool_filling_eta(&k, tr, trend_eta(tr, k.ws, k.budget)));
        k.ws_bp = out->ws_bp = ratio_bp(k.ws, k.budget);
        out->trend_valid = tr->valid;
        out->slope = tr->valid ? tr->slope : 0;
        /* Rising, with an ETA or one too far ahead for the short trend to be believed. */
        k.rising = k.eta != USEC_INFINITY || k.eta_too_far > 0;
        k.emergency = p->emergency_eta > 0 && k.eta <= p->emergency_eta;
        /* A server stalled at its limit is in an emergency whatever its trend: at restart.at, with
         * PSI full at throttle.full-guard or more (every task of the cgroup waiting on memory a
         * fifth of the time, over 10 s), the kernel reclaims the server's file pages and faults
         * them back in, and its OOM killer does not come while that makes progress; the trend
         * there is flat, so no ETA ever becomes an emergency.
         * Seen: servers at 94-97% of memory.max, not answering for minutes. */
        k.stalled = !k.emergency && (s->has & SAMPLE_HAS_PSI) && s->psi.has_full && p->step[LEVEL_RESTART].at > 0 &&
                    k.ws_bp >= p->step[LEVEL_RESTART].at && s->psi.full.avg10 >= p->full_guard;
        k.emergency = k.emergency || k.stalled;
        observe_stall(&k);

        observe_events(&k);
        FOREACH_RUNG_UP(r)
                if (r->observe)
                        r->observe(&k);
        observe_failures(&k);
        observe_not_done(&k);
        measure_effects(&k);
        expire_backoffs(&k);
        limits_observe(&k);

        FOREACH_RUNG_UP(r)
                if (r->before_ladder)
                        r->before_ladder(&k);

        hold_starting(&k);

        /* Where the signals point, then higher while the rung there is not helping and the working
         * set rises. Above such a rung the ladder stays while the working set rises, or is still
         * within governor.hysteresis of its highest since the ladder last moved up: a working set
         * that fell clearly and rises no more comes down to the rungs it calls for (trim spent for
         * its hour held the ladder at throttle for 10 minutes at 72% of the budget, down from
         * 95%, with no calm for the pool to grow back), while one that hovers where it was, its
         * slope's sign flipping with the noise, does not go up and down. */
        if (k.ws > e->climb_peak)
                e->climb_peak = k.ws;
        bool near_peak = k.ws_bp + p->hysteresis >= ratio_bp(e->climb_peak, k.budget);
        Level sig = signal_level(&k), target = sig;
        while (target > LEVEL_NORMAL && step_exhausted(&k, target) &&
               (k.rising || (e->level > target && near_peak))) {
                Level up = next_above(&k, target);
                /* Destructive rungs are entered on their own thresholds only. */
                if (up == target || (engine_rung(up)->climbed_to && !engine_rung(up)->climbed_to(&k)))
                        break;
                target = up;
        }

        char why[160];
        if (target > e->level) {
                bool settled = e->last_action == 0 || now - e->last_action >= p->settle || k.emergency;
                if (settled) {
                        Level to = next_above(&k, e->level);
                        DecisionCode code = why_step(&k, to, e->level, sig, why, sizeof(why));
                        set_level(&k, to, code, why);
                }
        } else if (target < e->level && now - e->level_since >= p->settle) {
                Level to = next_below(&k, e->level);
                /* Back to a rung the signals call for, which is not spent now; else the climb
                 * stopped below the level for its own sake (admission's or the pool's
                 * thresholds no longer hold, the working set no longer rises). */
                bool retry = sig >= to && to > LEVEL_NORMAL && !step_exhausted(&k, to);
                if (retry && backoff_ended(&k, to))
                        snprintf(why, sizeof(why), "%s may help again: its backoff is over", level_to_string(to));
                else if (retry)
                        snprintf(why, sizeof(why), "%s may help again", level_to_string(to));
                else
                        snprintf(why, sizeof(why), "%s no longer called for", level_to_string(e->level));
                set_level(&k, to, retry ? LEVEL_DOWN_RETRY : LEVEL_DOWN_CALM, why);
        }
        out->level = e->level;

        unsigned before_act = out->n_decisions;
        act(&k);
        /* Calm on the ladder: what the rungs put back, from the top down, while none decided. */
        FOREACH_RUNG_DOWN(r)
                if (r->calm && out->n_decisions == before_act)
                        r->calm(&k);
        FOREACH_RUNG_DOWN(r)
                if (r->after)
                        r->after(&k);

        /* A new server process (a restart, memgov's or anyone's) is watched closely while it
         * starts and for NEW_PROCESS_WATCH after it takes clients: a storm that outlasted the
         * restart comes straight back, before any trend of the new process is known.
         * Seen at 5 s samples: clients seen 6-8 s late, at 201-249M, killed before the next. */
        bool fresh = e->process_since > 0 &&
                     (k.starting || taking_clients_for(&k) < NEW_PROCESS_WATCH);
        bool near = k.ws_bp >= p->fast_above || e->level >= LEVEL_TRIM || fresh ||
                    (p->step[LEVEL_THROTTLE].eta > 0 && k.eta <= p->step[LEVEL_THROTTLE].eta);
        out->next_sample = near ? p->fast_interval : p->interval;

        for (unsigned i = 0; i < out->n_decisions; i++)
                out->decisions[i].level = e->level;
        remember(e, s);
}