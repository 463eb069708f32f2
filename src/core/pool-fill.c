/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The buffer pool's filling taken out of the ETA: see pool-fill.h. */
#include "memgov/pool-fill.h"
#include "memgov/trend.h"

static const PoolFillReading *reading(const PoolFill *f, unsigned i) {
        return &f->r[(f->head + i) % POOL_FILL_READINGS];
}

void pool_fill_add(PoolFill *f, pid_t pid, const PoolFillReading *r) {
        if (f->pid != pid)
                *f = (PoolFill) { .pid = pid };
        if (f->n > 0 && r->t <= reading(f, f->n - 1)->t)
                return;
        /* Pages in use that fell: frames given back (evicted, or a shrink), resident still. */
        if (f->n > 0 && r->in_use + (r->in_use + r->room) / POOL_FILL_FALL_DIVISOR < reading(f, f->n - 1)->in_use)
                f->in_use_fell = true;
        if (f->n == POOL_FILL_READINGS) {
                f->head = (f->head + 1) % POOL_FILL_READINGS;
                f->n--;
        }
        f->r[(f->head + f->n) % POOL_FILL_READINGS] = *r;
        f->n++;
}

bool pool_fill_share(const PoolFill *f, pid_t pid, usec_t since, usec_t now, double *ret_share,
                     const PoolFillReading **ret_last) {
        if (f->pid != pid || f->n < 2 || f->in_use_fell)
                return false;
        const PoolFillReading *last = reading(f, f->n - 1);
        unsigned first = 0;
        while (first + 1 < f->n && reading(f, first + 1)->t <= since)
                first++;
        const PoolFillReading *a = reading(f, first);
        if (now > last->t + POOL_FILL_STALE || last->t < a->t + POOL_FILL_MIN_SPAN || last->ws <= a->ws ||
            last->in_use <= a->in_use || last->room == 0)
                return false;
        /* Both measured at the same instants: the pool's part of the rise, whatever the trend's
         * own estimator makes of its points. */
        double share = (double) (last->in_use - a->in_use) / (double) (last->ws - a->ws);
        *ret_share = share > 1.0 ? 1.0 : share;
        *ret_last = last;
        return true;
}

usec_t pool_fill_eta(double slope, double pool_rate, uint64_t room, uint64_t ws, uint64_t limit) {
        if (ws >= limit)
                return 0;
        if (!(slope > 0))
                return USEC_INFINITY;
        double left = (double) (limit - ws), secs;
        /* The pool explains at most the whole rise; the rest goes on after it is full. */
        double pool = pool_rate > 0 ? MIN(pool_rate, slope) : 0.0, other = slope - pool;
        double fill_secs = pool > 0 ? (double) room / pool : 0.0;
        if (pool <= 0 || slope * fill_secs >= left)
                secs = left / slope; /* the limit comes before the pool is full */
        else if (other > 0)
                secs = fill_secs + (left - slope * fill_secs) / other;
        else
                return USEC_INFINITY;
        return trend_eta_from_secs(secs);
}
