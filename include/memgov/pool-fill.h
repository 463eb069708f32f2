/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/macro.h"

/* The InnoDB buffer pool filling: growth that ends at the pool's size.
 *
 * After a start (memgov's own restart among them), the pool's pages are touched as the data set
 * is read, and the working set climbs as fast as the reads go: seen 8-21 G/h, an "OOM" under
 * two minutes away at half the budget. The shell reads the pool's pages in use now and then;
 * each reading is kept with the working set at its time. Between two readings, the pool's rise
 * over the working set's is the share of the trend that is the pool filling; the ETA counts
 * that share only until the pool's free pages are used up, and the rest of the slope as it is.
 *
 * Only the first fill of a process, while its pages in use only rise: once they fall (the LRU
 * evicts to keep its free pages, a shrink gives frames back), the frames freed stay resident and
 * filling them again costs no memory. Pages in use then say nothing of the working set (seen:
 * after two pool steps down, the pool's refill taken for all of a rise that was anonymous memory,
 * and no ETA at 95% of the budget). A share of the pool does not say it: InnoDB keeps
 * innodb_lru_scan_depth pages free, 24M of 16K pages, a fifth of a 128M pool and 0.04% of 64G. */

#define POOL_FILL_READINGS 32
/* A share needs two readings at least this far apart; a last reading older than STALE says
 * nothing of now (the shell reads every 2 s while the pool fills, every 10 s otherwise). */
#define POOL_FILL_MIN_SPAN (5 * USEC_PER_SEC)
#define POOL_FILL_STALE (60 * USEC_PER_SEC)
/* A fall counts past a 64th of the pool: a few pages freed by purge are no eviction; a full 317M
 * pool's LRU gave back 10M at a time (in use 304M -> 294M, every 10-12 s). */
#define POOL_FILL_FALL_DIVISOR 64

typedef struct PoolFillReading {
        usec_t t;
        uint64_t in_use; /* the pool's pages in use, bytes */
        uint64_t room;   /* its free pages, bytes: what the pool may still fill */
        uint64_t ws;     /* the working set at t */
} PoolFillReading;

typedef struct PoolFill {
        pid_t pid;
        PoolFillReading r[POOL_FILL_READINGS]; /* oldest first in ring order */
        unsigned head, n;
        bool in_use_fell; /* its pages in use fell once: no share for pid from then on */
} PoolFill;

/* A reading of the pool of process pid: readings of another process are forgotten; one that
 * repeats the last (the same time) or goes back in time is ignored; one with fewer pages in use
 * than the last ends the shares for pid. */
void pool_fill_add(PoolFill *f, pid_t pid, const PoolFillReading *r);

/* Of the working set's rise since `since` (from the reading at or before it to the last), the
 * share that is the pool filling (0..1), and the last reading. False when the pool does not
 * fill there: readings too few, too close or stale at `now`, a working set that did not rise,
 * a pool that did not grow or has no room left, or one whose pages in use fell once. */
bool pool_fill_share(const PoolFill *f, pid_t pid, usec_t since, usec_t now, double *ret_share,
                     const PoolFillReading **ret_last);

/* Time until ws reaches limit when the working set rises at slope (bytes per second), of which
 * pool_rate is the pool filling and ends after room bytes: USEC_INFINITY when it never does. */
usec_t pool_fill_eta(double slope, double pool_rate, uint64_t room, uint64_t ws, uint64_t limit);
