/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a tick knows before any rung is asked: the budget, the working set's trends and recent
 * figures, PSI full as it is now, whether the server is starting, the server's events (an OOM
 * kill, a new server process), and the sample remembered for the next tick. */
#include <inttypes.h>
#include <stdio.h>

#include "engine-internal.h"


void trends_init(Engine *e, const Policy *p) {
        trend_init(&e->trend, p->trend_window, p->trend_points, p->trend_min_points);
        trend_init(&e->trend_short, MAX(p->trend_window / MAX(p->trend_points, 1u), (usec_t) USEC_PER_SEC),
                   p->trend_points, p->trend_min_points);
        e->trend_short.confirm = true;
}

/* The trend the ETA comes from: the window's, else (not known yet) the last minute's. */
const Trend *trend_in_use(const Engine *e) {
        return e->trend.valid || !e->trend_short.valid ? &e->trend : &e->trend_short;
}

/* The last minute's trend stands in while the window's is not known (after a start, a restart, a
 * drop), and is believed only TREND_SHORT_REACH times as far ahead as it looked back: a rise seen
 * for half a minute says nothing of the next five; a storm's ETA of two minutes is believed half
 * a minute in.
 * Seen unbounded: 64 new clients, 177M -> 183M of 384M in 35 s, "OOM in 4m37s", the peak 232M. */
#define TREND_SHORT_REACH 4
usec_t short_trend_eta(Tick *k, const Trend *tr, usec_t eta) {
        if (tr != &k->e->trend_short || eta == USEC_INFINITY || eta / TREND_SHORT_REACH <= tr->span)
                return eta;
        k->eta_too_far = eta;
        return USEC_INFINITY;
}

/* The pool's readings come with the samples, each carried until the next: one is new when its
 * time is. Its working set is the samples' at its time (between the last sample and this one);
 * its share of the rise is taken over the span the trend looks back, so that both speak of the
 * same stretch of time. */
usec_t pool_filling_eta(Tick *k, const Trend *tr, usec_t eta) {
        const Sample *s = k->s;
        Engine *e = k->e;
        const PoolFillReading *last;
        double share;

        if ((s->has & SAMPLE_HAS_POOL_FILL) && s->pool_read <= s->mono) {
                PoolFillReading r = { .t = s->pool_read, .in_use = s->pool_in_use, .room = s->pool_room, .ws = k->ws };
                uint64_t prev_ws;
                usec_t prev_t;
                if (recent_previous(e, &prev_t, &prev_ws) && prev_t < s->pool_read && prev_t < s->mono)
                        r.ws = (uint64_t) ((double) prev_ws + ((double) k->ws - (double) prev_ws) *
                                                                      (double) (s->pool_read - prev_t) /
                                                                      (double) (s->mono - prev_t));
                pool_fill_add(&e->pool_fill, s->pid, &r);
        }
        if (eta == 0 || eta == USEC_INFINITY || !tr->valid)
                return eta;
        usec_t since = s->mono > tr->span + tr->bucket_len ? s->mono - tr->span - tr->bucket_len : 0;
        if (!pool_fill_share(&e->pool_fill, s->pid, since, s->mono, &share, &last))
                return eta;
        double rate = share * tr->slope, filled = rate * (double) (s->mono - last->t) / (double) USEC_PER_SEC;
        if (!(rate > 0) || filled >= (double) last->room)
                return eta;
        k->pool_rate = rate;
        k->pool_room = last->room - (uint64_t) filled;
        return pool_fill_eta(tr->slope, rate, k->pool_room, k->ws, k->budget);
}

/* Host RAM minus budget.host-reserve: no raise of memory.max ever goes past it, and with
 * budget.size = auto and no memory.max it is the budget. 0: no room on this host. */
uint64_t host_top(const Policy *p, const Sample *s) {
        uint64_t reserve = policy_host_reserve(p, s->host_total);
        return s->host_total > reserve ? s->host_total - reserve : 0;
}

uint64_t resolve_budget(const Tick *k, const char **ret_source) {
        const Policy *p = k->p;
        const Sample *s = k->s;

        switch (p->budget_mode) {
        case BUDGET_SIZE:
                *ret_source = "budget.size";
                return p->budget_size;
        case BUDGET_HOST_SHARE:
                *ret_source = "share of host RAM";
                return (s->has & SAMPLE_HAS_HOST) ? apply_bp(s->host_total, p->budget_share) : SIZE_UNKNOWN;
        case BUDGET_AUTO: {
                /* Our own raise of memory.max does not move the budget, nor does it while its
                 * restore is still on its way (the sample shows the raised value until the write
                 * lands).
                 * Seen otherwise: a calm memory.high 3% over the raised value after a restart. */
                uint64_t raised_from;
                if (limits_budget(k, &raised_from)) {
                        *ret_source = "memory.max";
                        return raised_from;
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
        }
        return SIZE_UNKNOWN;
}

void recent_add(Engine *e, usec_t t, uint64_t ws) {
        unsigned i = (e->recent_head + e->recent_n) % ELEMENTSOF(e->recent_ws);
        if (e->recent_n == ELEMENTSOF(e->recent_ws))
                e->recent_head = (e->recent_head + 1) % ELEMENTSOF(e->recent_ws);
        else
                e->recent_n++;
        e->recent_ws[i] = ws;
        e->recent_t[i] = t;
}

bool recent_previous(const Engine *e, usec_t *ret_t, uint64_t *ret_ws) {
        if (e->recent_n < 2)
                return false;
        unsigned i = (e->recent_head + e->recent_n - 2) % ELEMENTSOF(e->recent_ws);
        *ret_t = e->recent_t[i];
        *ret_ws = e->recent_ws[i];
        return true;
}

/* Median of the (at most max_n <= 5) latest working-set figures taken after `since`. */
uint64_t recent_median(const Engine *e, usec_t since, bool inclusive, unsigned max_n) {
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

/* A startup seen (or, for a new process, assumed) from this working set on: the hold not said yet. */
static void startup_begin(Engine *e, uint64_t ws) {
        e->starting = true;
        e->starting_ws = ws;
        e->starting_said = false;
}

/* How long a new server process is taken as starting before the accepting signal has a word on
 * it: the kept session tries it within its 10 s retry, and one more try fits. */
#define STARTING_ASSUMED_MAX (30 * USEC_PER_SEC)

/* How long the server process now governed has taken clients (since it was seen, where the
 * accepting signal never had a word on it); meaningful for a new process (process_since > 0). */
usec_t taking_clients_for(const Tick *k) {
        return k->now - MAX(k->e->process_since, k->e->ready_at);
}

/* A database server that listens on nothing yet is starting (InnoDB's recovery, its caches
 * allocated): what it takes then is not growth to extrapolate. Once it accepts clients, the
 * trend starts over from there. */
void observe_startup(Tick *k) {
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
                  t, format_bytes_change(a, b, e->starting_ws, k->ws), b);
}

/* Said once a startup, when the signals call for a rung. */
void hold_starting(Tick *k) {
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

void observe_events(Tick *k) {
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

        /* What each rung kept of the process that went (its settings, its storm, its sessions),
         * before the bookkeeping of the actions below starts over. */
        FOREACH_RUNG_UP(r)
                if (r->new_process)
                        r->new_process(k);
        /* No change of the new process's settings is paced: a cooldown of the old process's
         * lowering would hold admission back on the new one, whose clients are back at once. And
         * what failed against the old process (its sessions, its heap, its socket: a reset, a trim,
         * a pool step the restart cut short) says nothing of the new one: no backoff of such a
         * failure holds the new process's rungs. A reset or a trim that freed too little keeps its
         * backoff.
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
        }
        e->process_since = MAX(k->now, (usec_t) 1);
        /* And it starts by starting: where the signal exists, until it says otherwise. */
        if (new_pid && e->accepting_known && !(s->has & SAMPLE_HAS_ACCEPTING)) {
                startup_begin(e, k->ws);
                k->starting = true;
                e->starting_assumed = true;
                e->starting_since = k->now;
        }
        limits_new_process(k);
}

/* A PSI line as it is now: avg10 trails a stall that has just begun; the cumulative stall time
 * over the last second or more does not.
 * Seen: avg10 25 s behind a stall at memory.high, the server not answering meanwhile. */
#define PSI_RECENT_MIN_SPAN USEC_PER_SEC
static uint32_t psi_now(PsiRecent *r, usec_t mono, const PsiLine *line, bool has) {
        if (!has) {
                *r = (PsiRecent) {};
                return 0;
        }
        if (!r->ref_known || mono < r->ref_mono || line->total < r->ref_total) {
                /* The first sample, or a new cgroup (its count started over): nothing to compare. */
                *r = (PsiRecent) { .ref_known = true, .ref_mono = mono, .ref_total = line->total };
        } else if (mono - r->ref_mono >= PSI_RECENT_MIN_SPAN) {
                uint64_t span = mono - r->ref_mono;
                uint64_t bp = (line->total - r->ref_total) * 10000 / span;
                r->share = (uint32_t) MIN(bp, (uint64_t) 10000);
                r->span = span;
                r->ref_mono = mono;
                r->ref_total = line->total;
        }
        return MAX(line->avg10, r->share);
}

void observe_stall(Tick *k) {
        const Sample *s = k->s;
        bool psi = s->has & SAMPLE_HAS_PSI;
        k->full_now = psi_now(&k->e->full_recent, s->mono, &s->psi.full, psi && s->psi.has_full);
        k->some_now = psi_now(&k->e->some_recent, s->mono, &s->psi.some, psi);
}

void remember(Engine *e, const Sample *s) {
        e->have_prev = true;
        e->prev_mono = s->mono;
        e->prev_has = s->has;
        if (s->has & SAMPLE_HAS_PROCESS)
                e->prev_pid = s->pid;
        if (s->has & SAMPLE_HAS_UPTIME) {
                e->prev_uptime = s->uptime;
                e->prev_uptime_mono = s->mono;
        }
        if (s->has & SAMPLE_HAS_EVENTS)
                e->prev_events = s->events;
}

usec_t sample_clock(const Sample *s) {
        return (s->has & SAMPLE_HAS_WALL) ? s->wall : s->mono;
}