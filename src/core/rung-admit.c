/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The admission rung: in a connection storm, max_connections lowered to the clients connected
 * plus a headroom (or plus the connections that fit, admit.fit), so that only new connections are
 * refused; carried to a new server process while the storm lasts, and put back once calm. It
 * decides; src/act/admit.c carries it out. */
#include <stdio.h>

#include "engine-internal.h"

static AdmitState *state(const Engine *e) {
        return engine_rung_state(e, LEVEL_ADMIT);
}

/* The stretches of one connection count. The sampler takes the count once in
 * SAMPLE_CONNECTIONS_EVERY samples, so a count that changed changed within that many samples
 * before it was seen, and stood still before them. When a stretch ends, its part before them
 * gives a rate the sessions connected then grow at on their own (when it lasted as many samples
 * again: a shorter one tells nothing), and when the count rose, its part after them what the
 * working set rose by with the new connections. Both go into the newest bucket. A fall of the
 * working set larger than `drop` between two samples (trend.drop of the budget: a trim, a reset,
 * clients gone) is left out of both: the rate is the sessions' growth, not what was taken from
 * them. */
static void admit_segment(AdmitState *st, unsigned bucket_i, unsigned connections, uint64_t ws, usec_t now,
                          uint64_t drop) {
        const unsigned size = ELEMENTSOF(st->seg_cum);
        if (st->seg_open) {
                if (ws >= st->seg_last_ws || st->seg_last_ws - ws <= drop)
                        st->seg_up += (int64_t) (ws - st->seg_last_ws);
                st->seg_last_ws = ws;
        }
        if (st->seg_open && connections != st->seg_conns) {
                /* The sample SAMPLE_CONNECTIONS_EVERY before this one, where the count was taken
                 * last, or the stretch's start (the ring holds the samples before this one). */
                int64_t cum_p = 0;
                usec_t t_p = st->seg_t0;
                if (st->seg_n == size) {
                        unsigned oldest = (st->seg_head + 1) % size;
                        cum_p = st->seg_cum[oldest];
                        t_p = st->seg_t[oldest];
                }
                if (st->seg_samples >= 2 * SAMPLE_CONNECTIONS_EVERY && t_p > st->seg_t0) {
                        double rate = MAX((double) cum_p, 0.0) / ((double) (t_p - st->seg_t0) / USEC_PER_SEC);
                        unsigned a = st->seg_after_rise;
                        if (!st->has_still[a][bucket_i] || rate < st->still_rate[a][bucket_i])
                                st->still_rate[a][bucket_i] = rate;
                        st->has_still[a][bucket_i] = true;
                }
                if (connections > st->seg_conns) {
                        st->rise_up[bucket_i] += st->seg_up - cum_p;
                        st->rise_t[bucket_i] += now - t_p;
                        if (st->rise_from[bucket_i] == 0 || t_p < st->rise_from[bucket_i])
                                st->rise_from[bucket_i] = t_p;
                }
        }
        if (!st->seg_open || connections != st->seg_conns) {
                st->seg_after_rise = st->seg_open && connections > st->seg_conns;
                st->seg_open = true;
                st->seg_conns = connections;
                st->seg_up = 0;
                st->seg_last_ws = ws;
                st->seg_t0 = now;
                st->seg_n = st->seg_samples = 0;
        }
        /* This sample into the ring; the stretch's start is its first. */
        st->seg_head = (st->seg_head + 1) % size;
        st->seg_cum[st->seg_head] = st->seg_up;
        st->seg_t[st->seg_head] = now;
        st->seg_n = MIN(st->seg_n + 1, size);
        st->seg_samples++;
}

/* A bucket with no stretch ended in it yet. */
static void bucket_segments_clear(AdmitState *st, unsigned i) {
        st->has_still[0][i] = st->has_still[1][i] = false;
        st->rise_up[i] = 0;
        st->rise_t[i] = st->rise_from[i] = 0;
}

/* What the gate measures is of the server process it was measured on. */
static void admit_segments_forget(AdmitState *st) {
        for (unsigned i = 0; i < ELEMENTSOF(st->rise_up); i++)
                bucket_segments_clear(st, i);
        st->seg_open = false;
}

/* The working set the sessions hold, as the gate measures it: without the buffer pool's first
 * fill, which is neither the sessions' own growth nor the newcomers' and ends at the pool's size
 * (pool-fill.h: once its pages in use fell, filling them again costs no memory). Counted, the
 * gate took the pool filling for the sessions' growth and passed a storm by.
 * Measured: MySQL 9.7 a minute after its start, the count still at 6 for 76 s, the working set
 * up 112M of which the pool 55M; then 151 connections, "330M with them, 403M on their own". */
static uint64_t admit_sessions_ws(Tick *k) {
        AdmitState *st = state(k->e);
        const Sample *s = k->s;
        if (!(s->has & SAMPLE_HAS_POOL_FILL))
                return k->ws > st->pool_filled ? k->ws - st->pool_filled : 0;
        if (st->pool_pid != s->pid) {
                st->pool_pid = s->pid;
                st->pool_filled = 0;
        } else if (s->pool_in_use > st->pool_last && !(k->e->pool_fill.pid == s->pid && k->e->pool_fill.in_use_fell))
                st->pool_filled += s->pool_in_use - st->pool_last;
        st->pool_last = s->pool_in_use;
        return k->ws > st->pool_filled ? k->ws - st->pool_filled : 0;
}

/* The server's connection count goes into buckets of admit.rise-window / ADMIT_CONN_BUCKETS,
 * each keeping the fewest it saw and the working set when it first saw it, and what the
 * sessions' working set (admit_sessions_ws()) grew by while the count stood still and rose
 * (admit_segment); buckets older than the window go. */
static void admit_sample(Tick *k) {
        AdmitState *st = state(k->e);
        const Policy *p = k->p;
        const Sample *s = k->s;
        uint64_t ws = k->ws, sessions_ws = admit_sessions_ws(k);
        usec_t now = k->now;

        if (!(s->has & SAMPLE_HAS_CONNECTIONS))
                return;
        usec_t width = MAX(p->admit_rise_window / ADMIT_CONN_BUCKETS, (usec_t) 1);
        uint64_t drop = apply_bp(k->budget, p->trend_drop);
        const unsigned size = ELEMENTSOF(st->conn_min);
        while (st->conn_n > 0 && now - st->conn_t[st->conn_head] > p->admit_rise_window) {
                st->conn_head = (st->conn_head + 1) % size;
                st->conn_n--;
        }
        unsigned last = (st->conn_head + st->conn_n + size - 1) % size;
        if (st->conn_n > 0 && now - st->conn_t[last] < width) {
                if (s->connections < st->conn_min[last]) {
                        st->conn_min[last] = s->connections;
                        st->conn_ws[last] = ws;
                }
                st->conn_max[last] = MAX(st->conn_max[last], s->connections);
                admit_segment(st, last, s->connections, sessions_ws, now, drop);
                return;
        }
        if (st->conn_n == size) {
                st->conn_head = (st->conn_head + 1) % size;
                st->conn_n--;
        }
        unsigned i = (st->conn_head + st->conn_n) % size;
        st->conn_min[i] = st->conn_max[i] = s->connections;
        st->conn_ws[i] = ws;
        st->conn_t[i] = now;
        bucket_segments_clear(st, i);
        st->conn_n++;
        admit_segment(st, i, s->connections, sessions_ws, now, drop);
}

/* The fewest connections within admit.rise-window (this sample's included), and the working set
 * and the time when the oldest bucket with that many first saw it. */
static unsigned conn_fewest_at(const Engine *e, uint64_t *ret_ws, usec_t *ret_t) {
        const AdmitState *st = state(e);
        unsigned fewest = UINT32_MAX;
        uint64_t ws = 0;
        usec_t t = 0;
        for (unsigned j = 0; j < st->conn_n; j++) {
                unsigned i = (st->conn_head + j) % ELEMENTSOF(st->conn_min);
                if (st->conn_min[i] < fewest) {
                        fewest = st->conn_min[i];
                        ws = st->conn_ws[i];
                        t = st->conn_t[i];
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

/* The most connections on this server process before the last quarter of admit.rise-window, in
 * *ret_most; false (and 0) before the process has been watched that long. */
static bool most_before_last_quarter(const Tick *k, unsigned *ret_most) {
        const AdmitState *st = state(k->e);
        usec_t quarter = k->p->admit_rise_window / 4;
        unsigned most = 0;
        bool before = false;
        for (unsigned j = 0; j < st->conn_n; j++) {
                unsigned i = (st->conn_head + j) % ELEMENTSOF(st->conn_min);
                if (k->now - st->conn_t[i] > quarter && st->conn_t[i] >= k->e->process_since) {
                        most = MAX(most, st->conn_max[i]);
                        before = true;
                }
        }
        *ret_most = most;
        return before;
}

/* Admission helps only when the growth comes with new connections: the count rose within
 * admit.rise-window by admit.min-rise, and by admit.min-rise-share of what it rose from. */
static bool connections_rose(const Tick *k) {
        const Sample *s = k->s;
        if (!(s->has & SAMPLE_HAS_CONNECTIONS) || state(k->e)->conn_n == 0)
                return false;
        unsigned fewest = conn_fewest(k->e);
        if (s->connections <= fewest)
                return false;
        uint64_t rise = s->connections - fewest;
        return rise >= k->p->admit_min_rise && rise * BP_ONE >= (uint64_t) fewest * k->p->admit_min_rise_share;
}

/* The least rise over the count before that is new clients coming: a quarter of admit.min-rise. */
static unsigned admit_least_rise(const Policy *p) {
        return MAX(p->admit_min_rise / 4, 1u);
}

/* ...and only while they come: the count is at least a quarter of admit.min-rise over the most it
 * was on this server process before the last quarter of admit.rise-window (the gap that parts one
 * run of rises from the next, rise_growth()). Else there is nothing to refuse: clients that come
 * and go around a steady count (a health check, connections opened per request) and clients that
 * come back (after a reset, a client's restart) are no new ones, and the growth is in the sessions
 * connected, for the reset to find. False while they come, and before the process has been
 * watched that long; the most it was in *ret_most.
 * Seen otherwise: MySQL 9.7, 37 sessions connected at once and growing on their own for 150 s
 * after, a probe connecting twice a second (the count at 37 and 38 in turn); admission lowered
 * max_connections 400 -> 47 for a storm long over. */
static bool no_new_clients(const Tick *k, unsigned *ret_most) {
        unsigned most;
        bool before = most_before_last_quarter(k, &most);
        if (ret_most)
                *ret_most = most;
        return before && k->s->connections < most + admit_least_rise(k->p);
}

static bool connections_rising(const Tick *k) {
        return connections_rose(k) && !no_new_clients(k, NULL);
}

/* What the new connections brought of the working set's growth, against what the sessions
 * connected already grow by on their own over as long: since the first rise of the latest run of
 * rises within admit.rise-window (rises less than a quarter of the window apart: one that came
 * long before, a client reconnecting, is another rise), at the least rate of the stretches where
 * the count stood still that began with a rise (the sessions' growth as it is while the count
 * rises, not as it was before: a ramp of clients beside growth that began with it), or without
 * any, of the others. What the run's rises grew by over that rate came with the new connections.
 * The stretch under way counts for neither. */
typedef struct RiseGrowth {
        bool known;     /* false: no stretch stood still long enough (a rise at nearly every count: a storm) */
        uint64_t with;  /* the rises' growth over the rate of the sessions connected already */
        uint64_t own;   /* what those sessions grow by on their own since the first rise, at that rate */
        double rate;    /* bytes per second */
} RiseGrowth;

static RiseGrowth rise_growth(const Tick *k) {
        const AdmitState *st = state(k->e);
        RiseGrowth g = {};
        int64_t up = 0;
        usec_t rise_t = 0, from = 0;
        double least[2] = { -1, -1 }; /* of the stretches that began otherwise, and with a rise */
        for (unsigned j = 0; j < st->conn_n; j++) {
                unsigned i = (st->conn_head + j) % ELEMENTSOF(st->conn_min);
                for (unsigned a = 0; a < 2; a++)
                        if (st->has_still[a][i] && (least[a] < 0 || st->still_rate[a][i] < least[a]))
                                least[a] = st->still_rate[a][i];
        }
        g.rate = least[1] >= 0 ? least[1] : least[0];
        /* The latest run of rises, from the newest bucket back. */
        for (unsigned j = st->conn_n, gap = 0; j > 0; j--) {
                unsigned i = (st->conn_head + j - 1) % ELEMENTSOF(st->conn_min);
                if (st->rise_from[i] == 0) {
                        gap++;
                        continue;
                }
                if (from > 0 && gap > ADMIT_CONN_BUCKETS / 4)
                        break;
                gap = 0;
                up += st->rise_up[i];
                rise_t += st->rise_t[i];
                if (from == 0 || st->rise_from[i] < from)
                        from = st->rise_from[i];
        }
        if (g.rate < 0 || from == 0 || from > k->now) {
                g.rate = 0;
                return g;
        }
        g.known = true;
        double with = (double) up - g.rate * ((double) rise_t / USEC_PER_SEC);
        g.with = with > 0 ? (uint64_t) with : 0;
        g.own = (uint64_t) (g.rate * ((double) (k->now - from) / USEC_PER_SEC));
        return g;
}

/* A connection storm: the connections rose, and brought at least as much growth as the sessions
 * connected already grew by on their own since they began to rise (or the count never stood still
 * long enough to tell). Admission refuses new connections: it helps only against growth that
 * comes with them. Growth in sessions connected already is for the reset to find.
 * Seen otherwise: four growing sessions beside a client ramping to 128 threads, 825 of its
 * connections refused. */
static bool growth_with_connections(const RiseGrowth *g) {
        return !g->known || g->with >= g->own;
}

static bool connection_storm(const Tick *k) {
        if (!connections_rising(k))
                return false;
        RiseGrowth g = rise_growth(k);
        return growth_with_connections(&g);
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

/* The working set admit.fit fills up to: admit.at of the budget; with admit.at off, the threshold
 * of the next rung up that has one; 0: none. */
static uint64_t admit_fit_bound(const Tick *k) {
        for (Level l = LEVEL_ADMIT; l < _LEVEL_MAX; l++)
                if ((l == LEVEL_ADMIT || k->p->step[l].enabled) && k->p->step[l].at > 0)
                        return apply_bp(k->budget, k->p->step[l].at);
        return 0;
}

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
        state(k->e)->lowered = true;
        state(k->e)->tried = true;
        state(k->e)->restoring = false;
        state(k->e)->carried = carried;
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

        if (!state(e)->carry)
                return false;
        if (!p->step[LEVEL_ADMIT].enabled || state(e)->lowered ||
            (!k->starting && taking_clients_for(k) > p->admit_rise_window)) {
                state(e)->carry = false;
                return false;
        }
        if (k->starting || e->act[ACTION_ADMIT].pending || (k->s->pending & (1u << ACTION_ADMIT)) ||
            !connections_rising(k))
                return false;
        state(e)->carry = false;
        Decision *d = emit_action(k, ACTION_ADMIT,
                                  "%s; a new server process, admission in place on the one before, %u connections, "
                                  "up from %u: lower max_connections to the %u connections before the storm plus "
                                  "%u (not below %u)",
                                  ctx(k), k->s->connections, conn_fewest(e), state(e)->before, p->admit_headroom,
                                  p->admit_floor);
        note_admit_lowering(k, d, state(e)->before, true);
        return true;
}

/* max_connections goes back to what memgov found, at once, once the ladder is calm below
 * throttle for admit.restore-after (and as long after the lowering): raising it frees nothing and
 * costs nothing by itself, and a storm that comes back meets the rung again. In steps it would
 * only keep refusing clients longer for no memory. */
static bool plan_admit_restore(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char t[FORMAT_TIMESPAN_MAX];
        bool calm = e->level < LEVEL_THROTTLE && k->now - e->calm_since >= p->admit_restore_after &&
                    k->now - e->act[ACTION_ADMIT].last >= p->admit_restore_after;

        /* A lowering that failed, the storm over: nothing to carry to a new process any more. */
        if (state(e)->tried && !state(e)->lowered && calm && !restart_pending(e))
                state(e)->tried = false;
        if (!state(e)->lowered || e->act[ACTION_ADMIT].spent || restart_pending(e) || k->emergency)
                return false;
        if (!calm)
                return false;
        if (e->last_action > 0 && k->now - e->last_action < p->settle)
                return false;
        Decision *d = emit_action(k, ACTION_ADMIT, "%s: put max_connections back as it was found, calm for %s",
                                  ctx(k), format_timespan(t, k->now - e->calm_since));
        if (d) {
                d->admit.restore = true;
                d->admit.connections = (k->s->has & SAMPLE_HAS_CONNECTIONS) ? k->s->connections : 0;
        }
        state(e)->lowered = state(e)->tried = false;
        state(e)->restoring = true;
        state(e)->carried = false;
        note_action(k, ACTION_ADMIT, false);
        return true;
}

/* How many times the lowering carried to a new server process is tried before its failure backs
 * off as any admission's: a new server swamped by a storm's clients may reset a handshake or two. */
#define ADMIT_CARRY_TRIES 3u

static bool admit_available(const Tick *k) {
        /* A rung only in a connection storm (or while it is in place, or the ladder is on it):
         * with a flat count it would not help, and the ladder passes it by. */
        return (k->s->has & SAMPLE_HAS_CONNECTIONS) &&
               (state(k->e)->lowered || k->e->level == LEVEL_ADMIT || connection_storm(k));
}

/* In place already: what it can do is done. */
static bool admit_exhausted(const Tick *k) {
        return state(k->e)->lowered || k->e->act[ACTION_ADMIT].spent;
}

/* It refuses clients: only a storm at its thresholds calls for it. */
static bool admit_climbed_to(const Tick *k) {
        return step_enters(k, LEVEL_ADMIT);
}

static bool admit_holds_level(const Engine *e) {
        return state(e)->lowered;
}

/* A new server process starts at its configured max_connections: nothing to put back. But a
 * storm that admission held off the old process is still there, and comes back faster than the
 * new one's working set reaches admit.at. Admission in place when the process went is carried to
 * the new one (plan_admit_carry); and so is a lowering that failed there (a swamped server may
 * drop the query).
 * Seen uncarried: 112 storm clients back within 17 s, the kernel's kill 26 s after. */
static void admit_new_process(Tick *k) {
        Engine *e = k->e;
        admit_segments_forget(state(e));
        state(e)->carry = state(e)->carry || state(e)->lowered || state(e)->tried;
        state(e)->tried = false;
        state(e)->carry_failed = 0;
        state(e)->lowered = false;
}

/* A lowering or a restore not carried out (the server answered nothing to the session kept for
 * the actions within sql.query-timeout) left max_connections as it was, as a failure does; with
 * no backoff, a lowering comes again once admit.cooldown is over while the storm lasts, one
 * carried to a new server process at the next sample.
 * Seen as a failure: admission backed off for 10m at 74% of the budget in a storm, the restart
 * at 96% a minute later. */
static void admit_not_done(Tick *k, ActionKind a) {
        AdmitState *st = state(k->e);
        if (st->carried) {
                st->carry = true;
                st->carried = false;
        }
        st->lowered = st->restoring;
}

static bool admit_failed(Tick *k, ActionKind a, bool was_pending, usec_t backoff, const char **but) {
        Engine *e = k->e;
        ActionState *st = &e->act[a];
        /* The lowering carried to a new server process: the storm's clients are coming back, and
         * a 10-minute backoff would leave the new server to them; a swamped new server may reset
         * the lowering's handshake, and the next try a second later gets through.
         * Seen with the backoff: 110 clients back, the handshake reset, the kernel's kill 15 s on. */
        if (state(e)->carried && state(e)->carry_failed + 1 < ADMIT_CARRY_TRIES) {
                state(e)->carry_failed++;
                state(e)->lowered = false;
                state(e)->carry = true;
                state(e)->carried = false;
                st->pending = false;
                st->gain_measured = false;
                Decision *d = emit_code(k, DECISION_EFFECT, EFFECT_FAILED_CARRY,
                                        "admission failed on the new server process: tried again at the next "
                                        "sample (%u of %u tries)",
                                        state(e)->carry_failed, ADMIT_CARRY_TRIES);
                if (d)
                        d->action = a;
                return true;
        }
        /* A lowering that failed left max_connections as it was; a restore that failed left it
         * lowered: put back once the backoff is over. */
        state(e)->lowered = state(e)->restoring;
        return false;
}

static bool admit_plan(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (e->level >= LEVEL_ADMIT && step_available(k, LEVEL_ADMIT) && !state(e)->lowered &&
            !e->act[ACTION_ADMIT].spent && cooldown_over(k, ACTION_ADMIT, LEVEL_ADMIT) && recheck(k, LEVEL_ADMIT) &&
            connection_storm(k)) {
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
                limits_raise_for_admission(k);
                Decision *d = emit_action(k, ACTION_ADMIT,
                                          "%s; %u connections, up from %u within admit.rise-window %s: lower "
                                          "max_connections to the connected clients plus %s (not below %u)",
                                          ctx(k), k->s->connections, fewest, format_timespan(t, p->admit_rise_window),
                                          plus, p->admit_floor);
                note_admit_lowering(k, d, k->s->connections, false);
                if (d && f.fit > p->admit_headroom)
                        d->admit.fit = f.fit;
                state(e)->before = fewest;
                return true;
        }
        return false;
}

/* Called for on its thresholds, the connections risen, but passed by: said once, with its figures. */
static void admit_before_ladder(Tick *k) {
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], r[FORMAT_RATE_MAX], t[FORMAT_TIMESPAN_MAX];

        if (!p->step[LEVEL_ADMIT].enabled || k->starting || state(k->e)->lowered || !step_enters(k, LEVEL_ADMIT) ||
            !connections_rose(k))
                return;
        unsigned most;
        if (no_new_clients(k, &most)) {
                char q[FORMAT_TIMESPAN_MAX];
                hold(k, ACTION_ADMIT, HOLD_ADMIT_NOT_STORM,
                     "%s; %u connections, up from %u within admit.rise-window %s, but as many as %u before its last "
                     "%s (no new clients: %u more would be): refusing new connections would not stop it "
                     "(admission passed by)",
                     ctx(k), k->s->connections, conn_fewest(k->e), format_timespan(t, p->admit_rise_window), most,
                     format_timespan(q, p->admit_rise_window / 4), admit_least_rise(p));
                return;
        }
        RiseGrowth g = rise_growth(k);
        if (growth_with_connections(&g))
                return;
        hold(k, ACTION_ADMIT, HOLD_ADMIT_NOT_STORM,
             "%s; %u connections, up from %u within admit.rise-window %s, but they came with %s of growth, where "
             "the sessions connected already grew %s on their own (%s while the count stood still): refusing new "
             "connections would not stop it (admission passed by)",
             ctx(k), k->s->connections, conn_fewest(k->e), format_timespan(t, p->admit_rise_window),
             format_bytes(a, g.with), format_bytes(b, g.own), format_rate(r, g.rate));
}

bool admit_storm_judged(const Tick *k) {
        return state(k->e)->lowered || state(k->e)->tried || ((k->s->has & SAMPLE_HAS_CONNECTIONS) && connection_storm(k));
}

/* The clients that came with the storm: the count over the most it was on this process before
 * the last quarter of admit.rise-window (what new clients are weighed against), or, the process
 * watched less long, over the fewest within the window. 0 without a count. */
unsigned admit_newcomers(const Tick *k) {
        if (!(k->s->has & SAMPLE_HAS_CONNECTIONS) || state(k->e)->conn_n == 0)
                return 0;
        unsigned most, base = most_before_last_quarter(k, &most) ? most : conn_fewest(k->e);
        return k->s->connections > base ? k->s->connections - base : 0;
}

static void admit_simulate(Engine *e) {
        /* A lowering that only was assumed. */
        state(e)->lowered = state(e)->carry = state(e)->tried = false;
}

/* max_connections lowered for a connection storm: back to what memgov found (the actuator leaves
 * a value someone else set since). */
static unsigned admit_leave(const Engine *e, const char *why, Decision *ret, unsigned max) {
        if (!state(e)->lowered || max == 0)
                return 0;
        ret[0] = (Decision) { .kind = DECISION_ACTION, .action = ACTION_ADMIT, .level = e->level, .admit.restore = true };
        snprintf(ret[0].reason, sizeof(ret[0].reason), "%s: put max_connections back as it was found", why);
        return 1;
}

const Rung rung_admit = {
        .level = LEVEL_ADMIT,
        .state_size = sizeof(AdmitState),
        .available = admit_available,
        .exhausted = admit_exhausted,
        .climbed_to = admit_climbed_to,
        .holds_level = admit_holds_level,
        .sample = admit_sample,
        .before_ladder = admit_before_ladder,
        .new_process = admit_new_process,
        .failed = admit_failed,
        .not_done = admit_not_done,
        .early = plan_admit_carry,
        .plan = admit_plan,
        .calm = plan_admit_restore,
        .simulate = admit_simulate,
        .leave = admit_leave,
};
