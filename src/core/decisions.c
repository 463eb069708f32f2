/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the rungs emit: decisions with their reasons, holds said once, the tick's context. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine-internal.h"

static const char *const kind_names[_DECISION_KIND_MAX] = {
        [DECISION_LEVEL] = "level",   [DECISION_ACTION] = "action", [DECISION_EFFECT] = "effect",
        [DECISION_HOLD] = "hold",     [DECISION_EVENT] = "event",
};


unsigned decision_class(const Decision *d) {
        return d->kind == DECISION_ACTION ? DECISION_ACTION + (unsigned) d->action : decision_kind_class(d->kind);
}

const char *decision_class_to_string(unsigned c) {
        if (c < DECISION_ACTION)
                return kind_names[c];
        if (c < DECISION_ACTION + _ACTION_KIND_MAX)
                return action_kind_to_string((ActionKind) (c - DECISION_ACTION));
        c = c + 1 - _ACTION_KIND_MAX;
        return c < _DECISION_KIND_MAX ? kind_names[c] : "invalid";
}

const char *decision_name(const Decision *d) {
        return decision_class_to_string(decision_class(d));
}

_printf_(3, 0) Decision *emitv(Tick *k, DecisionKind kind, const char *fmt, va_list ap) {
        EngineOutput *out = k->out;

        if (out->n_decisions >= ENGINE_MAX_DECISIONS)
                return NULL; /* cannot happen with one ladder step per tick; never overflow */
        Decision *d = &out->decisions[out->n_decisions++];
        memset(d, 0, offsetof(Decision, reason));
        d->kind = kind;
        d->level = k->e->level;
        d->emergency = k->emergency;
        d->working_set = k->ws;
        d->budget = k->budget;
        vsnprintf(d->reason, sizeof(d->reason), fmt, ap);
        return d;
}

_printf_(3, 4) Decision *emit(Tick *k, DecisionKind kind, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        Decision *d = emitv(k, kind, fmt, ap);
        va_end(ap);
        return d;
}

_printf_(4, 5) Decision *emit_code(Tick *k, DecisionKind kind, DecisionCode code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        Decision *d = emitv(k, kind, fmt, ap);
        va_end(ap);
        if (d)
                d->code = code;
        return d;
}

/* A decision for an actuator. */
_printf_(3, 4) Decision *emit_action(Tick *k, ActionKind a, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        Decision *d = emitv(k, DECISION_ACTION, fmt, ap);
        va_end(ap);
        if (d)
                d->action = a;
        /* A drop that follows is memgov's own doing, not the server's (see trend.h). */
        if (action_info(a)->reclaims) {
                trend_own_action(&k->e->trend, k->s->mono);
                trend_own_action(&k->e->trend_short, k->s->mono);
        }
        return d;
}

/* A hold is shown when its reason changes, not on every tick it lasts. action < 0: a notice
 * about the sample itself rather than about one action. */
_printf_(4, 5) void hold(Tick *k, int action, uint32_t code, const char *fmt, ...) {
        uint32_t *shown = action >= 0 ? &k->e->hold_shown[action] : &k->e->notice_shown;
        char reason[DECISION_REASON_MAX];
        va_list ap;

        if (*shown == code)
                return;
        *shown = code;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        Decision *d = emit(k, DECISION_HOLD, "%s", reason);
        if (d)
                d->code = (DecisionCode) code;
        if (d && action >= 0)
                d->action = (ActionKind) action;
}

static void describe(Tick *k);

/* The tick's context for reasons, formatted on first use: most ticks decide nothing and
 * print nothing. */
const char *ctx(Tick *k) {
        if (!k->described) {
                describe(k);
                k->described = true;
        }
        return k->ctx;
}

static void describe(Tick *k) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], r[FORMAT_RATE_MAX], pr[FORMAT_RATE_MAX], t[FORMAT_TIMESPAN_MAX];
        const Trend *tr = trend_in_use(k->e);
        char w[FORMAT_TIMESPAN_MAX], over[8 + FORMAT_TIMESPAN_MAX] = "";
        if (tr == &k->e->trend_short || tr->stretched)
                snprintf(over, sizeof(over), " over %s", format_timespan(t, tr->span));
        int n = snprintf(k->ctx, sizeof(k->ctx), "working set %s = %u%% of %s budget", format_bytes(a, k->ws),
                         k->ws_bp / 100, format_bytes(b, k->budget));
        size_t left = n > 0 && (size_t) n < sizeof(k->ctx) ? sizeof(k->ctx) - (size_t) n : 0;
        char *p = k->ctx + (sizeof(k->ctx) - left);

        if (left == 0)
                return;
        usec_t needed = trend_window_needed(&k->e->trend);
        if (!tr->valid && needed > 0)
                snprintf(p, left, ", no trend: samples too sparse for trend.window %s (set it to %s or more)",
                         format_timespan(t, k->p->trend_window), format_timespan(w, needed));
        else if (!tr->valid)
                snprintf(p, left, ", trend not known yet");
        else if (fabs(tr->slope) * 3600.0 < (double) (1ULL << 20))
                snprintf(p, left, ", steady");
        else if (tr->slope > 0 && k->pool_rate > 0 && k->eta != USEC_INFINITY)
                snprintf(p, left, ", rising %s%s (the buffer pool %s of it, %s to fill), OOM in %s",
                         format_rate(r, tr->slope), over, format_rate(pr, k->pool_rate),
                         format_bytes(a, k->pool_room), format_timespan(t, k->eta));
        else if (tr->slope > 0 && k->pool_rate > 0 && k->eta_too_far > 0)
                snprintf(p, left, ", rising %s%s, the buffer pool filling (%s of it, %s to fill), too short a "
                         "look for an OOM in %s", format_rate(r, tr->slope), over, format_rate(pr, k->pool_rate),
                         format_bytes(a, k->pool_room), format_timespan(t, k->eta_too_far));
        else if (tr->slope > 0 && k->pool_rate > 0)
                snprintf(p, left, ", rising %s%s, the buffer pool filling (%s of it, %s to fill)",
                         format_rate(r, tr->slope), over, format_rate(pr, k->pool_rate),
                         format_bytes(a, k->pool_room));
        else if (tr->slope > 0 && k->eta != USEC_INFINITY)
                snprintf(p, left, ", rising %s%s, OOM in %s", format_rate(r, tr->slope), over,
                         format_timespan(t, k->eta));
        else if (tr->slope > 0 && k->eta_too_far > 0)
                snprintf(p, left, ", rising %s%s, too short a look for an OOM in %s", format_rate(r, tr->slope), over,
                         format_timespan(t, k->eta_too_far));
        else if (tr->slope > 0)
                snprintf(p, left, ", rising %s%s", format_rate(r, tr->slope), over);
        else
                snprintf(p, left, ", falling %s", format_rate(r, -tr->slope));
}

/* An action of this kind among this tick's decisions so far. */
bool decided_this_tick(const Tick *k, ActionKind a) {
        for (unsigned i = 0; i < k->out->n_decisions; i++)
                if (decision_is_action(&k->out->decisions[i]) && k->out->decisions[i].action == a)
                        return true;
        return false;
}
