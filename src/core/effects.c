/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The actions' bookkeeping: when each was decided, its failures and their backoffs, what each
 * gave back (judged against min-gain), and when each may come again. */
#include <math.h>
#include <stdio.h>

#include "engine-internal.h"


void note_action(Tick *k, ActionKind a, bool measure) {
        Engine *e = k->e;
        ActionState *st = &e->act[a];
        /* 0 means never: a trace whose clock starts at 0 acts at 1us instead. */
        usec_t at = MAX(k->now, (usec_t) 1);

        st->last = at;
        st->count++;
        st->pending = measure;
        /* This sample and the two before it: one spike is not taken for the level. */
        st->ws_before = recent_median(e, 0, true, 3);
        const Trend *tr = trend_in_use(e);
        st->slope_before = tr->valid ? tr->slope : 0;
        e->last_action = at;
        e->hold_shown[a] = CODE_NONE;
}

/* Decided for a server process that is gone by now: a reset, a pool step or a trim that was still
 * being carried out when a restart stopped the server (the limits and the restart have an action
 * thread of their own, and the restart does not wait for a reset past the OOM). Its end, a
 * failure or a result, is that process's, not the one now governed's. */
bool for_gone_process(const Engine *e, ActionKind a) {
        return action_info(a)->lane == ACTION_LANE_SERVER && e->process_since > 0 && e->act[a].last < e->process_since;
}

static void end_for_gone_process(Tick *k, ActionKind a, DecisionCode code, const char *how, const char *so) {
        ActionState *st = &k->e->act[a];
        st->pending = false;
        st->gain_measured = false;
        Decision *d = emit_code(k, DECISION_EFFECT, code, "%s %s against the server process that is gone: %s",
                                action_kind_to_string(a), how, so);
        if (d)
                d->action = a;
}

void observe_failures(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;

        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                if (!(k->s->failed & (1u << a)))
                        continue;
                ActionState *st = &e->act[a];
                usec_t backoff = action_info(a)->backoff(p);
                bool was_pending = st->pending;
                if (for_gone_process(e, a)) {
                        end_for_gone_process(k, a, EFFECT_FAILED_GONE, "failed", "no backoff for the new one");
                        continue;
                }
                /* What the failure undoes of the rung's own state, or the whole of it handled there
                 * (no backoff); the limits are limits.c's. */
                const Rung *rung = engine_rung(action_info(a)->level);
                const char *but = "";
                if (action_info(a)->sets_limit)
                        limits_failed(k, a);
                else if (rung && rung->failed && rung->failed(k, a, was_pending, backoff, &but))
                        continue;
                st->pending = false;
                st->gain_measured = false;
                st->spent = st->failed = true;
                st->backoff_until = k->now + backoff;
                char t[FORMAT_TIMESPAN_MAX];
                Decision *d = emit_code(k, DECISION_EFFECT, EFFECT_FAILED, "%s failed: not tried again for %s%s%s",
                                   action_kind_to_string(a), format_timespan(t, backoff), but,
                                   action_info(a)->sets_limit ? "" : "; the ladder may move up");
                if (d)
                        d->action = a;
        }
}

/* An action that was not carried out through no fault of its own (memgov_trim() answers NULL
 * within 10 s of a trim another account called, and trims nothing then; the session kept for
 * the actions still awaits the reply to its last statement, the server answering nothing):
 * nothing to judge, no backoff, and the rung is not taken for one that does not help; its
 * cooldown still holds. */
void observe_not_done(Tick *k) {
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                ActionState *st = &k->e->act[a];
                const Rung *r = engine_rung(action_info(a)->level);
                char t[FORMAT_TIMESPAN_MAX];
                /* A measured action is judged once, while its result is awaited; the others
                 * (admission) await none. */
                if (!(k->s->not_done & (1u << a)) || (k->s->failed & (1u << a)) ||
                    (action_info(a)->measured && !st->pending))
                        continue;
                if (r && r->not_done)
                        r->not_done(k, a);
                st->pending = false;
                st->gain_measured = false;
                const StepPolicy *sp = &k->p->step[action_info(a)->level];
                Decision *d = emit_code(k, DECISION_EFFECT, EFFECT_NOT_DONE,
                                        "%s not carried out: not judged, no backoff; again once %s.cooldown %s is over",
                                        action_kind_to_string(a), level_to_string(action_info(a)->level),
                                        format_timespan(t, sp->cooldown));
                if (d)
                        d->action = a;
        }
}

void measure_effects(Tick *k) {
        Engine *e = k->e;
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                const ActionInfo *info = action_info(a);
                ActionState *st = &e->act[a];
                const StepPolicy *sp = &k->p->step[info->level];
                char x[FORMAT_BYTES_MAX], y[FORMAT_BYTES_MAX], g[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];
                char how[96];
                int64_t gain;

                if (!info->measured || !st->pending)
                        continue;
                /* What it gave back, or what the working set did since, is not the new process's. */
                if (for_gone_process(e, a)) {
                        if (!(k->s->reported & (1u << a)) && (k->s->pending & (1u << a)))
                                continue; /* still out: its end is yet to come */
                        end_for_gone_process(k, a, EFFECT_DONE_GONE, "done", "not counted for the new one");
                        continue;
                }
                if (k->s->reported & (1u << a)) {
                        /* The actuator measured it (RSS before and after, in the server itself). */
                        uint64_t freed = k->s->freed[a];
                        gain = freed > INT64_MAX ? INT64_MAX : (int64_t) freed;
                        snprintf(how, sizeof(how), "as measured by the %s", action_kind_to_string(a));
                } else {
                        if (k->now - st->last < k->p->settle)
                                continue;
                        /* Still being carried out (a resize of the buffer pool can take longer than
                         * the settle time): its own measurement, or its failure, is yet to come. */
                        if (k->s->pending & (1u << a))
                                continue;
                        /* What the working set would be had nothing been done: the trend carried
                         * on. Both ends are medians of a few samples: one spike is no gain. */
                        uint64_t after = recent_median(e, st->last, false, 5);
                        if (after == SIZE_UNKNOWN)
                                after = k->ws;
                        double dt = (double) (k->now - st->last) / (double) USEC_PER_SEC;
                        double expected = (double) st->ws_before + MAX(st->slope_before, 0.0) * dt;
                        gain = (int64_t) llround(expected - (double) after);
                        snprintf(how, sizeof(how), "working set %s%s -> %s", e->opts.effects_assumed ? "went " : "",
                                 format_bytes_change(x, y, st->ws_before, after), y);
                }
                st->pending = false;
                st->last_gain = gain;
                st->gain_measured = (k->s->reported & (1u << a)) != 0;

                /* In a dry run or a replay nothing was carried out: what the working set did is no
                 * measurement of the action, and is said to be an assumption. */
                bool assumed = e->opts.effects_assumed && !(k->s->reported & (1u << a));
                char what[160];
                if (assumed)
                        snprintf(what, sizeof(what), "%s not carried out (dry run or replay): the %s, counted as freeing",
                                 action_kind_to_string(a), how);
                else
                        snprintf(what, sizeof(what), "%s freed", action_kind_to_string(a));
                Decision *d;
                /* The rung may keep a backoff running past a good result (the emergency reset's,
                 * held back by its own rules), and say so. */
                const Rung *rung = engine_rung(info->level);
                bool keep_backoff = false;
                const char *but = "", *after = "";
                if (rung && rung->judged)
                        rung->judged(k, a, &keep_backoff, &but, &after);
                if (gain < 0 || (uint64_t) gain < sp->min_gain) {
                        st->spent = true;
                        st->failed = false;
                        st->backoff_until = MAX(st->backoff_until, st->last + sp->backoff);
                        d = emit_code(k, DECISION_EFFECT, EFFECT_TOO_LITTLE,
                                 "%s %s%s%s%s%s, under %s.min-gain %s: not again for %s%s, and the ladder "
                                 "moves up if the working set keeps rising%s",
                                 what, gain <= 0 ? "nothing" : "only ", gain <= 0 ? "" : format_bytes(g, (uint64_t) gain),
                                 assumed ? "" : " (", assumed ? "" : how, assumed ? "" : ")",
                                 level_to_string(info->level), format_bytes(x, sp->min_gain),
                                 format_timespan(t, st->backoff_until > k->now ? st->backoff_until - k->now : 0),
                                 but, after);
                } else {
                        if (!keep_backoff || k->now >= st->backoff_until)
                                st->spent = st->failed = false;
                        d = emit_code(k, DECISION_EFFECT, EFFECT_FREED, "%s %s%s%s%s%s", what, format_bytes(g, (uint64_t) gain),
                                 assumed ? "" : " (", assumed ? "" : how, assumed ? "" : ")", after);
                }
                if (d) {
                        d->action = a;
                        d->value = gain > 0 ? (uint64_t) gain : 0;
                }
        }
}

void expire_backoffs(Tick *k) {
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                ActionState *st = &k->e->act[a];
                if (st->spent && !st->pending && k->now >= st->backoff_until)
                        st->spent = st->failed = false;
        }
}

usec_t engine_action_ready_at(const Engine *e, const Policy *p, ActionKind a) {
        const ActionInfo *info = action_info(a);
        const ActionState *st = &e->act[a];
        usec_t ready = 0;

        if (a == ACTION_SET_HIGH)
                ready = limits_high_ready_at(e, p);
        else if (info->paced && st->last)
                ready = st->last + p->step[info->level].cooldown;
        if (st->spent && st->backoff_until > ready)
                ready = st->backoff_until;
        return ready;
}