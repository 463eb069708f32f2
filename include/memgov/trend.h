/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Robust slope of the working set over a sliding window.
 *
 * Samples are gathered into fixed-length buckets (window / points); each finished bucket
 * becomes one point, its median value at its median time, so single outliers vanish. The
 * slope is the median of the pairwise slopes between points (Theil-Sen). A fall between two
 * consecutive points larger than the drop threshold (a trim, a connection reset, a restart)
 * starts a new segment. Within segments, the pairs give the growth rate between drops; across
 * segments, the slope of each segment's peak gives the net trend: trims that give back what
 * accumulated make a flat sawtooth (no OOM coming), trims that give back part of it a rising
 * one. Neither a drop nor the steep teeth are taken for the trend itself. A drop that follows an
 * action of memgov's own that gives memory back (trend_own_action) ends a segment for the growth
 * rate but makes no peak of the envelope: where memgov acted says nothing of where the server
 * would have turned, and its next action comes only when the ladder calls for it again.
 *
 * Samples sparser than the window allows for stretch it: the last min_points points count, up to
 * TREND_STRETCH windows back. */

#define TREND_MAX_POINTS 64
/* Sparse samples stretch the window up to this many times its length (see estimate()). */
#define TREND_STRETCH 8
#define TREND_BUCKET_VALUES 32
/* A drop is memgov's own when its action came at most this long (or one bucket) before the point
 * ahead of the drop: an actuator takes a few seconds (a reset lists, kills, then trims). */
#define TREND_OWN_SLACK (10 * USEC_PER_SEC)

typedef struct TrendPoint {
        usec_t t;
        uint64_t v;
        unsigned segment; /* between drops: the growth rate's pairs */
        unsigned group;   /* between drops memgov did not make: the envelope's peaks */
} TrendPoint;

typedef struct Trend {
        usec_t window, bucket_len;
        unsigned points, min_points;
        bool confirm; /* the slope is at most the neighbours' median (a short window: see estimate()) */

        /* finished buckets, oldest first in ring order */
        TrendPoint ring[TREND_MAX_POINTS];
        unsigned head, count;
        unsigned segment, group;
        usec_t own_at; /* memgov's latest action that gives memory back (0: none) */

        /* the bucket being filled */
        bool started;
        usec_t origin, cur_start;
        usec_t cur_t[TREND_BUCKET_VALUES];
        uint64_t cur_v[TREND_BUCKET_VALUES];
        unsigned cur_n, stride, skip;

        /* the estimate, refreshed when a bucket finishes */
        bool valid;
        double slope;  /* bytes per second: the net trend, what the ETA is computed from */
        double growth; /* bytes per second between drops */
        unsigned used;     /* points in the window */
        usec_t span;       /* from the oldest point used to the newest */
        bool stretched;    /* the window was stretched to hold min_points sparse samples */
        unsigned segments; /* segments in the window */

        double scratch[TREND_MAX_POINTS * (TREND_MAX_POINTS - 1) / 2];
} Trend;

void trend_init(Trend *t, usec_t window, unsigned points, unsigned min_points);
void trend_reset(Trend *t);
/* drop: a fall between consecutive points larger than this many bytes starts a new segment. */
void trend_add(Trend *t, usec_t when, uint64_t value, uint64_t drop);
/* memgov took an action at `when` (the clock of trend_add) that gives memory back: a drop seen
 * right after it is its own. */
void trend_own_action(Trend *t, usec_t when);

static inline bool trend_valid(const Trend *t) {
        return t->valid;
}

/* Time until value reaches limit at the current slope: 0 when already there, USEC_INFINITY
 * when not rising or the trend is not known. Times beyond a year count as never. */
usec_t trend_eta(const Trend *t, uint64_t value, uint64_t limit);

/* Seconds ahead as an ETA: beyond a year (or not finite) counts as never (USEC_INFINITY). */
usec_t trend_eta_from_secs(double secs);

/* When no trend is known because the samples are too far apart for the window even stretched:
 * the window that would hold min_points of them; 0 otherwise. */
usec_t trend_window_needed(const Trend *t);
