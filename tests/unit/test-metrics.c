/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <math.h>

#include "memgov/metrics.h"

#define MB (1ULL << 20)

static void test_escape(void **state) {
        char buf[64];
        metrics_escape_label("a\"b\\c\nd", buf, sizeof(buf));
        /* The newline is a control: \x0a, its backslash escaped for the format. */
        assert_string_equal(buf, "a\\\"b\\\\c\\\\x0ad");
        /* Each class of control: ESC (C0), DEL, CSI as UTF-8 (C1), a byte that is not UTF-8. */
        metrics_escape_label("x\x1b[1m\x7f\xc2\x9b\x9b\xc3\xa9", buf, sizeof(buf));
        assert_string_equal(buf, "x\\\\x1b[1m\\\\x7f\\\\xc2\\\\x9b\\\\x9b\xc3\xa9");
        /* Truncated on a whole character, never half an escape. */
        char tiny[4];
        metrics_escape_label("ab\"", tiny, sizeof(tiny));
        assert_string_equal(tiny, "ab");
}

static void test_histogram_buckets(void **state) {
        MetricsCounters c = {};
        metrics_count_action(&c, ACTION_TRIM, METRICS_RESULT_DONE, 10 * MB, 40);    /* <= 50us */
        metrics_count_action(&c, ACTION_TRIM, METRICS_RESULT_DONE, 5 * MB, 50);     /* <= 50us, on the bound */
        metrics_count_action(&c, ACTION_TRIM, METRICS_RESULT_DONE, 0, 90);          /* <= 100us */
        metrics_count_action(&c, ACTION_TRIM, METRICS_RESULT_FAILED, 7 * MB, 999999); /* above all */
        metrics_count_action(&c, ACTION_RESET, METRICS_RESULT_DRY_RUN, 3 * MB, 0);
        assert_int_equal(c.stop_buckets[0], 2);
        assert_int_equal(c.stop_buckets[1], 1);
        assert_int_equal(c.stop_buckets[METRICS_STOP_BUCKETS], 1);
        assert_int_equal(c.stop_count, 4);
        assert_int_equal(c.stop_sum, 40 + 50 + 90 + 999999);
        /* Only what done actions freed counts as reclaimed. */
        assert_int_equal(c.reclaimed[ACTION_TRIM], 15 * MB);
        assert_int_equal(c.reclaimed[ACTION_RESET], 0);
        assert_int_equal(c.actions[ACTION_TRIM][METRICS_RESULT_FAILED], 1);
        assert_int_equal(c.actions[ACTION_RESET][METRICS_RESULT_DRY_RUN], 1);

        char buf[16384];
        MetricsView v = { .instance = "db", .version = "1", .counters = &c };
        assert_true(metrics_render(&v, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "memgov_injection_stop_seconds_bucket{target=\"db\",le=\"5e-05\"} 2\n"));
        assert_non_null(strstr(buf, "memgov_injection_stop_seconds_bucket{target=\"db\",le=\"0.0001\"} 3\n"));
        assert_non_null(strstr(buf, "memgov_injection_stop_seconds_bucket{target=\"db\",le=\"0.25\"} 3\n"));
        assert_non_null(strstr(buf, "memgov_injection_stop_seconds_bucket{target=\"db\",le=\"+Inf\"} 4\n"));
        assert_non_null(strstr(buf, "memgov_injection_stop_seconds_count{target=\"db\"} 4\n"));
        assert_non_null(strstr(buf, "memgov_reclaimed_bytes_total{target=\"db\",action=\"trim\"} 15728640\n"));
        assert_non_null(strstr(buf, "memgov_actions_total{target=\"db\",action=\"reset\",result=\"dry_run\"} 1\n"));
}

static void test_sample_values(void **state) {
        Sample s = { .has = SAMPLE_HAS_CGROUP | SAMPLE_HAS_PSI, .memory_current = 300 * MB, .memory_high = SIZE_UNLIMITED,
                     .memory_max = 512 * MB };
        s.psi.some.avg10 = 1234; /* 12.34 % */
        s.psi.some.total = 2500000;
        EngineOutput o = { .ws = 280 * MB, .budget = 512 * MB, .ws_bp = 5469, .eta = USEC_INFINITY, .level = LEVEL_TRIM };
        MetricsView v = { .instance = "x\"y", .version = "1", .sample = &s, .out = &o, .target_present = true };
        char buf[16384];

        assert_true(metrics_render(&v, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "memgov_memory_high_bytes{target=\"x\\\"y\"} +Inf\n"));
        assert_non_null(strstr(buf, "memgov_memory_max_bytes{target=\"x\\\"y\"} 536870912\n"));
        assert_non_null(strstr(buf, "memgov_eta_seconds{target=\"x\\\"y\"} +Inf\n"));
        assert_non_null(strstr(buf, "memgov_budget_used_ratio{target=\"x\\\"y\"} 0.5469\n"));
        assert_non_null(strstr(buf, "memgov_level{target=\"x\\\"y\",level=\"trim\"} 1\n"));
        assert_non_null(strstr(buf, "memgov_level{target=\"x\\\"y\",level=\"normal\"} 0\n"));
        assert_non_null(strstr(buf, "memgov_pressure_avg10_ratio{target=\"x\\\"y\",kind=\"some\"} 0.1234\n"));
        assert_non_null(strstr(buf, "memgov_pressure_stalled_seconds_total{target=\"x\\\"y\",kind=\"some\"} 2.5\n"));
        /* No full line in this sample: no full series. */
        assert_null(strstr(buf, "kind=\"full\""));
        /* Without process figures, no process series. */
        assert_null(strstr(buf, "memgov_server_rss_bytes"));

        o.eta = 90 * USEC_PER_SEC;
        assert_true(metrics_render(&v, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "memgov_eta_seconds{target=\"x\\\"y\"} 90\n"));
}

/* memgov explain's parts and findings: a series per part measured, every finding kind 0 or 1,
 * what a fix gives back where known; none of it before a measure. */
static void test_explanation(void **state) {
        Explanation e = { .total = 600 * MB, .total_source = "memory.current" };
        e.has[PART_POOL] = e.has[PART_ALLOCATOR_FREE] = true;
        e.parts[PART_POOL] = 128 * MB;
        e.parts[PART_ALLOCATOR_FREE] = 154 * MB;
        e.findings[e.n_findings++] = (Finding) { .kind = FINDING_ALLOCATOR_RETENTION, .gives_back = 150 * MB,
                                                 .gives_back_known = true };
        e.findings[e.n_findings++] = (Finding) { .kind = FINDING_STORM_RISK };
        MetricsView v = { .instance = "db", .version = "1", .explanation = &e };
        char buf[16384];

        assert_true(metrics_render(&v, buf, sizeof(buf)) > 0);
        assert_non_null(strstr(buf, "memgov_server_memory_bytes{target=\"db\",part=\"buffer_pool\"} 134217728\n"));
        assert_non_null(strstr(buf, "memgov_server_memory_bytes{target=\"db\",part=\"allocator_free\"} 161480704\n"));
        assert_null(strstr(buf, "part=\"sessions\""));
        assert_non_null(strstr(buf, "memgov_memory_finding{target=\"db\",kind=\"allocator-retention\"} 1\n"));
        assert_non_null(strstr(buf, "memgov_memory_finding{target=\"db\",kind=\"storm-risk\"} 1\n"));
        assert_non_null(strstr(buf, "memgov_memory_finding{target=\"db\",kind=\"session-growth\"} 0\n"));
        assert_non_null(strstr(buf, "memgov_memory_finding_gives_back_bytes{target=\"db\",kind=\"allocator-retention\"} "
                                    "157286400\n"));
        assert_null(strstr(buf, "memgov_memory_finding_gives_back_bytes{target=\"db\",kind=\"storm-risk\"}"));

        v.explanation = NULL;
        assert_true(metrics_render(&v, buf, sizeof(buf)) > 0);
        assert_null(strstr(buf, "memgov_server_memory_bytes"));
}

static void test_too_small(void **state) {
        MetricsCounters c = {};
        MetricsView v = { .instance = "db", .version = "1", .counters = &c };
        char buf[512];
        assert_int_equal(metrics_render(&v, buf, sizeof(buf)), -ENOBUFS);
        assert_true(strlen(buf) < sizeof(buf));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_histogram_buckets),
                cmocka_unit_test(test_sample_values),
                cmocka_unit_test(test_explanation),
                cmocka_unit_test(test_too_small),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
