/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <math.h>

#include "memgov/pool-fill.h"
#include "memgov/trend.h"

#define MB (1ULL << 20)
#define GB (1ULL << 30)

/* A deterministic pseudo-random sequence (xorshift), so the tests never depend on the libc. */
static uint64_t rng_state = 88172645463325252ULL;
static double noise(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return (double) (rng_state % 2000001) / 1000000.0 - 1.0; /* [-1, 1] */
}

static Trend *new_trend(usec_t window, unsigned points, unsigned min_points) {
        Trend *t = malloc(sizeof(Trend));
        assert_non_null(t);
        trend_init(t, window, points, min_points);
        return t;
}

static double per_hour(const Trend *t) {
        return t->slope * 3600.0;
}

static void test_not_valid_until_enough_points(void **state) {
        Trend *t = new_trend(30 * USEC_PER_MINUTE, 30, 6);
        /* One point per minute; the sixth completes only when the seventh bucket starts. */
        for (unsigned i = 0; i <= 6 * 60; i++) {
                trend_add(t, i * USEC_PER_SEC, 8 * GB + i * MB, 2 * GB / 100);
                if (i < 6 * 60)
                        assert_false(trend_valid(t));
        }
        assert_true(trend_valid(t));
        assert_int_equal(trend_eta(t, 8 * GB, 8 * GB), 0);
        free(t);
}

static void test_linear(void **state) {
        Trend *t = new_trend(30 * USEC_PER_MINUTE, 30, 6);
        /* 850 MB/h, sampled every second for an hour. */
        double rate = 850.0 * MB / 3600.0;
        for (unsigned i = 0; i < 3600; i++)
                trend_add(t, i * USEC_PER_SEC, (uint64_t) (9 * GB + rate * i), 60 * GB / 50);
        assert_true(trend_valid(t));
        assert_true(fabs(per_hour(t) - 850.0 * MB) < 0.5 * MB);
        /* From 31.4G to 60G at 850M/h is about 34h27m. */
        usec_t eta = trend_eta(t, (uint64_t) (31.4 * GB), 60 * GB);
        assert_true(eta > 34 * USEC_PER_HOUR && eta < 35 * USEC_PER_HOUR);
        free(t);
}

static void test_noise_and_outliers(void **state) {
        Trend *t = new_trend(30 * USEC_PER_MINUTE, 30, 6);
        double rate = 900.0 * MB / 3600.0;
        for (unsigned i = 0; i < 3600; i++) {
                double v = 9.0 * GB + rate * i + noise() * 200.0 * MB;
                /* One sample in 50 is a wild spike of +/- 8G. */
                if (i % 50 == 7)
                        v += (i % 100 == 7 ? 8.0 : -8.0) * GB;
                trend_add(t, i * USEC_PER_SEC, (uint64_t) v, 60 * GB / 50);
        }
        assert_true(trend_valid(t));
        /* Within 5 % of the truth despite noise of +/-200M and spikes of 8G. */
        if (fabs(per_hour(t) - 900.0 * MB) > 45.0 * MB)
                fail_msg("slope %.0f M/h, expected 900", per_hour(t) / MB);
        free(t);
}

static void test_sawtooth_of_trims(void **state) {
        Trend *t = new_trend(30 * USEC_PER_MINUTE, 30, 6);
        /* Grows 2G/h and a trim gives back 250M every 10 minutes: the peaks climb 0.5G/h. A fit
         * through every point would be fooled by the teeth, a fit through the drops too. */
        double rate = 2.0 * GB / 3600.0;
        double offset = 0;
        for (unsigned i = 0; i < 3600; i++) {
                if (i > 0 && i % 600 == 0)
                        offset -= 0.25 * GB;
                trend_add(t, i * USEC_PER_SEC, (uint64_t) (20.0 * GB + rate * i + offset), 100 * MB);
        }
        assert_true(trend_valid(t));
        if (fabs(per_hour(t) - 0.5 * GB) > 0.15 * GB)
                fail_msg("slope %.2f G/h, expected 0.5", per_hour(t) / GB);
        if (fabs(t->growth * 3600.0 - 2.0 * GB) > 0.1 * GB)
                fail_msg("growth %.2f G/h, expected 2", t->growth * 3600.0 / GB);
        assert_true(t->segments >= 3);
        free(t);

        /* Trims that give back all that accumulated: the sawtooth is flat, no OOM is coming. */
        t = new_trend(30 * USEC_PER_MINUTE, 30, 6);
        for (unsigned i = 0; i < 3600; i++)
                trend_add(t, i * USEC_PER_SEC, (uint64_t) (20.0 * GB + rate * (i % 600)), 100 * MB);
        assert_true(trend_valid(t));
        if (fabs(per_hour(t)) > 0.1 * GB)
                fail_msg("slope %.2f G/h, expected 0", per_hour(t) / GB);
        assert_true(trend_eta(t, 20 * GB, 60 * GB) > 100 * USEC_PER_HOUR);
        free(t);
}

/* The outcome benchmark's linear growth, as the last minute's trend saw it: 4M/s, a trim (55M back)
 * and an emergency reset 6 s later (44M back), both memgov's, then the rise again. Its own drops
 * make no peaks: the growth rate stands, and the ETA with it. The same drops made by someone else
 * (the server, a cron trim) are the envelope's: two peaks, the second lower, read as falling. */
static Trend *cut_twice(bool own) {
        Trend *t = new_trend(USEC_PER_MINUTE, 30, 6);
        t->confirm = true;
        double v = 180.0 * MB;
        for (unsigned i = 0; i <= 45 * 4; i++) { /* four samples a second */
                usec_t now = i * USEC_PER_SEC / 4;
                if (i == 20 * 4 || i == 26 * 4) {
                        if (own)
                                trend_own_action(t, now);
                        v -= (i == 20 * 4 ? 55.0 : 44.0) * MB;
                }
                trend_add(t, now, (uint64_t) v, 384 * MB / 100);
                v += 1.0 * MB; /* 4M/s */
        }
        return t;
}

static void test_own_drops_make_no_peaks(void **state) {
        Trend *t = cut_twice(true);
        assert_true(trend_valid(t));
        if (fabs(t->slope - 4.0 * MB) > 1.0 * MB)
                fail_msg("slope %.1f M/s after memgov's own drops, expected 4", t->slope / MB);
        usec_t eta = trend_eta(t, 261 * MB, 384 * MB);
        assert_true(eta > 20 * USEC_PER_SEC && eta < 45 * USEC_PER_SEC);
        free(t);

        t = cut_twice(false);
        assert_true(trend_valid(t));
        if (t->slope > 0)
                fail_msg("slope %.1f M/s after drops of the server's own, expected the envelope's fall", t->slope / MB);
        free(t);
}

static void test_flat_and_falling(void **state) {
        Trend *t = new_trend(10 * USEC_PER_MINUTE, 20, 5);
        for (unsigned i = 0; i < 1200; i++)
                trend_add(t, i * USEC_PER_SEC, 30 * GB + (uint64_t) ((noise() + 1) * MB), GB);
        assert_true(trend_valid(t));
        assert_true(fabs(per_hour(t)) < 50.0 * MB);
        free(t);

        t = new_trend(10 * USEC_PER_MINUTE, 20, 5);
        /* Falling slowly (no step, so no new segment): a negative slope, no ETA. */
        for (unsigned i = 0; i < 1200; i++)
                trend_add(t, i * USEC_PER_SEC, 30 * GB - i * 100 * 1024, GB);
        assert_true(trend_valid(t));
        assert_true(t->slope < 0);
        assert_int_equal(trend_eta(t, 29 * GB, 60 * GB), USEC_INFINITY);
        free(t);
}

static void test_gaps_and_window(void **state) {
        Trend *t = new_trend(30 * USEC_PER_MINUTE, 30, 6);
        /* A log with one line every 5 minutes: most buckets stay empty. */
        for (unsigned i = 0; i < 24; i++)
                trend_add(t, i * 5 * USEC_PER_MINUTE, 10 * GB + i * 100 * MB, GB);
        assert_true(trend_valid(t));
        assert_true(fabs(per_hour(t) - 1200.0 * MB) < 5.0 * MB);
        /* Points older than the window do not count, even if the ring has room. */
        assert_true(t->used <= 7);

        /* After a long gap, the old points have left the window: not valid again until enough
         * new ones came. */
        trend_add(t, 10 * USEC_PER_HOUR, 10 * GB, GB);
        trend_add(t, 10 * USEC_PER_HOUR + 2 * USEC_PER_MINUTE, 10 * GB, GB);
        assert_false(trend_valid(t));
        free(t);
}

static void test_time_backwards_ignored(void **state) {
        Trend *t = new_trend(10 * USEC_PER_MINUTE, 10, 3);
        for (unsigned i = 0; i < 600; i++)
                trend_add(t, i * USEC_PER_SEC, 10 * GB + i * MB, GB);
        double before = t->slope;
        trend_add(t, 5 * USEC_PER_SEC, 1, GB);
        assert_true(t->slope == before);
        free(t);
}

static void test_dense_sampling_is_bounded(void **state) {
        Trend *t = new_trend(10 * USEC_PER_MINUTE, 10, 3);
        /* 100 samples a second for 11 minutes: every bucket decimates to at most 32 values. */
        for (unsigned i = 0; i < 66000; i++) {
                trend_add(t, i * 10 * USEC_PER_MSEC, 10 * GB + (uint64_t) i * 1024, GB);
                assert_true(t->cur_n <= TREND_BUCKET_VALUES);
        }
        assert_true(trend_valid(t));
        /* 100 KiB/s */
        assert_true(fabs(t->slope - 102400.0) < 2000.0);
        free(t);
}

/* The pool's part of a rise ends with its free pages; the rest of the rise goes on. */
static void test_pool_fill_eta(void **state) {
        const usec_t S = USEC_PER_SEC;
        /* 10M/s, 6M/s of it the pool with 60M to fill: 100M in 10 s, then 4M/s for the 900M left. */
        assert_int_equal(pool_fill_eta(10.0 * MB, 6.0 * MB, 60 * MB, 0, 1000 * MB), 235 * S);
        /* The same rise with nothing known of the pool: the plain ETA. */
        assert_int_equal(pool_fill_eta(10.0 * MB, 0, 60 * MB, 0, 1000 * MB), 100 * S);
        /* The pool alone fills past the limit: the limit comes first, at the whole slope. */
        assert_int_equal(pool_fill_eta(10.0 * MB, 10.0 * MB, 2000 * MB, 0, 1000 * MB), 100 * S);
        /* The whole rise is the pool, with room for less than the limit: no OOM. A pool rate
         * above the slope explains the whole slope, no more. */
        assert_int_equal(pool_fill_eta(10.0 * MB, 10.0 * MB, 60 * MB, 0, 1000 * MB), USEC_INFINITY);
        assert_int_equal(pool_fill_eta(10.0 * MB, 20.0 * MB, 60 * MB, 0, 1000 * MB), USEC_INFINITY);
        /* At or over the limit, and not rising. */
        assert_int_equal(pool_fill_eta(10.0 * MB, 10.0 * MB, 60 * MB, 1000 * MB, 1000 * MB), 0);
        assert_int_equal(pool_fill_eta(0, 0, 60 * MB, 0, 1000 * MB), USEC_INFINITY);
}

/* The pool's share of the working set's rise, from readings at the same instants. */
static void test_pool_fill_share(void **state) {
        const usec_t S = USEC_PER_SEC;
        PoolFill f = {};
        const PoolFillReading *last;
        double share;

        /* Readings every 10 s: the working set +300M, the pool +200M of it. */
        for (unsigned i = 0; i <= 6; i++)
                pool_fill_add(&f, 100, &(PoolFillReading) { .t = (100 + 10 * i) * S, .in_use = (10 + 40 * i) * MB,
                                                             .room = (500 - 40 * i) * MB, .ws = (1000 + 50 * i) * MB });
        assert_true(pool_fill_share(&f, 100, 100 * S, 161 * S, &share, &last));
        assert_true(fabs(share - 0.8) < 1e-9 && last->t == 160 * S && last->room == 260 * MB);
        /* From the reading at or before `since`: 130 s to 160 s, the same share. */
        assert_true(pool_fill_share(&f, 100, 135 * S, 161 * S, &share, &last));
        assert_true(fabs(share - 0.8) < 1e-9);
        /* Another process, stale readings, too short a span: nothing. */
        assert_false(pool_fill_share(&f, 101, 100 * S, 161 * S, &share, &last));
        assert_false(pool_fill_share(&f, 100, 100 * S, 221 * S, &share, &last));
        assert_false(pool_fill_share(&f, 100, 160 * S, 161 * S, &share, &last));
        /* A repeated or older reading is ignored. */
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 160 * S, .in_use = 0, .room = 0, .ws = 0 });
        assert_true(pool_fill_share(&f, 100, 100 * S, 161 * S, &share, &last) && last->in_use == 250 * MB);
        /* A pool that grew more than the working set explains all of it. */
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 170 * S, .in_use = 400 * MB, .room = 110 * MB, .ws = 1400 * MB });
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 180 * S, .in_use = 500 * MB, .room = 100 * MB, .ws = 1410 * MB });
        assert_true(pool_fill_share(&f, 100, 175 * S, 181 * S, &share, &last) && share == 1.0);
        /* A working set that fell: nothing to share. */
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 190 * S, .in_use = 510 * MB, .room = 90 * MB, .ws = 1300 * MB });
        assert_false(pool_fill_share(&f, 100, 185 * S, 191 * S, &share, &last));
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 200 * S, .in_use = 520 * MB, .room = 80 * MB, .ws = 1310 * MB });
        assert_true(pool_fill_share(&f, 100, 195 * S, 201 * S, &share, &last) && share == 1.0);
        /* Pages in use that fell (evicted, or a shrink): no share from then on for the process,
         * though pages come free again and fill (resident already, they cost nothing). */
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 205 * S, .in_use = 515 * MB, .room = 85 * MB, .ws = 1315 * MB });
        assert_false(f.in_use_fell); /* 5M of a 600M pool: under a 64th, no eviction */
        assert_true(pool_fill_share(&f, 100, 195 * S, 206 * S, &share, &last));
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 210 * S, .in_use = 505 * MB, .room = 95 * MB, .ws = 1320 * MB });
        assert_true(f.in_use_fell);
        assert_false(pool_fill_share(&f, 100, 195 * S, 211 * S, &share, &last));
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 220 * S, .in_use = 400 * MB, .room = 200 * MB, .ws = 1330 * MB });
        pool_fill_add(&f, 100, &(PoolFillReading) { .t = 230 * S, .in_use = 500 * MB, .room = 100 * MB, .ws = 1400 * MB });
        assert_false(pool_fill_share(&f, 100, 220 * S, 231 * S, &share, &last));
        /* A new process forgets the old one's, the fall too. */
        pool_fill_add(&f, 200, &(PoolFillReading) { .t = 300 * S, .in_use = 10 * MB, .room = 500 * MB, .ws = 100 * MB });
        assert_int_equal(f.n, 1);
        assert_false(f.in_use_fell);
        pool_fill_add(&f, 200, &(PoolFillReading) { .t = 310 * S, .in_use = 60 * MB, .room = 450 * MB, .ws = 160 * MB });
        assert_true(pool_fill_share(&f, 200, 300 * S, 311 * S, &share, &last));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_not_valid_until_enough_points),
                cmocka_unit_test(test_linear),
                cmocka_unit_test(test_noise_and_outliers),
                cmocka_unit_test(test_sawtooth_of_trims),
                cmocka_unit_test(test_own_drops_make_no_peaks),
                cmocka_unit_test(test_flat_and_falling),
                cmocka_unit_test(test_gaps_and_window),
                cmocka_unit_test(test_time_backwards_ignored),
                cmocka_unit_test(test_dense_sampling_is_bounded),
                cmocka_unit_test(test_pool_fill_eta),
                cmocka_unit_test(test_pool_fill_share),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
