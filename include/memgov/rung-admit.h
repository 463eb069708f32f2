/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include "memgov/clock.h"
#include "memgov/sample.h"

/* The admission rung's decision: lower max_connections to the connected clients plus the
 * headroom (or those that fit), never below the floor; or put back the value memgov found
 * (restore). src/core/rung-admit.c decides it, src/act/admit.c carries it out. */
typedef struct AdmitParams {
        bool restore;
        unsigned headroom, floor;
        unsigned fit;         /* connections more that fit (admit.fit), when more than the headroom */
        unsigned connections; /* the server's connection count in the sample (socket descriptors) */
        bool carried;         /* connections is the count before the storm, on the process before a
                               * restart (admission carried to the new process) */
} AdmitParams;

/* The buckets of admit.rise-window the connection count goes into (see AdmitState). */
#define ADMIT_CONN_BUCKETS 16

/* What the admission rung keeps between ticks (src/core/rung-admit.c). */
typedef struct AdmitState {
        bool lowered;       /* max_connections lowered by memgov and not put back yet */
        bool restoring;     /* the last admission decision puts max_connections back */
        unsigned before;    /* the connections the last lowering saw before the storm (the fewest) */
        bool carry;         /* admission was in place when the server process went: lower the new one's */
        bool tried;         /* a lowering was decided on this process, through or not, and no calm since */
        bool carried;       /* the last admission decided is that lowering... */
        unsigned carry_failed; /* ...which failed this many times on this process */
        /* The server's connection count, the fewest in each of the buckets of admit.rise-window
         * (a ring, oldest first from conn_head): what a storm rose from. */
        unsigned conn_min[ADMIT_CONN_BUCKETS + 1];
        unsigned conn_max[ADMIT_CONN_BUCKETS + 1]; /* and the most */
        uint64_t conn_ws[ADMIT_CONN_BUCKETS + 1]; /* the working set when that fewest was first seen */
        usec_t conn_t[ADMIT_CONN_BUCKETS + 1];
        /* Of the stretches of one count that ended in the bucket (see admit_segment()): the
         * least rate the working set rose at while the count stood still (bytes a second;
         * has_still: one was long enough to tell), of stretches that began with a rise [1] or
         * not [0]; what it rose by as the count rose, over how long, and from when (0: no rise). */
        bool has_still[2][ADMIT_CONN_BUCKETS + 1];
        double still_rate[2][ADMIT_CONN_BUCKETS + 1];
        int64_t rise_up[ADMIT_CONN_BUCKETS + 1];
        usec_t rise_t[ADMIT_CONN_BUCKETS + 1], rise_from[ADMIT_CONN_BUCKETS + 1];
        /* The stretch of the count under way: the count, its start, what the working set grew
         * by since (its falls larger than trend.drop left out: a trim, a reset), and that sum and
         * the time at its last SAMPLE_CONNECTIONS_EVERY samples (a ring, seg_n of them, the newest
         * at seg_head; seg_samples in all). */
        bool seg_open, seg_after_rise;
        unsigned seg_conns, seg_samples;
        int64_t seg_up;
        uint64_t seg_last_ws;
        usec_t seg_t0;
        int64_t seg_cum[SAMPLE_CONNECTIONS_EVERY];
        usec_t seg_t[SAMPLE_CONNECTIONS_EVERY];
        unsigned seg_n, seg_head;
        unsigned conn_n, conn_head;
        /* The buffer pool's first fill on process pool_pid, as its readings rose (see
         * admit_sessions_ws()): pool_filled in all, pool_last the last reading's pages in use. */
        pid_t pool_pid;
        uint64_t pool_filled, pool_last;
} AdmitState;
