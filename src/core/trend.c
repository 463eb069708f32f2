/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>
#include <string.h>

#include "memgov/trend.h"

void trend_init(Trend *t, usec_t window, unsigned points, unsigned min_points) {
        memset(t, 0, offsetof(Trend, scratch));
        t->window = window;
        t->points = CLAMP(points, 2u, (unsigned) TREND_MAX_POINTS);
        t->min_points = CLAMP(min_points, 2u, t->points);
        t->bucket_len = MAX(window / t->points, (usec_t) 1);
        t->stride = 1;
}

void trend_reset(Trend *t) {
        bool confirm = t->confirm;
        trend_init(t, t->window, t->points, t->min_points);
        t->confirm = confirm;
}

/* k-th smallest of a[0..n-1] (a is reordered): Wirth's selection. */
static double select_double(double *a, size_t n, size_t k) {
        long l = 0, m = (long) n - 1, kk = (long) k;

        while (l < m) {
                double x = a[kk];
                long i = l, j = m;
                do {
                        while (a[i] < x)
                                i++;
                        while (x < a[j])
                                j--;
                        if (i <= j) {
                                double tmp = a[i];
                                a[i] = a[j];
                                a[j] = tmp;
                                i++;
                                j--;
                        }
                } while (i <= j);
                if (j < kk)
                        l = i;
                if (kk < i)
                        m = j;
        }
        return a[kk];
}

static uint64_t median_u64(uint64_t *a, unsigned n) {
        /* Buckets hold at most TREND_BUCKET_VALUES values: insertion sort is enough. */
        for (unsigned i = 1; i < n; i++) {
                uint64_t x = a[i];
                unsigned j = i;
                while (j > 0 && a[j - 1] > x) {
                        a[j] = a[j - 1];
                        j--;
                }
                a[j] = x;
        }
        return n % 2 ? a[n / 2] : a[n / 2 - 1] / 2 + a[n / 2] / 2 + (a[n / 2 - 1] % 2 + a[n / 2] % 2) / 2;
}

static const TrendPoint *point_at(const Trend *t, unsigned i) {
        return &t->ring[(t->head + i) % TREND_MAX_POINTS];
}

/* Theil-Sen over the pairs the filter accepts: the median of their slopes, bytes per second. */
static bool median_slope(Trend *t, const TrendPoint *const *pts, unsigned n, bool same_segment, double *ret) {
        size_t n_pairs = 0;

        for (unsigned i = 0; i < n; i++)
                for (unsigned j = i + 1; j < n; j++) {
                        const TrendPoint *a = pts[i], *b = pts[j];
                        if ((same_segment && b->segment != a->segment) || b->t <= a->t)
                                continue;
                        t->scratch[n_pairs++] = ((double) b->v - (double) a->v) /
                                                ((double) (b->t - a->t) / (double) USEC_PER_SEC);
                }
        if (n_pairs == 0)
                return false;
        /* For an even count, the mean of the two middle slopes. */
        double m = select_double(t->scratch, n_pairs, n_pairs / 2);
        if (n_pairs % 2 == 0)
                m = (m + select_double(t->scratch, n_pairs, n_pairs / 2 - 1)) / 2.0;
        *ret = m;
        return true;
}

static void estimate(Trend *t) {
        const TrendPoint *newest = point_at(t, t->count - 1);
        const TrendPoint *pts[TREND_MAX_POINTS], *peaks[TREND_MAX_POINTS];
        unsigned first = 0, n = 0, n_peaks = 0;

        /* Points older than the window no longer count (gaps leave old points in the ring), except
         * that samples further apart than the window allows for (an RSS log every 10 minutes
         * against a 30-minute window) keep the last min_points, within TREND_STRETCH windows: the
         * window adapts to the spacing instead of never holding enough points. */
        while (first < t->count && newest->t - point_at(t, first)->t > t->window &&
               (t->count - first > t->min_points ||
                newest->t - point_at(t, first)->t > t->window * TREND_STRETCH))
                first++;
        t->span = newest->t - point_at(t, first < t->count ? first : t->count - 1)->t;
        t->stretched = t->span > t->window;
        for (unsigned i = first; i < t->count; i++)
                pts[n++] = point_at(t, i);
        t->used = n;
        t->valid = false;
        if (n < t->min_points)
                return;

        /* The growth rate between drops. */
        if (!median_slope(t, pts, n, true, &t->growth))
                return;
        t->slope = t->growth;
        t->valid = true;

        /* With drops in the window (trims that work, resets), what decides an OOM is whether the
         * peaks still climb: the slope of each segment's highest point. Segments memgov's own
         * actions cut are one group: two actions close together make two peaks, the second
         * lower, and the trend would read "falling" while the server still rises.
         * Seen apart: "falling" for 45 s while the server rose 185M at 4M/s (trim, reset 6 s apart). */
        for (unsigned i = 0; i < n; i++) {
                if (n_peaks > 0 && peaks[n_peaks - 1]->group == pts[i]->group) {
                        if (pts[i]->v >= peaks[n_peaks - 1]->v)
                                peaks[n_peaks - 1] = pts[i];
                } else
                        peaks[n_peaks++] = pts[i];
        }
        t->segments = n_peaks;
        /* The segment still growing has not reached its peak: it counts only once it is above
         * the last finished one (the envelope is climbing already). Until two peaks are known,
         * the growth rate stands: after one drop, nothing says the next will come. */
        if (n_peaks >= 2 && peaks[n_peaks - 1]->v < peaks[n_peaks - 2]->v)
                n_peaks--;
        if (n_peaks >= 2)
                (void) median_slope(t, peaks, n_peaks, false, &t->slope);

        /* A short window sees a step (a buffer pool allocated at once) as a steep rise for as long
         * as the step is in it. A rise goes on from point to point; a step is one pair of
         * neighbours: the slope is at most the median of the neighbours' slopes. */
        if (t->confirm) {
                size_t k = 0;
                for (unsigned i = 0; i + 1 < n; i++)
                        if (pts[i + 1]->segment == pts[i]->segment && pts[i + 1]->t > pts[i]->t)
                                t->scratch[k++] = ((double) pts[i + 1]->v - (double) pts[i]->v) /
                                                  ((double) (pts[i + 1]->t - pts[i]->t) / (double) USEC_PER_SEC);
                if (k > 0) {
                        double m = select_double(t->scratch, k, k / 2);
                        if (k % 2 == 0)
                                m = (m + select_double(t->scratch, k, k / 2 - 1)) / 2.0;
                        if (m < t->slope)
                                t->slope = m;
                }
        }
}

static void finish_bucket(Trend *t, uint64_t drop) {
        if (t->cur_n == 0)
                return;

        TrendPoint p = {
                .t = t->cur_t[t->cur_n / 2],
                .v = median_u64(t->cur_v, t->cur_n),
        };
        if (t->count > 0) {
                const TrendPoint *prev = point_at(t, t->count - 1);
                if (prev->v > p.v && prev->v - p.v > drop) {
                        t->segment++;
                        /* Its own: memgov acted between the point before the drop (or the bucket
                         * before it, the action taking a while) and the point after it. */
                        usec_t slack = MAX(t->bucket_len, TREND_OWN_SLACK);
                        if (!(t->own_at > 0 && t->own_at <= p.t && t->own_at + slack >= prev->t))
                                t->group++;
                }
        }
        p.segment = t->segment;
        p.group = t->group;

        if (t->count == t->points || t->count == TREND_MAX_POINTS) {
                t->head = (t->head + 1) % TREND_MAX_POINTS;
                t->count--;
        }
        t->ring[(t->head + t->count) % TREND_MAX_POINTS] = p;
        t->count++;

        t->cur_n = 0;
        t->stride = 1;
        t->skip = 0;
        estimate(t);
}

void trend_own_action(Trend *t, usec_t when) {
        t->own_at = when;
}

void trend_add(Trend *t, usec_t when, uint64_t value, uint64_t drop) {
        if (!t->started) {
                t->started = true;
                t->origin = t->cur_start = when;
        }
        if (when < t->cur_start)
                return; /* time went backwards: ignore rather than corrupt the buckets */

        if (when - t->cur_start >= t->bucket_len) {
                finish_bucket(t, drop);
                t->cur_start = t->origin + (when - t->origin) / t->bucket_len * t->bucket_len;
        }

        /* Keep at most TREND_BUCKET_VALUES values: when full, keep every other one and from then
         * on store one value in `stride`. The median of the kept values stays representative. */
        if (t->skip > 0) {
                t->skip--;
                return;
        }
        if (t->cur_n == TREND_BUCKET_VALUES) {
                for (unsigned i = 0; i < TREND_BUCKET_VALUES / 2; i++) {
                        t->cur_t[i] = t->cur_t[2 * i];
                        t->cur_v[i] = t->cur_v[2 * i];
                }
                t->cur_n = TREND_BUCKET_VALUES / 2;
                t->stride *= 2;
        }
        t->cur_t[t->cur_n] = when;
        t->cur_v[t->cur_n] = value;
        t->cur_n++;
        t->skip = t->stride - 1;
}

usec_t trend_eta(const Trend *t, uint64_t value, uint64_t limit) {
        if (value >= limit)
                return 0;
        if (!t->valid || !(t->slope > 0))
                return USEC_INFINITY;
        return trend_eta_from_secs((double) (limit - value) / t->slope);
}

usec_t trend_eta_from_secs(double secs) {
        if (!isfinite(secs) || secs > 365.0 * 86400.0)
                return USEC_INFINITY;
        return (usec_t) (secs * (double) USEC_PER_SEC);
}

usec_t trend_window_needed(const Trend *t) {
        if (t->valid || t->count < 2)
                return 0;
        const TrendPoint *oldest = point_at(t, 0), *newest = point_at(t, t->count - 1);
        usec_t spacing = (newest->t - oldest->t) / (t->count - 1);
        usec_t needed = spacing * (t->min_points - 1);
        /* Too few points only for the want of time: not the spacing's fault. */
        return needed > t->window * TREND_STRETCH ? needed : 0;
}
