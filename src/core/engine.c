/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memgov/engine.h"
#include "memgov/units.h"

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

/* Per-tick view shared by the helpers below. */
typedef struct Tick {
        Engine *e;
        const Policy *p;
        const Sample *s;
        usec_t now;
        EngineOutput *out;
        uint64_t ws, budget;
        uint32_t ws_bp;
        usec_t eta;
        usec_t eta_too_far; /* the short trend's ETA, not believed (see short_trend_eta()); 0: none */
        bool rising;
        bool emergency;
        bool stalled; /* the emergency is a stall at restart.at (see engine_step), not an ETA */
        bool restart_held; /* the ladder calls for the restart, and it does not come now (act()) */
        uint32_t full_now; /* PSI full, basis points: the higher of avg10 and the last second's */
        bool starting; /* the server does not accept clients yet (SAMPLE_HAS_ACCEPTING) */
        bool described;
        char ctx[192]; /* "working set 51.2G = 85% of 60G budget, rising 0.9G/h, OOM in 9h40m" */
} Tick;

static void trends_init(Engine *e, const Policy *p) {
        trend_init(&e->trend, p->trend_window, p->trend_points, p->trend_min_points);
        trend_init(&e->trend_short, MAX(p->trend_window / MAX(p->trend_points, 1u), (usec_t) USEC_PER_SEC),
                   p->trend_points, p->trend_min_points);
        e->trend_short.confirm = true;
}

/* The trend the ETA comes from: the window's, else (not known yet) the last minute's. */
static const Trend *trend_in_use(const Engine *e) {
        return e->trend.valid || !e->trend_short.valid ? &e->trend : &e->trend_short;
}

/* The last minute's trend stands in while the window's is not known (after a start, a restart, a
 * drop), and is believed only TREND_SHORT_REACH times as far ahead as it looked back: a rise seen
 * for half a minute says nothing of the next five; a storm's ETA of two minutes is believed half
 * a minute in.
 * Seen unbounded: 64 new clients, 177M -> 183M of 384M in 35 s, "OOM in 4m37s", the peak 232M. */
#define TREND_SHORT_REACH 4
static usec_t short_trend_eta(Tick *k, const Trend *tr, usec_t eta) {
        if (tr != &k->e->trend_short || eta == USEC_INFINITY || eta / TREND_SHORT_REACH <= tr->span)
                return eta;
        k->eta_too_far = eta;
        return USEC_INFINITY;
}

void engine_init(Engine *e, const Policy *p, const EngineOptions *opts) {
        memset(e, 0, offsetof(Engine, trend));
        if (opts)
                e->opts = *opts;
        if (e->opts.page_size == 0)
                e->opts.page_size = 4096;
        e->level = LEVEL_NORMAL;
        e->last_budget = SIZE_UNKNOWN;
        trends_init(e, p);
}

void engine_set_policy(Engine *e, const Policy *old, const Policy *p) {
        if (old->trend_window != p->trend_window || old->trend_points != p->trend_points ||
            old->trend_min_points != p->trend_min_points)
                trends_init(e, p);
        /* A step the new policy disables cannot stay the current level; nor can admission, unless
         * it is in place (it is a rung only in a connection storm). */
        while (e->level > LEVEL_NORMAL &&
               (!p->step[e->level].enabled || (e->level == LEVEL_ADMIT && !e->admit_lowered)))
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
        /* What a dry run assumed it wrote was never written: read memory.high afresh, and
         * forget a memory.max raise and a restart that only were assumed. */
        e->high_known = false;
        e->high_mismatch = 0;
        e->max_raised = false;
        e->max_by_admit = false;
        e->admit_lowered = e->admit_carry = e->admit_tried = false;
        e->restart_pending = false;
}

unsigned engine_leave(const Engine *e, const char *why, Decision *ret, unsigned max) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        unsigned n = 0;

        if (e->opts.simulate)
                return 0;
        /* memory.high: back to what someone else set (adopted), else to what was there before our
         * first write. Throttling nobody manages would only stall the server. */
        if (e->high_known && (e->ceiling_known || e->initial_known) && n < max) {
                uint64_t back = e->ceiling_known ? e->high_ceiling : e->high_initial;
                if (back != e->high_set) {
                        ret[n] = (Decision) { .kind = DECISION_ACTION, .action = ACTION_SET_HIGH, .level = e->level, .value = back,
                                              .old_value = e->high_set };
                        snprintf(ret[n].reason, sizeof(ret[n].reason), "%s: memory.high %s -> %s (%s)", why,
                                 format_bytes(a, e->high_set), format_bytes(b, back),
                                 e->ceiling_known ? "the value set by someone else" : "as it was found");
                        n++;
                }
        }
        if (e->max_raised && n < max) {
                ret[n] = (Decision) { .kind = DECISION_ACTION, .action = ACTION_SET_MAX, .level = e->level,
                                      .value = e->max_original };
                snprintf(ret[n].reason, sizeof(ret[n].reason), "%s: restore memory.max to %s", why,
                         format_bytes(a, e->max_original));
                n++;
        }
        /* max_connections lowered for a connection storm: back to what memgov found (the
         * actuator leaves a value someone else set since). */
        if (e->admit_lowered && n < max) {
                ret[n] = (Decision) { .kind = DECISION_ACTION, .action = ACTION_ADMIT, .level = e->level,
                                      .admit.restore = true };
                snprintf(ret[n].reason, sizeof(ret[n].reason),
                         "%s: put max_connections back as it was found", why);
                n++;
        }
        return n;
}

void engine_restore_restarts(Engine *e, const usec_t *clock, unsigned n) {
        e->n_restarts = MIN(n, (unsigned) ENGINE_RESTART_HISTORY);
        memcpy(e->restart_clock, clock + (n - e->n_restarts), e->n_restarts * sizeof(usec_t));
}

_printf_(3, 0) static Decision *emitv(Tick *k, DecisionKind kind, const char *fmt, va_list ap) {
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

_printf_(3, 4) static Decision *emit(Tick *k, DecisionKind kind, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        Decision *d = emitv(k, kind, fmt, ap);
        va_end(ap);
        return d;
}

_printf_(4, 5) static Decision *emit_code(Tick *k, DecisionKind kind, DecisionCode code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        Decision *d = emitv(k, kind, fmt, ap);
        va_end(ap);
        if (d)
                d->code = code;
        return d;
}

/* A decision for an actuator. */
_printf_(3, 4) static Decision *emit_action(Tick *k, ActionKind a, const char *fmt, ...) {
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
_printf_(4, 5) static void hold(Tick *k, int action, uint32_t code, const char *fmt, ...) {
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

/* Host RAM minus budget.host-reserve: no raise of memory.max ever goes past it, and with
 * budget.size = auto and no memory.max it is the budget. 0: no room on this host. */
static uint64_t host_top(const Policy *p, const Sample *s) {
        uint64_t reserve = policy_host_reserve(p, s->host_total);
        return s->host_total > reserve ? s->host_total - reserve : 0;
}

static uint64_t resolve_budget(const Tick *k, const char **ret_source) {
        const Policy *p = k->p;
        const Sample *s = k->s;

        switch (p->budget_mode) {
        case BUDGET_SIZE:
                *ret_source = "budget.size";
                return p->budget_size;
        case BUDGET_HOST_SHARE:
                *ret_source = "share of host RAM";
                return (s->has & SAMPLE_HAS_HOST) ? apply_bp(s->host_total, p->budget_share) : SIZE_UNKNOWN;
        case BUDGET_AUTO:
                /* Our own raise of memory.max does not move the budget, nor does it while its
                 * restore is still on its way (the sample shows the raised value until the write
                 * lands).
                 * Seen otherwise: a calm memory.high 3% over the raised value after a restart. */
                if (k->e->max_raised || (k->e->max_restoring && (s->pending & (1u << ACTION_SET_MAX)))) {
                        *ret_source = "memory.max";
                        return k->e->max_original;
                }
                if ((s->has & SAMPLE_HAS_CGROUP) && s->memory_max != SIZE_UNLIMITED) {
                        *ret_source = "memory.max";
                        return s->memory_max;
                }
                uint64_t top = (s->has & SAMPLE_HAS_HOST) ? host_top(p, s) : 0;
                if (top > 0) {
                        *ret_source = "host RAM minus budget.host-reserve";
                        return top;
                }
                *ret_source = "nothing";
                return SIZE_UNKNOWN;
        }
        return SIZE_UNKNOWN;
}

static void describe(Tick *k);

/* The tick's context for reasons, formatted on first use: most ticks decide nothing and
 * print nothing. */
static const char *ctx(Tick *k) {
        if (!k->described) {
                describe(k);
                k->described = true;
        }
        return k->ctx;
}

static void describe(Tick *k) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], r[FORMAT_RATE_MAX], t[FORMAT_TIMESPAN_MAX];
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

/* memory.high and memory.max can be written: a cgroup, not mounted read-only. */
static bool limits_writable(const Sample *s) {
        return (s->has & SAMPLE_HAS_CGROUP) && !s->limits_readonly;
}

/* The server's connection count goes into buckets of admit.rise-window / ENGINE_CONN_BUCKETS,
 * each keeping the fewest it saw and the working set when it first saw it; buckets older than the
 * window go. */
static void conn_add(Engine *e, const Policy *p, const Sample *s, uint64_t ws, usec_t now) {
        if (!(s->has & SAMPLE_HAS_CONNECTIONS))
                return;
        usec_t width = MAX(p->admit_rise_window / ENGINE_CONN_BUCKETS, (usec_t) 1);
        const unsigned size = ELEMENTSOF(e->conn_min);
        while (e->conn_n > 0 && now - e->conn_t[e->conn_head] > p->admit_rise_window) {
                e->conn_head = (e->conn_head + 1) % size;
                e->conn_n--;
        }
        unsigned last = (e->conn_head + e->conn_n + size - 1) % size;
        if (e->conn_n > 0 && now - e->conn_t[last] < width) {
                if (s->connections < e->conn_min[last]) {
                        e->conn_min[last] = s->connections;
                        e->conn_ws[last] = ws;
                }
                return;
        }
        if (e->conn_n == size) {
                e->conn_head = (e->conn_head + 1) % size;
                e->conn_n--;
        }
        unsigned i = (e->conn_head + e->conn_n) % size;
        e->conn_min[i] = s->connections;
        e->conn_ws[i] = ws;
        e->conn_t[i] = now;
        e->conn_n++;
}

/* The fewest connections within admit.rise-window (this sample's included), and the working set
 * and the time when the oldest bucket with that many first saw it. */
static unsigned conn_fewest_at(const Engine *e, uint64_t *ret_ws, usec_t *ret_t) {
        unsigned fewest = UINT32_MAX;
        uint64_t ws = 0;
        usec_t t = 0;
        for (unsigned j = 0; j < e->conn_n; j++) {
                unsigned i = (e->conn_head + j) % ELEMENTSOF(e->conn_min);
                if (e->conn_min[i] < fewest) {
                        fewest = e->conn_min[i];
                        ws = e->conn_ws[i];
                        t = e->conn_t[i];
                }
        }
        if (ret_ws)
                *ret_ws = ws;
        if (ret_t)
                *ret_t = t;
        return fewest;
}

static unsigned conn_fewest(const Engine *e) {
        return conn_fewest_at(e, NULL, NULL);
}

/* Admission helps only when the growth comes with new connections: the count rose within
 * admit.rise-window by admit.min-rise, and by admit.min-rise-share of what it rose from. */
static bool connections_rising(const Tick *k) {
        const Sample *s = k->s;
        if (!(s->has & SAMPLE_HAS_CONNECTIONS) || k->e->conn_n == 0)
                return false;
        unsigned fewest = conn_fewest(k->e);
        if (s->connections <= fewest)
                return false;
        uint64_t rise = s->connections - fewest;
        return rise >= k->p->admit_min_rise && rise * BP_ONE >= (uint64_t) fewest * k->p->admit_min_rise_share;
}

static bool step_available(const Tick *k, Level l) {
        if (!k->p->step[l].enabled)
                return false;
        /* A server that is still starting grows by its caches and its recovery, a rise that
         * ends: throttling it only slows its start, it has no session to reset and no pool to
         * resize, a restart would only start it over, and a trim finds nothing freed yet (and
         * often no thread to take it: one thread, busy). memgov waits for it. */
        if (k->starting && l > LEVEL_NORMAL)
                return false;
        /* Admission is a rung only in a connection storm (or while it is in place, or the ladder
         * is on it): with a flat count it would not help, and the ladder passes it by. */
        if (l == LEVEL_ADMIT)
                return (k->s->has & SAMPLE_HAS_CONNECTIONS) &&
                       (k->e->admit_lowered || k->e->level == LEVEL_ADMIT || connections_rising(k));
        /* memory.high needs a cgroup to write, and PSI to tell a throttled server from a stalled one. */
        if (l == LEVEL_THROTTLE)
                return limits_writable(k->s) && (k->s->has & SAMPLE_HAS_PSI) && k->s->psi.has_full;
        return true;
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

static bool step_enters(const Tick *k, Level l) {
        const StepPolicy *s = &k->p->step[l];
        return (s->at > 0 && k->ws_bp >= s->at) || (s->eta > 0 && k->eta <= s->eta);
}

static bool step_stays(const Tick *k, Level l) {
        const StepPolicy *s = &k->p->step[l];
        usec_t eta_exit = s->eta + apply_bp(s->eta, k->p->eta_hysteresis);
        return (s->at > 0 && (uint64_t) k->ws_bp + k->p->hysteresis >= s->at) ||
               (s->eta > 0 && k->eta <= eta_exit);
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

/* The steps down from the configured size to pool.floor: memgov knows the pool is at its floor
 * once it took them all (the actuator says so too, where it runs: a replay has none). */
static bool pool_at_floor(const Policy *p, const Engine *e) {
        uint32_t room = p->pool_floor < 10000 ? 10000 - p->pool_floor : 0;
        unsigned max = p->pool_step > 0 ? (room + p->pool_step - 1) / p->pool_step : 0;
        return e->pool_steps >= max;
}

/* A rung whose action did not help (or failed) for now. */
static bool step_exhausted(const Tick *k, Level l) {
        const Engine *e = k->e;
        switch (l) {
        case LEVEL_TRIM:
                return e->act[ACTION_TRIM].spent;
        case LEVEL_THROTTLE:
                return e->psi_guard || e->high_at_floor || e->act[ACTION_SET_HIGH].spent;
        case LEVEL_ADMIT: /* in place already: what it can do is done */
                return e->admit_lowered || e->act[ACTION_ADMIT].spent;
        case LEVEL_POOL:
                return e->act[ACTION_POOL].spent || pool_at_floor(k->p, e);
        case LEVEL_RESET:
                return e->act[ACTION_RESET].spent;
        default:
                return false;
        }
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

static void recent_add(Engine *e, usec_t t, uint64_t ws) {
        unsigned i = (e->recent_head + e->recent_n) % ELEMENTSOF(e->recent_ws);
        if (e->recent_n == ELEMENTSOF(e->recent_ws))
                e->recent_head = (e->recent_head + 1) % ELEMENTSOF(e->recent_ws);
        else
                e->recent_n++;
        e->recent_ws[i] = ws;
        e->recent_t[i] = t;
}

/* Median of the (at most max_n <= 5) latest working-set figures taken after `since`. */
static uint64_t recent_median(const Engine *e, usec_t since, bool inclusive, unsigned max_n) {
        uint64_t v[5];
        unsigned n = 0;

        for (unsigned j = e->recent_n; j > 0 && n < MIN(max_n, (unsigned) ELEMENTSOF(v)); j--) {
                unsigned i = (e->recent_head + j - 1) % ELEMENTSOF(e->recent_ws);
                if (inclusive ? e->recent_t[i] < since : e->recent_t[i] <= since)
                        break;
                v[n++] = e->recent_ws[i];
        }
        if (n == 0)
                return SIZE_UNKNOWN;
        for (unsigned i = 1; i < n; i++)
                for (unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
                        uint64_t x = v[j];
                        v[j] = v[j - 1];
                        v[j - 1] = x;
                }
        return v[n / 2];
}

static void note_action(Tick *k, ActionKind a, bool measure) {
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

/* memory.max raised for a restart goes back to what it was; until the write is confirmed,
 * max_restoring says a restore is under way. */
/* An action of this kind among this tick's decisions so far. */
static bool decided_this_tick(const Tick *k, ActionKind a) {
        for (unsigned i = 0; i < k->out->n_decisions; i++)
                if (decision_is_action(&k->out->decisions[i]) && k->out->decisions[i].action == a)
                        return true;
        return false;
}

/* A write of memory.max not finished (or its result not collected), or one decided in this tick.
 * memgov keeps one at a time: the engine hears of a failure by kind, not by job, and with two
 * under way a restore that failed would be taken for a raise that failed (and the raise after it
 * would stay in place for good), or the other way round. */
static bool max_write_outstanding(const Tick *k) {
        return (k->s->pending & (1u << ACTION_SET_MAX)) || decided_this_tick(k, ACTION_SET_MAX);
}

static void restore_max(Tick *k, const char *why) {
        Engine *e = k->e;
        char a[FORMAT_BYTES_MAX];
        Decision *d = emit_action(k, ACTION_SET_MAX, "restore memory.max to %s%s", format_bytes(a, e->max_original), why);
        if (d)
                d->value = e->max_original;
        e->max_raised = false;
        e->max_restoring = true;
}

/* A startup seen (or, for a new process, assumed) from this working set on: the hold not said yet. */
static void startup_begin(Engine *e, uint64_t ws) {
        e->starting = true;
        e->starting_ws = ws;
        e->starting_said = false;
}

static void observe_events(Tick *k) {
        Engine *e = k->e;
        const Sample *s = k->s;

        if (!e->have_prev)
                return;

        if ((s->has & SAMPLE_HAS_EVENTS) && (e->prev_has & SAMPLE_HAS_EVENTS) &&
            s->events.oom_kill > e->prev_events.oom_kill) {
                Decision *d = emit(k, DECISION_EVENT,
                                   "%s: the kernel OOM killer killed %" PRIu64 " process(es) in the cgroup "
                                   "(memory.events oom_kill %" PRIu64 " -> %" PRIu64 ")",
                                   ctx(k), s->events.oom_kill - e->prev_events.oom_kill, e->prev_events.oom_kill,
                                   s->events.oom_kill);
                if (d) {
                        d->oom_kill = true;
                        d->code = EVENT_OOM_KILL;
                }
        }

        /* Against the last server seen, even if samples without a process came in between
         * (the old one gone, the new one not started yet). */
        bool new_pid = (s->has & SAMPLE_HAS_PROCESS) && s->pid > 0 && e->prev_pid > 0 && s->pid != e->prev_pid;
        bool younger = (s->has & SAMPLE_HAS_UPTIME) && e->prev_uptime > 0 && s->uptime < e->prev_uptime;
        if (!new_pid && !younger)
                return;

        /* A new server process starts at its configured buffer pool and max_connections: nothing
         * to grow or put back. But a storm that admission held off the old process is still
         * there, and comes back faster than the new one's working set reaches admit.at.
         * Admission in place when the process went is carried to the new one (plan_admit_carry);
         * and so is a lowering that failed there (a swamped server may drop the query).
         * Seen uncarried: 112 storm clients back within 17 s, the kernel's kill 26 s after. */
        e->pool_steps = 0;
        e->admit_carry = e->admit_carry || e->admit_lowered || e->admit_tried;
        e->admit_tried = false;
        e->admit_carry_failed = 0;
        e->admit_lowered = false;
        /* Nor is any change of them paced: a cooldown of the old process's lowering would hold
         * admission back on the new one, whose clients are back at once. And what failed against
         * the old process (its sessions, its heap, its socket: a reset, a trim, a pool step the
         * restart cut short) says nothing of the new one: no backoff of such a failure holds the
         * new process's rungs. A reset or a trim that freed too little keeps its backoff.
         * Seen paced: the OOM killer 38 s after the restart, max_connections at 400 again. */
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                const ActionInfo *info = action_info(a);
                ActionState *st = &e->act[a];
                if (st->pending || !(info->process_setting || (info->lane == ACTION_LANE_SERVER && st->failed)))
                        continue;
                if (info->process_setting)
                        st->last = 0;
                st->spent = st->failed = false;
                st->backoff_until = 0;
                if (a == ACTION_RESET)
                        e->reset_emergency_backoff_until = 0;
        }
        /* The emergency reset (once an emergency, not within reset.cooldown of the last) ended
         * sessions of the process that is gone: the new one's are its own. In the outcome
         * benchmark's storm, the ETA of the old process ran on until the new one took clients,
         * the emergency with it, and the new server, its storm's sessions back and rising 33G/h,
         * had no emergency reset before the kernel killed it. */
        e->reset_emergency_done = e->reset_emergency_any = false;
        e->process_since = MAX(k->now, (usec_t) 1);
        /* And it starts by starting: where the signal exists, until it says otherwise. */
        if (new_pid && e->accepting_known && !(s->has & SAMPLE_HAS_ACCEPTING)) {
                startup_begin(e, k->ws);
                k->starting = true;
                e->starting_assumed = true;
                e->starting_since = k->now;
        }
        if (e->restart_pending) {
                e->restart_pending = false;
                emit_code(k, DECISION_EVENT, EVENT_RESTART_DONE, "graceful restart done (server pid %d -> %d)", (int) e->prev_pid,
                     (int) s->pid);
        } else
                emit_code(k, DECISION_EVENT, EVENT_RESTART_FOREIGN, "the server restarted (pid %d -> %d), not by memgov",
                     (int) e->prev_pid, (int) s->pid);

        /* A raise again still under way: put back once it is done (retry_max_restore). */
        if (e->max_raised && !e->act[ACTION_SET_MAX].spent && !max_write_outstanding(k))
                restore_max(k, " after the restart");
}

/* How long a new server process is taken as starting before the accepting signal has a word on
 * it: the kept session tries it within its 10 s retry, and one more try fits. */
#define STARTING_ASSUMED_MAX (30 * USEC_PER_SEC)
/* How long a new server process is sampled at sampling.fast-interval after it takes clients. */
#define NEW_PROCESS_WATCH USEC_PER_MINUTE

/* How long the server process now governed has taken clients (since it was seen, where the
 * accepting signal never had a word on it); meaningful for a new process (process_since > 0). */
static usec_t taking_clients_for(const Tick *k) {
        return k->now - MAX(k->e->process_since, k->e->ready_at);
}

/* A database server that listens on nothing yet is starting (InnoDB's recovery, its caches
 * allocated): what it takes then is not growth to extrapolate. Once it accepts clients, the
 * trend starts over from there. */
static void observe_startup(Tick *k) {
        Engine *e = k->e;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (!(s->has & SAMPLE_HAS_ACCEPTING)) {
                /* Not known (yet) for this process. A new one is taken as starting while the
                 * signal catches up with it, for a bounded time: a signal that is gone for good
                 * must not hold the ladder. */
                if (e->starting_assumed && k->now < e->starting_since + STARTING_ASSUMED_MAX)
                        k->starting = true;
                else if (e->starting_assumed)
                        e->starting = e->starting_assumed = false;
                return;
        }
        e->accepting_known = true;
        e->starting_assumed = false;
        if (!s->accepting) {
                k->starting = true;
                if (!e->starting)
                        startup_begin(e, k->ws);
                return;
        }
        if (!e->starting)
                return;
        e->starting = false;
        e->ready_at = MAX(k->now, (usec_t) 1);
        trends_init(e, k->p);
        if (s->has & SAMPLE_HAS_UPTIME)
                snprintf(t, sizeof(t), ", up %s", format_timespan((char[FORMAT_TIMESPAN_MAX]) {}, s->uptime));
        else
                t[0] = '\0';
        emit_code(k, DECISION_EVENT, EVENT_SERVER_READY,
                  "the server accepts clients now%s: what it took while starting (working set %s -> %s) is not "
                  "growth, the trend starts over",
                  t, format_bytes(a, e->starting_ws), format_bytes(b, k->ws));
}

/* Said once a startup, when the signals call for a rung. */
static void hold_starting(Tick *k) {
        Engine *e = k->e;
        if (!k->starting || e->starting_said)
                return;
        bool called = false;
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++)
                called = called || (k->p->step[l].enabled && step_enters(k, l));
        if (!called)
                return;
        e->starting_said = true;
        Decision *d = emit(k, DECISION_HOLD,
                           "%s: the server is still starting (it listens on no socket yet): the ladder waits until it "
                           "accepts clients",
                           ctx(k));
        if (d)
                d->code = HOLD_STARTING;
}

/* In an emergency the reset rung ends the largest sessions down to reset.emergency-min-memory
 * (see emergency_reset_ready()): a choice only a reset by SQL can make. */
static bool emergency_reset_enabled(const Policy *p) {
        return p->reset_emergency_max > 0 && p->reset_method == RESET_SQL;
}

/* Said of a reset's backoff that does not hold the emergency reset back. */
#define EMERGENCY_EXCEPTED " (an emergency reset excepted)"

/* How many times the lowering carried to a new server process is tried before its failure backs
 * off as any admission's: a new server swamped by a storm's clients may reset a handshake or two. */
#define ADMIT_CARRY_TRIES 3u

/* Decided for a server process that is gone by now: a reset, a pool step or a trim that was still
 * being carried out when a restart stopped the server (the limits and the restart have an action
 * thread of their own, and the restart does not wait for a reset past the OOM). Its end, a
 * failure or a result, is that process's, not the one now governed's. */
static bool for_gone_process(const Engine *e, ActionKind a) {
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

static void observe_failures(Tick *k) {
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
                /* The lowering carried to a new server process: the storm's clients are coming back,
                 * and a 10-minute backoff would leave the new server to them. In the outcome
                 * benchmark, the new server, swamped by 110 reconnecting clients, reset the
                 * handshake of the lowering's connection; the kept session opened a second later,
                 * admission waited for its backoff, and the kernel killed the server 15 s on. */
                if (a == ACTION_ADMIT && e->admit_carried && e->admit_carry_failed + 1 < ADMIT_CARRY_TRIES) {
                        e->admit_carry_failed++;
                        e->admit_lowered = false;
                        e->admit_carry = true;
                        e->admit_carried = false;
                        st->pending = false;
                        st->gain_measured = false;
                        Decision *d = emit_code(k, DECISION_EFFECT, EFFECT_FAILED_CARRY,
                                                "admission failed on the new server process: tried again at the next "
                                                "sample (%u of %u tries)",
                                                e->admit_carry_failed, ADMIT_CARRY_TRIES);
                        if (d)
                                d->action = a;
                        continue;
                }
                if (a == ACTION_RESTART)
                        e->restart_pending = false;
                else if (a == ACTION_POOL && !e->pool_growing && e->pool_steps > 0)
                        e->pool_steps--; /* the step down did not happen (at the floor, or no pool) */
                else if (a == ACTION_ADMIT)
                        /* A lowering that failed left max_connections as it was; a restore that
                         * failed left it lowered: put back once the backoff is over. */
                        e->admit_lowered = e->admit_restoring;
                else if (a == ACTION_SET_HIGH)
                        /* What is in memory.high now is not known: re-plan from the sample. */
                        e->high_known = false;
                else if (a == ACTION_SET_MAX) {
                        /* A raise that failed left memory.max as it was; a restore that failed
                         * left it raised: it is put back once the backoff is over. A restore
                         * decided in this very tick is not the one that failed. */
                        if (!decided_this_tick(k, ACTION_SET_MAX)) {
                                if (!e->max_restoring && e->max_raised_prev > 0) {
                                        /* A raise again during a stop: the one before it holds. */
                                        e->max_raised_to = e->max_raised_prev;
                                        e->max_raised_prev = 0;
                                } else
                                        e->max_raised = e->max_restoring;
                        }
                }
                st->pending = false;
                st->gain_measured = false;
                st->spent = st->failed = true;
                st->backoff_until = k->now + backoff;
                /* The emergency reset chooses among other sessions than a reset at
                 * reset.min-memory (in a storm, that one finds none): only its own failure holds
                 * it back. The one that failed is the last decided: no reset is decided while
                 * another is pending (act()). */
                const char *but = "";
                if (a == ACTION_RESET && was_pending && e->reset_last_emergency)
                        e->reset_emergency_backoff_until = k->now + backoff;
                else if (a == ACTION_RESET && emergency_reset_enabled(p))
                        but = EMERGENCY_EXCEPTED;
                char t[FORMAT_TIMESPAN_MAX];
                Decision *d = emit_code(k, DECISION_EFFECT, EFFECT_FAILED, "%s failed: not tried again for %s%s%s",
                                   action_kind_to_string(a), format_timespan(t, backoff), but,
                                   action_info(a)->sets_limit ? "" : "; the ladder may move up");
                if (d)
                        d->action = a;
        }
}

/* An action that was not carried out through no fault of its own (memgov_trim() answers NULL
 * within 10 s of a trim another account called, and trims nothing then): nothing to judge, no
 * backoff, and the rung is not taken for one that does not help; its cooldown still holds. */
static void observe_not_done(Tick *k) {
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                ActionState *st = &k->e->act[a];
                char t[FORMAT_TIMESPAN_MAX];
                if (!(k->s->not_done & (1u << a)) || (k->s->failed & (1u << a)) || !st->pending)
                        continue;
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

static void measure_effects(Tick *k) {
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
                                 format_bytes(x, st->ws_before), format_bytes(y, after));
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
                /* The emergency reset is held back by its own rules (emergency_reset_ready()), not
                 * by this backoff; and its result does not end the backoff of a reset at
                 * reset.min-memory that failed or found too little before it. */
                bool emergency = a == ACTION_RESET && e->reset_last_emergency;
                if (gain < 0 || (uint64_t) gain < sp->min_gain) {
                        st->spent = true;
                        st->failed = false;
                        st->backoff_until = MAX(st->backoff_until, st->last + sp->backoff);
                        d = emit_code(k, DECISION_EFFECT, EFFECT_TOO_LITTLE,
                                 "%s %s%s%s%s%s, under %s.min-gain %s: not again for %s%s, and the ladder "
                                 "moves up if the working set keeps rising",
                                 what, gain <= 0 ? "nothing" : "only ", gain <= 0 ? "" : format_bytes(g, (uint64_t) gain),
                                 assumed ? "" : " (", assumed ? "" : how, assumed ? "" : ")",
                                 level_to_string(info->level), format_bytes(x, sp->min_gain),
                                 format_timespan(t, st->backoff_until > k->now ? st->backoff_until - k->now : 0),
                                 a == ACTION_RESET && emergency_reset_enabled(k->p) ? EMERGENCY_EXCEPTED : "");
                } else {
                        if (!emergency || k->now >= st->backoff_until)
                                st->spent = st->failed = false;
                        d = emit_code(k, DECISION_EFFECT, EFFECT_FREED, "%s %s%s%s%s", what, format_bytes(g, (uint64_t) gain),
                                 assumed ? "" : " (", assumed ? "" : how, assumed ? "" : ")");
                }
                if (d) {
                        d->action = a;
                        d->value = gain > 0 ? (uint64_t) gain : 0;
                }
        }
}

static void expire_backoffs(Tick *k) {
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                ActionState *st = &k->e->act[a];
                if (st->spent && !st->pending && k->now >= st->backoff_until)
                        st->spent = st->failed = false;
        }
}

static uint64_t page_round(const Engine *e, uint64_t v) {
        return v == SIZE_UNLIMITED ? v : v - v % e->opts.page_size;
}

static void resync_high(Tick *k) {
        Engine *e = k->e;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];

        if (!(s->has & SAMPLE_HAS_CGROUP))
                return;
        if (!e->initial_known) {
                e->high_initial = s->memory_high;
                e->initial_known = true;
        }
        /* Ours: the value memgov set, or, within settle of the write, the one it replaced (a read
         * from before the write landed). Any other value is someone else's, however soon after our
         * write: a throttle that steps more often than settle would otherwise never see it, and
         * write over it (measured on a real cgroup: a value set 16M under memgov's, overwritten by
         * memgov's next step 2 s later, with settle at 3 s). */
        bool ours = s->memory_high == e->high_set ||
                    (s->memory_high == e->high_before && k->now - e->high_changed < k->p->settle);
        if (e->opts.simulate || !e->high_known || ours || (s->pending & (1u << ACTION_SET_HIGH))) {
                e->high_mismatch = 0;
                return;
        }
        /* Twice in a row: someone else set it. Adopt, do not fight; the throttle writes no
         * memory.high in between (high_held), or its next step would hide the value it is to judge. */
        if (++e->high_mismatch < 2)
                return;
        format_bytes(a, s->memory_high);
        format_bytes(b, e->high_set);
        if (streq(a, b)) { /* close enough to print alike: say it exactly */
                snprintf(a, sizeof(a), "%" PRIu64, s->memory_high);
                snprintf(b, sizeof(b), "%" PRIu64, e->high_set);
        }
        emit_code(k, DECISION_EVENT, EVENT_HIGH_ADOPTED, "memory.high is %s, not the %s memgov set: changed by someone else, adopted "
             "as the calm value", a, b);
        e->high_ceiling = s->memory_high;
        e->ceiling_known = true;
        e->high_set = s->memory_high;
        e->high_changed = k->now;
        e->high_mismatch = 0;
}

/* The highest memory.high memgov throttles from: what someone else set (adopted), else the
 * budget minus calm-headroom, else the budget. */
static uint64_t high_top(const Tick *k) {
        const Engine *e = k->e;
        if (e->ceiling_known)
                return MIN(e->high_ceiling, k->budget);
        if (k->p->calm_headroom > 0)
                return k->budget - apply_bp(k->budget, k->p->calm_headroom);
        return k->budget;
}

/* A step down of the buffer pool decided and not judged yet. */
static bool pool_shrinking(const Engine *e) {
        return e->act[ACTION_POOL].pending && !e->pool_growing;
}

/* The server shrinks its buffer pool only as fast as its threads run: over memory.high, every
 * allocation in the cgroup pays, and a resize that takes a second took 16 on a real server while
 * the growth went on. Before a step down, memory.high is raised to the working set plus the margin
 * (where throttling would put it now) if it is below that, and plan_high() does not lower it
 * before the step is judged. The raise goes out on the limits' action thread as the step goes out
 * on the server's: a write through systemd of milliseconds against a resize of seconds, not an
 * order the threads keep. */
/* memory.high as memgov last set it, else as the sample shows it. */
static uint64_t high_now(const Tick *k) {
        return k->e->high_known ? k->e->high_set : k->s->memory_high;
}

/* memory.high not to be throttled now: a value unlike memgov's own was seen, and the next sample
 * tells whether someone else set it (resync_high). Moving it out of the way of a stop or a pool
 * step is not held: those cannot wait a sample. */
static bool high_held(const Tick *k) {
        return k->e->high_mismatch > 0;
}

/* memory.high may be moved out of the way: memgov's to write, and no write of it failing. */
static bool high_movable(const Tick *k) {
        return limits_writable(k->s) && k->p->step[LEVEL_THROTTLE].enabled && !k->e->act[ACTION_SET_HIGH].spent &&
               step_available(k, LEVEL_THROTTLE);
}

/* A memory.high decision taken: its values, and what memgov now knows memory.high to be. */
static void note_high_set(Tick *k, Decision *d, uint64_t cur, uint64_t next) {
        if (d) {
                d->value = next;
                d->old_value = cur;
        }
        k->e->high_before = cur;
        k->e->high_set = next;
        k->e->high_known = true;
        k->e->high_changed = k->now;
}

static void high_out_of_the_way(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];

        if (!high_movable(k))
                return;
        uint64_t cur = high_now(k);
        uint64_t want = page_round(e, CLAMP(k->ws + apply_bp(k->budget, p->throttle_margin),
                                            apply_bp(k->budget, p->throttle_floor), high_top(k)));
        if (cur == SIZE_UNLIMITED || cur >= want)
                return;
        Decision *d = emit_action(k, ACTION_SET_HIGH,
                                  "%s: memory.high %s -> %s (out of the way of the buffer pool's shrink: over "
                                  "memory.high, the server would be slow to carry it out)",
                                  ctx(k), format_bytes(a, cur), format_bytes(b, want));
        note_high_set(k, d, cur, want);
}

/* A server over memory.high is slowed at every allocation: one that stops at the limit (many
 * sessions to end, each in the middle of its queries) crawls through its shutdown for minutes.
 * memory.max still bounds it; memory.high goes to max until the server is back, and plan_high()
 * leaves it alone meanwhile.
 * Seen: 376M against memory.high 373M, a shutdown not through after 10 minutes. */
static void high_out_of_the_way_of_stop(Tick *k) {
        char a[FORMAT_BYTES_MAX];

        if (!high_movable(k))
                return;
        uint64_t cur = high_now(k);
        if (cur == SIZE_UNLIMITED)
                return;
        Decision *d = emit_action(k, ACTION_SET_HIGH,
                                  "%s: memory.high %s -> max (out of the way of the stop: over memory.high, the "
                                  "server would crawl through its shutdown)",
                                  ctx(k), format_bytes(a, cur));
        note_high_set(k, d, cur, SIZE_UNLIMITED);
}

/* The server pressing on a memory.high below restart.at: the throttle holds it there, and it goes
 * no higher without stalling. With the restart held back, restart.at (where the emergency reset
 * comes) is out of reach meanwhile, and the stall is all there is until PSI full brings the
 * throttle's guard.
 * Seen: 24 sessions at 8G/h stalled 23 s at memory.high 330M (84%) before PSI full reached the guard. */
static bool pressing_on_high(const Tick *k) {
        uint64_t high = k->s->memory_high;

        if (!(k->s->has & SAMPLE_HAS_CGROUP) || high == SIZE_UNLIMITED || high >= k->budget)
                return false;
        return k->ws + apply_bp(k->budget, k->p->throttle_margin) / 2 >= high;
}

static void plan_high(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_PERCENT_MAX], d2[FORMAT_PERCENT_MAX];
        char span[FORMAT_TIMESPAN_MAX];
        uint64_t budget = k->budget;

        e->high_at_floor = false;
        if (!k->emergency)
                e->high_yields = e->high_gone = false;
        if (!limits_writable(s) || !p->step[LEVEL_THROTTLE].enabled)
                return;
        /* Out of the way while the server stops (high_out_of_the_way_of_stop). */
        if (e->restart_pending)
                return;
        /* A write that failed is not tried again before its backoff is over. */
        if (e->act[ACTION_SET_HIGH].spent || high_held(k))
                return;

        uint64_t cur = high_now(k);
        /* The calm value: what someone else set (adopted), else the budget minus the headroom,
         * else (calm-headroom = off) nothing of ours. */
        bool have_ceiling = e->ceiling_known || p->calm_headroom > 0;
        uint64_t ceiling = e->ceiling_known ? e->high_ceiling : budget - apply_bp(budget, p->calm_headroom);
        uint64_t next = cur;
        const char *why = NULL;
        char whybuf[160];

        if (e->level >= LEVEL_THROTTLE && step_available(k, LEVEL_THROTTLE)) {
                uint64_t top = high_top(k);
                uint64_t floor_b = apply_bp(budget, p->throttle_floor);
                uint64_t margin = apply_bp(budget, p->throttle_margin);
                uint64_t want = CLAMP(k->ws + margin, floor_b, top);
                uint32_t full = k->full_now;

                /* In an emergency whose reset is over, the restart held back (by its guard rails, its
                 * cooldown, or max-per-day: not a restart that is disabled): a server pressing on
                 * memory.high is only stalled there, and restart.at (where min-uptime no longer
                 * holds the restart) is out of its reach. memory.high makes way until the
                 * emergency is over.
                 * Seen: 29 s stalled at memory.high 334M, PSI full under the guard, no session to end. */
                if (k->emergency && k->restart_held && e->reset_emergency_done && !(s->pending & (1u << ACTION_RESET)) &&
                    !decided_this_tick(k, ACTION_RESET) && pressing_on_high(k))
                        e->high_yields = true;

                /* Stalled at restart.at on a memory.high already at the calm value, in an emergency
                 * with the restart held back by its cooldown or max-per-day (what restart.at does
                 * not lift): there is nothing under memory.max left to make way to, and no restart
                 * coming. A memory.high below memory.max then only turns the kernel's kill into a
                 * stall. Out of the way until the emergency is over: the server's growth ends
                 * under memory.max, or the kernel decides there.
                 * Seen: 220 s not answering between memory.high 373M and memory.max 384M. */
                uint32_t restart_at = p->step[LEVEL_RESTART].at;
                bool give_way = k->emergency && k->restart_held && full >= p->full_guard && cur != SIZE_UNLIMITED &&
                                cur >= page_round(e, top) && restart_at > 0 && k->ws_bp >= restart_at;
                if (give_way || (e->high_gone && cur == SIZE_UNLIMITED)) {
                        e->psi_guard = e->high_gone = true;
                        next = SIZE_UNLIMITED;
                        snprintf(whybuf, sizeof(whybuf), "stalled at restart.at, the restart held back and nothing "
                                 "left to make way to: out of the way while the emergency lasts");
                        why = whybuf;
                } else if (full >= p->full_guard || e->high_yields) {
                        /* The server spends its time stalled on memory.high: back off at once. */
                        e->psi_guard = true;
                        /* From max there is nothing to back off from. */
                        next = cur == SIZE_UNLIMITED ? cur : MAX(cur, MIN(cur + margin, top));
                        if (full < p->full_guard)
                                snprintf(whybuf, sizeof(whybuf), "in an emergency, its reset done and the restart "
                                         "held back: making way up to restart.at");
                        else if (full == s->psi.full.avg10)
                                snprintf(whybuf, sizeof(whybuf), "PSI full avg10 %s >= throttle.full-guard %s: backing off",
                                         format_bp(c, full), format_bp(d2, p->full_guard));
                        else
                                snprintf(whybuf, sizeof(whybuf), "PSI full %s over the last %s >= "
                                         "throttle.full-guard %s: backing off",
                                         format_bp(c, full), format_timespan(span, e->full_recent_span),
                                         format_bp(d2, p->full_guard));
                        why = whybuf;
                } else {
                        if (full < p->full_guard / 2)
                                e->psi_guard = false;
                        if (cur > want && !pool_shrinking(e) &&
                            (!e->high_known || k->now - e->high_changed >= p->step[LEVEL_THROTTLE].cooldown)) {
                                uint64_t step = apply_bp(budget, p->step_down);
                                /* From "max", start right at the target; after that, lower slowly. */
                                next = cur == SIZE_UNLIMITED || cur > top ? MAX(want, MIN(top, cur)) :
                                       cur - MIN(cur - want, step);
                                snprintf(whybuf, sizeof(whybuf), "throttle: toward working set + %s, at most %s "
                                         "of the budget per step", format_bp(c, p->throttle_margin),
                                         format_bp(d2, p->step_down));
                                why = whybuf;
                        }
                        if (next <= floor_b && k->rising)
                                e->high_at_floor = true;
                }
        } else {
                e->psi_guard = false;
                if (have_ceiling) {
                        next = ceiling;
                        if (e->ceiling_known)
                                why = "calm: the value set by someone else";
                        else {
                                snprintf(whybuf, sizeof(whybuf), "calm: budget minus throttle.calm-headroom %s",
                                         format_bp(c, p->calm_headroom));
                                why = whybuf;
                        }
                } else if (e->high_known && e->initial_known) {
                        next = e->high_initial; /* calm-headroom = off: give back what was there */
                        why = "calm: the value found at start";
                }
        }

        next = page_round(e, next);
        if (!why || next == cur)
                return;
        Decision *d = emit_action(k, ACTION_SET_HIGH, "%s: memory.high %s -> %s (%s)", ctx(k), format_bytes(a, cur),
                           format_bytes(b, next), why);
        note_high_set(k, d, cur, next);
}

static unsigned restarts_within(const Engine *e, usec_t clock, usec_t span) {
        unsigned n = 0;
        for (unsigned i = 0; i < e->n_restarts; i++)
                if (e->restart_clock[i] <= clock && clock - e->restart_clock[i] < span)
                        n++;
        return n;
}

static usec_t sample_clock(const Sample *s) {
        return (s->has & SAMPLE_HAS_WALL) ? s->wall : s->mono;
}

/* Guard rails and re-check for a graceful restart; true when it may go ahead now. */
static bool restart_allowed(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char t1[FORMAT_TIMESPAN_MAX], t2[FORMAT_TIMESPAN_MAX];

        unsigned recent = restarts_within(e, sample_clock(s), USEC_PER_DAY);
        if (recent >= p->restart_max_per_day) {
                hold(k, ACTION_RESTART, HOLD_MAX_PER_DAY,
                     "%s: restart held: %u restart(s) in the last 24h (restart.max-per-day %u)", ctx(k), recent,
                     p->restart_max_per_day);
                return false;
        }

        usec_t uptime = USEC_INFINITY;
        if (s->has & SAMPLE_HAS_UPTIME)
                uptime = s->uptime;
        else if (e->act[ACTION_RESTART].count > 0)
                uptime = k->now - e->act[ACTION_RESTART].last;
        /* min-uptime keeps a server warming up (its buffer pool filling, a steep rise that ends)
         * from being restarted. A young server already at restart.at with the OOM killer due
         * within restart.emergency-eta is not warming up: the kernel would restart it anyway,
         * by SIGKILL and crash recovery (a server just back from an OOM kill, growing again). */
        bool due = k->emergency && p->step[LEVEL_RESTART].at > 0 && k->ws_bp >= p->step[LEVEL_RESTART].at;
        if (uptime < p->restart_min_uptime && !due) {
                hold(k, ACTION_RESTART, HOLD_MIN_UPTIME,
                     "%s: restart held: the server is up for %s only (restart.min-uptime %s)", ctx(k),
                     format_timespan(t1, uptime), format_timespan(t2, p->restart_min_uptime));
                return false;
        }

        if (p->n_windows > 0 && !k->emergency) {
                if (!(s->has & SAMPLE_HAS_WALL)) {
                        hold(k, ACTION_RESTART, HOLD_NO_WALL,
                             "%s: restart held: no wall clock to check restart.windows", ctx(k));
                        return false;
                }
                if (!windows_contain(p->windows, p->n_windows, minute_of_week(s->wall, s->utc_offset))) {
                        hold(k, ACTION_RESTART, HOLD_WINDOW,
                             "%s: restart held: outside restart.windows until the ETA is under "
                             "restart.emergency-eta %s", ctx(k), format_timespan(t1, p->emergency_eta));
                        return false;
                }
        }
        return true;
}

/* Destructive steps look at this very sample once more: is the step still called for? The
 * level may lag (hysteresis, one rung per tick); the action must not. */
static bool recheck(const Tick *k, Level l) {
        return step_enters(k, l);
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

static bool cooldown_over(const Tick *k, ActionKind a, Level l) {
        const ActionState *st = &k->e->act[a];
        return st->last == 0 || k->now - st->last >= k->p->step[l].cooldown;
}

usec_t engine_action_ready_at(const Engine *e, const Policy *p, ActionKind a) {
        const ActionInfo *info = action_info(a);
        const ActionState *st = &e->act[a];
        usec_t ready = 0;

        if (a == ACTION_SET_HIGH) {
                /* plan_high: lowered again only a throttle cooldown after it last changed. */
                if (e->high_known)
                        ready = e->high_changed + p->step[LEVEL_THROTTLE].cooldown;
        } else if (info->paced && st->last)
                ready = st->last + p->step[info->level].cooldown;
        if (st->spent && st->backoff_until > ready)
                ready = st->backoff_until;
        return ready;
}

/* memory.max raised above the sample's for a while (a restart's stop, admission taking effect):
 * the decision carries both values, and the engine remembers what to put back. */
static void note_max_raised(Tick *k, Decision *d, uint64_t from, uint64_t raised) {
        Engine *e = k->e;
        if (d) {
                d->value = raised;
                d->old_value = from;
        }
        e->max_original = from;
        e->max_raised_to = raised;
        e->max_raised_prev = 0;
        e->max_raised = true;
        e->max_restoring = false;
        e->max_raised_at = k->now;
}

/* memory.max raised by RAISE from FROM, never past host RAM minus budget.host-reserve where the
 * sample knows host RAM: the raised value (FROM: no room), and *ret_bound set when the host
 * bounded it. */
static uint64_t raise_within_host(const Tick *k, uint64_t from, uint64_t raise, const char **ret_bound) {
        if (k->s->has & SAMPLE_HAS_HOST) {
                uint64_t top = host_top(k->p, k->s);
                if (from >= top)
                        return from;
                if (top - from < raise) {
                        raise = top - from;
                        *ret_bound = "host RAM minus budget.host-reserve";
                }
        }
        uint64_t raised = page_round(k->e, from + raise);
        return raised > from ? raised : from;
}

/* While admission takes effect (the sessions already admitted still allocate), memory.max is
 * raised by admit.max-raise of the budget for admit.raise-for: never past host RAM minus
 * budget.host-reserve, only where memory.max is memgov's to write, and not over a raise that is
 * in place already (a restart's). Beside another write of memory.max under way (a restore of the
 * last raise), the lowering goes on without it: a raise that lands late serves nothing. */
static void admit_raise_max(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (p->admit_max_raise == 0 || !limits_writable(s) || s->memory_max == SIZE_UNLIMITED || e->max_raised ||
            e->act[ACTION_SET_MAX].spent || max_write_outstanding(k))
                return;
        const char *bound = "admit.max-raise";
        uint64_t raised = raise_within_host(k, s->memory_max, apply_bp(k->budget, p->admit_max_raise), &bound);
        if (raised <= s->memory_max)
                return; /* no room left above memory.max on this host */
        Decision *d = emit_action(k, ACTION_SET_MAX,
                                  "raise memory.max %s -> %s for %s while admission takes effect (%s)",
                                  format_bytes(a, s->memory_max), format_bytes(b, raised),
                                  format_timespan(t, p->admit_raise_for), bound);
        note_max_raised(k, d, s->memory_max, raised);
        e->max_by_admit = true;
}

/* The raise for admission lasts admit.raise-for. */
static void admit_max_back(Tick *k) {
        Engine *e = k->e;
        char t[FORMAT_TIMESPAN_MAX];

        if (!e->max_raised || !e->max_by_admit || e->restart_pending || k->now - e->max_raised_at < k->p->admit_raise_for ||
            max_write_outstanding(k))
                return;
        char why[64];
        snprintf(why, sizeof(why), " (admit.raise-for %s is over)", format_timespan(t, k->p->admit_raise_for));
        restore_max(k, why);
        e->max_by_admit = false;
}

/* max_connections goes back to what memgov found, at once, once the ladder is calm below
 * throttle for admit.restore-after (and as long after the lowering): raising it frees nothing and
 * costs nothing by itself, and a storm that comes back meets the rung again. In steps it would
 * only keep refusing clients longer for no memory. */
static void plan_admit_restore(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char t[FORMAT_TIMESPAN_MAX];
        bool calm = e->level < LEVEL_THROTTLE && k->now - e->calm_since >= p->admit_restore_after &&
                    k->now - e->act[ACTION_ADMIT].last >= p->admit_restore_after;

        /* A lowering that failed, the storm over: nothing to carry to a new process any more. */
        if (e->admit_tried && !e->admit_lowered && calm && !e->restart_pending)
                e->admit_tried = false;
        if (!e->admit_lowered || e->act[ACTION_ADMIT].spent || e->restart_pending || k->emergency)
                return;
        if (!calm)
                return;
        if (e->last_action > 0 && k->now - e->last_action < p->settle)
                return;
        Decision *d = emit_action(k, ACTION_ADMIT, "%s: put max_connections back as it was found, calm for %s",
                                  ctx(k), format_timespan(t, k->now - e->calm_since));
        if (d) {
                d->admit.restore = true;
                d->admit.connections = (k->s->has & SAMPLE_HAS_CONNECTIONS) ? k->s->connections : 0;
        }
        e->admit_lowered = e->admit_tried = false;
        e->admit_restoring = true;
        e->admit_carried = false;
        note_action(k, ACTION_ADMIT, false);
}

/* What the emergency is, for the reasons. */
static void emergency_why(Tick *k, char *buf, size_t n) {
        char a[FORMAT_PERCENT_MAX], b[FORMAT_PERCENT_MAX], t[FORMAT_TIMESPAN_MAX];
        if (k->stalled)
                snprintf(buf, n, "stalled at restart.at: PSI full avg10 %s >= throttle.full-guard %s",
                         format_bp(a, k->s->psi.full.avg10), format_bp(b, k->p->full_guard));
        else
                snprintf(buf, n, "OOM under restart.emergency-eta %s", format_timespan(t, k->p->emergency_eta));
}

/* In an emergency (the OOM under restart.emergency-eta, or a server stalled at restart.at), the
 * reset rung ends the largest sessions down to reset.emergency-min-memory, up to
 * reset.emergency-max-per-step of them, whatever the backoff of a reset that found none at
 * reset.min-memory: a storm of many small sessions grows the server as much as one large
 * session, and no session of it reaches min-memory. It comes before the pool step (whose own
 * connection and resize would hold it up in the action queue) and before a restart that would
 * end every session, and again once reset.cooldown is over while the emergency lasts, when the
 * last one ended sessions: sessions that grow back are ended again rather than all of them by
 * the restart.
 * Seen at the top of the ladder: decided at 90% of the budget, against 64% at the reset rung. */
static bool emergency_reset_ready(Tick *k) {
        const Engine *e = k->e;
        const Policy *p = k->p;
        const ActionState *st = &e->act[ACTION_RESET];
        /* Again only after one that ended sessions, each holding reset.emergency-min-memory or
         * more by the server's own count: the reset reports what it measured only when it ended
         * one. Not the RSS around it: the server's other sessions grow meanwhile, and what the
         * ended ones held goes back to the allocator, whose next requests reuse it (seen: four
         * sessions of 11-17M ended while the RSS went 205M -> 213M). One that found no session,
         * failed, or was not carried out (a dry run; a
         * replay of a trace that does not hold the reset's measurement) comes once an emergency.
         * Never within reset.cooldown of the last, even across two emergencies (an ETA or a
         * stall that dips out for one sample), nor within the backoff of the last one's failure. */
        bool ended = e->reset_last_emergency && !st->pending && st->gain_measured;
        bool rested = !e->reset_emergency_any || (k->now - e->reset_emergency_last >= p->step[LEVEL_RESET].cooldown &&
                                                  k->now >= e->reset_emergency_backoff_until);
        return k->emergency && e->level >= LEVEL_RESET && emergency_reset_enabled(p) && step_available(k, LEVEL_RESET) &&
               rested && (!e->reset_emergency_done || ended);
}

/* Decided by act() once emergency_reset_ready(), with no reset pending. */
static void plan_emergency_reset(Tick *k, const char *where) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX];

        bool in_trx = p->reset_in_trx == IN_TRX_EMERGENCY;
        char why[96];
        emergency_why(k, why, sizeof(why));
        Decision *d = emit_action(k, ACTION_RESET,
                                  "%s: emergency reset (%s%s): up to %u of the largest "
                                  "session(s) holding at least %s, idle sessions first (idle at least %s)%s",
                                  ctx(k), why, where, p->reset_emergency_max,
                                  format_bytes(a, p->reset_emergency_min_memory),
                                  format_timespan((char[FORMAT_TIMESPAN_MAX]) {}, p->reset_min_idle),
                                  in_trx ? "; sessions in transactions too" : "");
        if (d) {
                d->code = ACTION_EMERGENCY_RESET;
                d->reset.max = p->reset_emergency_max;
                d->reset.min_memory = p->reset_emergency_min_memory;
                d->reset.min_idle = p->reset_min_idle;
                d->reset.in_trx = in_trx;
        }
        e->reset_emergency_done = e->reset_emergency_any = e->reset_last_emergency = true;
        e->reset_emergency_last = k->now;
        /* The backoff of a reset at reset.min-memory runs on: announced, and kept. */
        note_action(k, ACTION_RESET, true);
}

/* The working set admit.fit fills up to: admit.at of the budget; with admit.at off, the threshold
 * of the next rung up that has one; 0: none. */
static uint64_t admit_fit_bound(const Tick *k) {
        for (Level l = LEVEL_ADMIT; l < _LEVEL_MAX; l++)
                if ((l == LEVEL_ADMIT || k->p->step[l].enabled) && k->p->step[l].at > 0)
                        return apply_bp(k->budget, k->p->step[l].at);
        return 0;
}

/* admit.fit: how many connections more fit under admit_fit_bound(), each at the working set's cost
 * per connection over the rise (what it grew by since the fewest connections within
 * admit.rise-window, per connection more), and no more than the rise so far. Clients plus
 * admit.headroom alone refuses a load that would fit (seen: 200 clients that peak at 95% of the
 * limit refused at 127 connections and 65%). A storm's sessions grow after they connect, so their cost
 * is more than measured at the lowering: what still gets in is for the rungs above, and the
 * lowering carried to a new process counts from before the storm. The bound by the rise keeps an
 * estimate gone wrong (connections that left memory behind for those that came again, a trim
 * between) from letting in more than a storm's own size again. fit 0, with why, when no cost or
 * bound can be gone by; capped: the rise so far is what bounds it. */
#define ADMIT_FIT_MAX 100000u
typedef struct AdmitFit {
        unsigned fit;
        uint64_t cost, bound;
        bool capped;
        const char *why; /* with fit 0: why no fit */
} AdmitFit;

static AdmitFit admit_fit(const Tick *k, unsigned fewest, uint64_t ws_fewest, usec_t fewest_at) {
        AdmitFit f = { .bound = admit_fit_bound(k) };
        if (k->s->connections <= fewest || k->ws <= ws_fewest)
                return f.why = "the working set did not rise with them", f;
        if (k->e->process_since > 0 && fewest_at < k->e->process_since)
                return f.why = "no cost to go by: the fewest were on the server process before", f;
        if (f.bound == 0)
                return f.why = "no threshold to fit under: admit.at and the rungs above are off", f;
        unsigned rise = k->s->connections - fewest;
        f.cost = (k->ws - ws_fewest) / rise;
        if (f.cost == 0)
                return f.why = "the working set did not rise with them", f;
        uint64_t n = k->ws < f.bound ? (f.bound - k->ws) / f.cost : 0;
        f.capped = n > rise;
        f.fit = (unsigned) MIN(MIN(n, (uint64_t) rise), (uint64_t) ADMIT_FIT_MAX);
        return f;
}

/* A lowering of max_connections decided: to `connections` (the sample's count, or with `carried`
 * the count before the storm on the process before) plus admit.headroom, not below admit.floor. */
static void note_admit_lowering(Tick *k, Decision *d, unsigned connections, bool carried) {
        if (d) {
                d->admit.headroom = k->p->admit_headroom;
                d->admit.floor = k->p->admit_floor;
                d->admit.connections = connections;
                d->admit.carried = carried;
        }
        k->e->admit_lowered = true;
        k->e->admit_tried = true;
        k->e->admit_restoring = false;
        k->e->admit_carried = carried;
        note_action(k, ACTION_ADMIT, false);
}

/* Admission carried to a new server process: armed when admission was in place on the process
 * that went; max_connections lowered as soon as the new one takes clients and its connections
 * rise as in a storm (admit.min-rise, admit.min-rise-share), whatever its working set: the
 * storm's sessions are coming back, and grow it past admit.at within seconds. The lowering is to
 * the connections before the storm on the old process plus admit.headroom. Not paced by
 * governor.settle (the last action was on the process before); put back when calm, as any
 * lowering. Without a rise within admit.rise-window of the new process taking clients, the
 * storm is over: nothing is lowered (a lowering to the connections before the storm would hold
 * a server no storm came back to for admit.restore-after). */
static bool plan_admit_carry(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;

        if (!e->admit_carry)
                return false;
        if (!p->step[LEVEL_ADMIT].enabled || e->admit_lowered ||
            (!k->starting && taking_clients_for(k) > p->admit_rise_window)) {
                e->admit_carry = false;
                return false;
        }
        if (k->starting || e->act[ACTION_ADMIT].pending || (k->s->pending & (1u << ACTION_ADMIT)) ||
            !connections_rising(k))
                return false;
        e->admit_carry = false;
        Decision *d = emit_action(k, ACTION_ADMIT,
                                  "%s; a new server process, admission in place on the one before, %u connections, "
                                  "up from %u: lower max_connections to the %u connections before the storm plus "
                                  "%u (not below %u)",
                                  ctx(k), k->s->connections, conn_fewest(e), e->admit_before, p->admit_headroom,
                                  p->admit_floor);
        note_admit_lowering(k, d, e->admit_before, true);
        return true;
}

static void act(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (e->restart_pending)
                return;
        if (plan_admit_carry(k))
                return;
        if (e->last_action > 0 && k->now - e->last_action < p->settle && !k->emergency)
                return; /* let the last action show its effect first */

        if (!k->emergency)
                e->reset_emergency_done = false;
        /* Called for, whether or not its guard rails (min-uptime, the windows, max-per-day)
         * allow it now. */
        bool restart_wanted = e->level >= LEVEL_RESTART && step_available(k, LEVEL_RESTART) &&
                              !e->act[ACTION_RESTART].spent && cooldown_over(k, ACTION_RESTART, LEVEL_RESTART) &&
                              recheck(k, LEVEL_RESTART);
        bool restart_due = restart_wanted && restart_allowed(k);
        k->restart_held = e->level >= LEVEL_RESTART && step_available(k, LEVEL_RESTART) && !restart_due;
        /* In an emergency, the emergency reset first (emergency_reset_ready); the reasons say
         * whether the restart is held back (by its guard rails: then the OOM killer is what comes)
         * or the server presses on the throttle's memory.high. A reset whose result is not in yet
         * (one at reset.min-memory, decided before the emergency) is waited for: neither a pool
         * step, a restart, another reset nor a trim is queued ahead of the emergency reset that
         * follows it (the restart excepted once the OOM is nearer than sql.query-timeout, or on
         * a stalled server once the reset is out for that long: below). Admission, one
         * statement that stops the inflow of a storm, still goes. No reset is decided while
         * another one's result is not in: a failure is that of the last reset decided. */
        bool emergency_reset = emergency_reset_ready(k);
        bool reset_outstanding = (k->s->pending & (1u << ACTION_RESET)) || e->act[ACTION_RESET].pending;
        bool wait_for_reset = emergency_reset && reset_outstanding;
        if (emergency_reset && !wait_for_reset) {
                char where[64] = "";
                char h[FORMAT_BYTES_MAX];
                if (restart_wanted && !restart_due)
                        snprintf(where, sizeof(where), "; the restart held back");
                else if (!restart_wanted && pressing_on_high(k))
                        snprintf(where, sizeof(where), "; pressing on memory.high %s",
                                 format_bytes(h, k->s->memory_high));
                plan_emergency_reset(k, where);
                return;
        }
        if (restart_due) {
                /* The emergency reset's sessions are still ending: its result first, unless the
                 * OOM is nearer than one of its statements may take (sql.query-timeout): then the
                 * reset would answer after the kernel's kill. A server stalled at restart.at has
                 * no OOM coming, and answers no one meanwhile: the reset is given
                 * sql.query-timeout there, as long as one of its statements.
                 * Seen: a session list 6.7 s in coming from a swamped server, the OOM 2-4 s away. */
                bool reset_out = wait_for_reset || (e->reset_emergency_done && (k->s->pending & (1u << ACTION_RESET)));
                usec_t reset_out_for = reset_out ? k->now - e->act[ACTION_RESET].last : 0;
                bool oom_first = reset_out && k->eta < p->sql_query_timeout;
                bool stall_first = reset_out && !oom_first && k->stalled && reset_out_for >= p->sql_query_timeout;
                if (reset_out && !oom_first && !stall_first)
                        return;
                const Sample *s = k->s;
                const char *no_room = "";
                bool raise_wanted = p->max_raise > 0 && limits_writable(s) && s->memory_max != SIZE_UNLIMITED &&
                                    !e->max_raised;
                /* The raise waits for a write of memory.max under way (a restore of admission's
                 * raise, or a retry of one that failed), and the restart with it: the restart
                 * would wait for it all the same (its thread starts after the limits decided
                 * before it), and the sample shows the value that write replaces, not the one to
                 * raise from and put back. */
                if (raise_wanted && max_write_outstanding(k)) {
                        hold(k, ACTION_RESTART, HOLD_MAX_WRITE,
                             "%s: restart waits for the write of memory.max under way, to raise it from there", ctx(k));
                        return;
                }
                if (raise_wanted) {
                        /* Raised from what it is, and put back to exactly that: the budget may be
                         * a budget.size below memory.max. */
                        const char *bound = "restart.max-raise";
                        uint64_t raise = MIN(apply_bp(k->budget, p->max_raise), apply_bp(k->budget, p->max_raise_total));
                        uint64_t from = s->memory_max;
                        uint64_t raised = raise_within_host(k, from, raise, &bound);
                        if (raised > from) {
                                Decision *d = emit_action(k, ACTION_SET_MAX, "raise memory.max %s -> %s while the server stops (%s)",
                                                          format_bytes(a, from), format_bytes(b, raised), bound);
                                note_max_raised(k, d, from, raised);
                        } else if (raise > 0)
                                no_room = ", memory.max not raised: no room above it on this host (budget.host-reserve)";
                }
                high_out_of_the_way_of_stop(k);
                /* A raise for admission still in place goes on as the restart's: restored once
                 * the server is back, not when admit.raise-for is over. */
                e->max_by_admit = false;
                unsigned recent = restarts_within(e, sample_clock(k->s), USEC_PER_DAY);
                char t1[FORMAT_TIMESPAN_MAX], t2[FORMAT_TIMESPAN_MAX];
                char reset_note[192] = "";
                if (oom_first)
                        snprintf(reset_note, sizeof(reset_note),
                                 ", the reset under way not waited for%s: the OOM in %s is nearer than sql.query-timeout %s",
                                 p->preflush ? ", nor a pre-flush" : "", format_timespan(t1, k->eta),
                                 format_timespan(t2, p->sql_query_timeout));
                else if (stall_first)
                        snprintf(reset_note, sizeof(reset_note),
                                 ", the reset under way for %s not waited for longer%s: stalled, the server answers "
                                 "no one (sql.query-timeout %s)",
                                 format_timespan(t1, reset_out_for), p->preflush ? ", nor a pre-flush" : "",
                                 format_timespan(t2, p->sql_query_timeout));
                Decision *d = emit_action(k, ACTION_RESTART, "%s: graceful restart (%u of at most %u in 24h%s%s%s)", ctx(k),
                                   recent + 1, p->restart_max_per_day,
                                   k->stalled            ? ", emergency: stalled at restart.at (PSI full)"
                                   : k->emergency && p->n_windows > 0 ? ", emergency: outside the windows"
                                                                      : "",
                                   reset_note, no_room);
                /* Not past the OOM either: a pre-flush talks to the same swamped server. */
                if (d)
                        d->restart.preflush = p->preflush && !oom_first && !stall_first;
                note_action(k, ACTION_RESTART, false);
                e->restart_pending = true;
                e->restart_at = k->now;
                if (e->n_restarts == ENGINE_RESTART_HISTORY) {
                        memmove(e->restart_clock, e->restart_clock + 1, (ENGINE_RESTART_HISTORY - 1) * sizeof(usec_t));
                        e->n_restarts--;
                }
                e->restart_clock[e->n_restarts++] = sample_clock(k->s);
                return;
        }

        if (e->level >= LEVEL_POOL && !wait_for_reset && step_available(k, LEVEL_POOL) && !e->act[ACTION_POOL].spent &&
            !pool_at_floor(p, e) && cooldown_over(k, ACTION_POOL, LEVEL_POOL) && pool_recheck(k)) {
                char s1[FORMAT_PERCENT_MAX], s2[FORMAT_PERCENT_MAX];
                high_out_of_the_way(k);
                Decision *d = emit_action(k, ACTION_POOL,
                                          "%s: shrink the buffer pool by %s of its configured size, not below %s of it",
                                          ctx(k), format_bp(s1, p->pool_step), format_bp(s2, p->pool_floor));
                if (d) {
                        d->pool.step = p->pool_step;
                        d->pool.floor = p->pool_floor;
                        d->pool.grow_max = SIZE_UNLIMITED;
                }
                e->pool_steps++;
                e->pool_growing = false;
                note_action(k, ACTION_POOL, true);
                return;
        }

        if (e->level >= LEVEL_RESET && !reset_outstanding && step_available(k, LEVEL_RESET) && !e->act[ACTION_RESET].spent &&
            cooldown_over(k, ACTION_RESET, LEVEL_RESET) && recheck(k, LEVEL_RESET)) {
                bool in_trx = p->reset_in_trx == IN_TRX_EMERGENCY && k->emergency;
                Decision *d = emit_action(k, ACTION_RESET,
                                   "%s: reset up to %u session(s) holding at least %s, idle sessions first "
                                   "(idle at least %s)%s",
                                   ctx(k), p->reset_max, format_bytes(a, p->reset_min_memory),
                                   format_timespan(t, p->reset_min_idle),
                                   in_trx ? "; emergency: sessions in transactions too" : "");
                if (d) {
                        d->reset.max = p->reset_max;
                        d->reset.min_memory = p->reset_min_memory;
                        d->reset.min_idle = p->reset_min_idle;
                        d->reset.in_trx = in_trx;
                }
                e->reset_last_emergency = false;
                note_action(k, ACTION_RESET, true);
                return;
        }

        if (e->level >= LEVEL_ADMIT && step_available(k, LEVEL_ADMIT) && !e->admit_lowered &&
            !e->act[ACTION_ADMIT].spent && cooldown_over(k, ACTION_ADMIT, LEVEL_ADMIT) && recheck(k, LEVEL_ADMIT) &&
            connections_rising(k)) {
                uint64_t ws_fewest;
                usec_t fewest_at;
                unsigned fewest = conn_fewest_at(e, &ws_fewest, &fewest_at);
                AdmitFit f = {};
                char plus[200];
                if (p->admit_fit)
                        f = admit_fit(k, fewest, ws_fewest, fewest_at);
                if (f.fit > p->admit_headroom)
                        snprintf(plus, sizeof(plus), "the %u more that fit under %s at %s each%s (admit.fit)", f.fit,
                                 format_bytes(b, f.bound), format_bytes(a, f.cost),
                                 f.capped ? ", as many as the rise so far" : "");
                else if (f.cost > 0)
                        snprintf(plus, sizeof(plus), "%u (admit.headroom; %u more fit under %s at %s each)",
                                 p->admit_headroom, f.fit, format_bytes(b, f.bound), format_bytes(a, f.cost));
                else if (p->admit_fit)
                        snprintf(plus, sizeof(plus), "%u (admit.headroom; %s)", p->admit_headroom, f.why);
                else
                        snprintf(plus, sizeof(plus), "%u", p->admit_headroom);
                admit_raise_max(k);
                Decision *d = emit_action(k, ACTION_ADMIT,
                                          "%s; %u connections, up from %u within admit.rise-window %s: lower "
                                          "max_connections to the connected clients plus %s (not below %u)",
                                          ctx(k), k->s->connections, fewest, format_timespan(t, p->admit_rise_window),
                                          plus, p->admit_floor);
                note_admit_lowering(k, d, k->s->connections, false);
                if (d && f.fit > p->admit_headroom)
                        d->admit.fit = f.fit;
                e->admit_before = fewest;
                return;
        }

        if (e->level >= LEVEL_TRIM && !wait_for_reset && step_available(k, LEVEL_TRIM) && !e->act[ACTION_TRIM].spent &&
            cooldown_over(k, ACTION_TRIM, LEVEL_TRIM)) {
                Decision *d = emit_action(k, ACTION_TRIM, "%s: trim (method %s)", ctx(k),
                                   trim_method_to_string(p->trim_method));
                if (d)
                        d->trim.method = p->trim_method;
                note_action(k, ACTION_TRIM, true);
        }
}

/* The buffer pool grows back one step at a time: only memgov's own steps (a server that shrank
 * it by itself is left as it chose), only when calm below throttle for pool.grow-after, and only
 * when what the last step gave back fits under the point where the ladder would move again, with
 * the hysteresis: growing must not bring the shrink straight back. */
static void plan_pool_grow(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (e->pool_steps == 0 || !p->step[LEVEL_POOL].enabled || e->restart_pending || k->emergency)
                return;
        if (e->level >= LEVEL_THROTTLE || k->now - e->calm_since < p->pool_grow_after ||
            k->now - e->act[ACTION_POOL].last < p->pool_grow_after || e->act[ACTION_POOL].pending ||
            e->act[ACTION_POOL].spent)
                return; /* a step that failed or did not help: not again, up or down, before its backoff */
        if (e->last_action > 0 && k->now - e->last_action < p->settle)
                return;
        uint32_t entry = p->step[LEVEL_POOL].at     ? p->step[LEVEL_POOL].at
                         : p->step[LEVEL_THROTTLE].at ? p->step[LEVEL_THROTTLE].at
                                                      : p->step[LEVEL_TRIM].at;
        if (entry == 0)
                return;
        uint64_t room = apply_bp(k->budget, entry - MIN(entry, p->hysteresis));
        int64_t gain = e->act[ACTION_POOL].last_gain;
        uint64_t back = gain > 0 ? (uint64_t) gain : 0;
        if (k->ws + back > room)
                return;
        Decision *d = emit_action(k, ACTION_POOL,
                                  "%s: grow the buffer pool back one step (%u of memgov's step(s) down left), calm "
                                  "for %s and room for the %s it gave back",
                                  ctx(k), e->pool_steps, format_timespan(t, k->now - e->calm_since),
                                  format_bytes(a, back));
        if (d) {
                d->pool.grow = true;
                d->pool.step = p->pool_step;
                d->pool.floor = p->pool_floor;
                d->pool.grow_max = SIZE_UNLIMITED;
        }
        e->pool_steps--;
        e->pool_growing = true;
        note_action(k, ACTION_POOL, false);
}

static void restart_timeout(Tick *k) {
        Engine *e = k->e;
        char t[FORMAT_TIMESPAN_MAX];

        if (!e->restart_pending)
                return;
        if (e->opts.simulate) {
                if (k->now - e->restart_at < k->p->settle)
                        return;
                emit_code(k, DECISION_EVENT, EVENT_RESTART_ASSUMED, "restart taken as done (simulated: no server was restarted)");
        } else {
                if (k->now - e->restart_at < k->p->stop_timeout)
                        return;
                emit_code(k, DECISION_EVENT, EVENT_RESTART_TIMEOUT, "no new server process within restart.stop-timeout %s",
                     format_timespan(t, k->p->stop_timeout));
        }
        e->restart_pending = false;
        /* A raise again still under way: put back once it is done (retry_max_restore). */
        if (e->max_raised && !max_write_outstanding(k))
                restore_max(k, "");
}

/* While the server stops gracefully, memory.max is raised again by restart.max-raise each time the
 * server comes within half of that of the raised value, up to restart.max-raise-total in all and
 * never past host RAM minus budget.host-reserve. The storm's sessions go on allocating until
 * the server's shutdown ends them.
 * Seen with one raise: 372M to the raised 403M within 5 s of the decision, then the OOM kill. */
static void stop_raise_more(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX], o[FORMAT_BYTES_MAX], t[FORMAT_PERCENT_MAX];

        if (!e->restart_pending || !e->max_raised || e->max_restoring || e->max_by_admit || p->max_raise == 0 ||
            !limits_writable(s) || !(s->has & SAMPLE_HAS_CGROUP) || e->act[ACTION_SET_MAX].spent ||
            max_write_outstanding(k))
                return;
        /* The working set, as everywhere else: page cache (the stop's own writes, a restart's
         * reads) fills any room under memory.max and is reclaimed before an OOM kill. */
        uint64_t step = apply_bp(k->budget, p->max_raise);
        if (k->ws + step / 2 < e->max_raised_to)
                return;
        uint64_t total = apply_bp(k->budget, p->max_raise_total);
        uint64_t so_far = e->max_raised_to > e->max_original ? e->max_raised_to - e->max_original : 0;
        if (so_far >= total)
                return;
        const char *bound = "restart.max-raise";
        if (total - so_far < step) {
                step = total - so_far;
                bound = "restart.max-raise-total";
        }
        uint64_t raised = raise_within_host(k, e->max_raised_to, step, &bound);
        if (raised <= e->max_raised_to)
                return; /* no room left on this host */
        Decision *d = emit_action(k, ACTION_SET_MAX,
                                  "raise memory.max %s -> %s: the stopping server's working set is %s (%s; %s of the budget "
                                  "over %s at most)",
                                  format_bytes(a, e->max_raised_to), format_bytes(b, raised),
                                  format_bytes(c, k->ws), bound, format_bp(t, p->max_raise_total),
                                  format_bytes(o, e->max_original));
        if (d) {
                d->value = raised;
                d->old_value = e->max_raised_to;
        }
        e->max_raised_prev = e->max_raised_to;
        e->max_raised_to = raised;
        e->max_raised_at = k->now;
}

/* memory.max still raised, with no restart under way and not for admission: a restore that
 * failed, or one the restart's end could not decide within the backoff of a raise that failed
 * (a raise again during the stop): put it back. */
static void retry_max_restore(Tick *k) {
        Engine *e = k->e;

        if (!e->max_raised || e->restart_pending || e->act[ACTION_SET_MAX].spent || (e->max_by_admit && !e->max_restoring) ||
            max_write_outstanding(k))
                return;
        restore_max(k, e->max_restoring ? " (the last restore failed)" : " after the restart");
}

/* PSI full as it is now: avg10 trails a stall that has just begun; the cumulative stall time
 * over the last second or more does not.
 * Seen: avg10 25 s behind a stall at memory.high, the server not answering meanwhile. */
#define FULL_RECENT_MIN_SPAN USEC_PER_SEC
static uint32_t observe_full_stall(Engine *e, const Sample *s) {
        if (!(s->has & SAMPLE_HAS_PSI) || !s->psi.has_full) {
                e->full_ref_known = false;
                e->full_recent = 0;
                return 0;
        }
        uint64_t total = s->psi.full.total;
        if (!e->full_ref_known || s->mono < e->full_ref_mono || total < e->full_ref_total) {
                /* The first sample, or a new cgroup (its count started over): nothing to compare. */
                e->full_ref_known = true;
                e->full_ref_mono = s->mono;
                e->full_ref_total = total;
                e->full_recent = 0;
        } else if (s->mono - e->full_ref_mono >= FULL_RECENT_MIN_SPAN) {
                uint64_t span = s->mono - e->full_ref_mono;
                uint64_t bp = (total - e->full_ref_total) * 10000 / span;
                e->full_recent = (uint32_t) MIN(bp, (uint64_t) 10000);
                e->full_recent_span = span;
                e->full_ref_mono = s->mono;
                e->full_ref_total = total;
        }
        return MAX(s->psi.full.avg10, e->full_recent);
}

static void remember(Engine *e, const Sample *s) {
        e->have_prev = true;
        e->prev_mono = s->mono;
        e->prev_has = s->has;
        if (s->has & SAMPLE_HAS_PROCESS)
                e->prev_pid = s->pid;
        if (s->has & SAMPLE_HAS_UPTIME)
                e->prev_uptime = s->uptime;
        if (s->has & SAMPLE_HAS_EVENTS)
                e->prev_events = s->events;
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
        conn_add(e, p, s, k.ws, now);
        observe_startup(&k);

        trend_add(&e->trend, s->mono, k.ws, apply_bp(k.budget, p->trend_drop));
        trend_add(&e->trend_short, s->mono, k.ws, apply_bp(k.budget, p->trend_drop));
        const Trend *tr = trend_in_use(e);
        k.eta = out->eta = short_trend_eta(&k, tr, trend_eta(tr, k.ws, k.budget));
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
        k.full_now = observe_full_stall(e, s);

        observe_events(&k);
        restart_timeout(&k);
        observe_failures(&k);
        observe_not_done(&k);
        measure_effects(&k);
        expire_backoffs(&k);
        retry_max_restore(&k);
        admit_max_back(&k);
        stop_raise_more(&k);
        resync_high(&k);

        if (!k.starting && !step_available(&k, LEVEL_THROTTLE) && p->step[LEVEL_THROTTLE].enabled &&
            k.ws_bp >= p->step[LEVEL_THROTTLE].at && p->step[LEVEL_THROTTLE].at > 0) {
                bool no_cgroup = !(s->has & SAMPLE_HAS_CGROUP);
                if (no_cgroup || !s->limits_readonly)
                        hold(&k, ACTION_SET_HIGH, no_cgroup ? HOLD_THROTTLE_NO_CGROUP : HOLD_THROTTLE_NO_PSI,
                             no_cgroup ? "%s: throttle skipped: no cgroup v2 memory controller to set memory.high on"
                                       : "%s: throttle skipped: no PSI memory.pressure to guard memory.high against "
                                         "a stall",
                             ctx(&k));
                else
                        hold(&k, ACTION_SET_HIGH, HOLD_THROTTLE_READONLY,
                             "%s: throttle skipped: the cgroup file system is read-only here, memory.high cannot "
                             "be set", ctx(&k));
        }

        hold_starting(&k);

        /* Where the signals point, then higher while the rung there is not helping. */
        Level sig = signal_level(&k), target = sig;
        while (target > LEVEL_NORMAL && step_exhausted(&k, target) && (k.rising || e->level > target)) {
                Level up = next_above(&k, target);
                /* Destructive rungs are entered on their own thresholds only. */
                if (up == target || up == LEVEL_RESET || up == LEVEL_RESTART)
                        break;
                /* Admission too: it refuses clients, and only a storm at its thresholds calls for it. */
                if (up == LEVEL_ADMIT && !step_enters(&k, LEVEL_ADMIT))
                        break;
                if (up == LEVEL_POOL && !pool_called_for(&k))
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
        if (out->n_decisions == before_act)
                plan_pool_grow(&k);
        if (out->n_decisions == before_act)
                plan_admit_restore(&k);
        plan_high(&k);

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
