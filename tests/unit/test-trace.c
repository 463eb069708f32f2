/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include "memgov/trace.h"
#include "memgov/units.h"

#define MB (1ULL << 20)

/* Feeds lines; returns the samples read, stops at the first error (returned as -line). */
static int feed(TraceReader *r, const char *text, Sample *out, unsigned max) {
        unsigned n = 0;
        const char *p = text;
        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t) (nl - p) : strlen(p);
                Sample s;
                int k = trace_reader_line(r, p, len, &s);
                if (k < 0)
                        return -(int) r->lineno;
                if (k > 0 && n < max)
                        out[n++] = s;
                p += len + (nl ? 1 : 0);
        }
        return (int) n;
}

static void test_plain_dba_log(void **state) {
        TraceReader r;
        Sample s[8];

        trace_reader_init(&r, 0, NULL);
        assert_int_equal(feed(&r, "Timestamp, RSS_MB\n2026-08-10 23:09:57, 8935\n2026-08-10 23:10:57, 8950.5\n", s, 8), 2);
        assert_int_equal(r.format, TRACE_FORMAT_PLAIN);
        assert_int_equal(s[0].has, SAMPLE_HAS_WS | SAMPLE_HAS_WALL);
        assert_int_equal(s[0].ws, 8935 * MB);
        assert_int_equal(s[1].ws, 8950 * MB + MB / 2);
        assert_int_equal(s[0].mono, 0);
        assert_int_equal(s[1].mono, 60 * USEC_PER_SEC);
        char w[FORMAT_WALL_MAX];
        assert_string_equal(format_wall(w, s[0].wall, s[0].utc_offset), "2026-08-10 23:09:57");

        /* Epoch seconds and kB, tab separated. */
        trace_reader_init(&r, 0, NULL);
        assert_int_equal(feed(&r, "epoch\trss_kb\n1786403397\t9149440\n1786403398\t9149444\n", s, 8), 2);
        assert_int_equal(s[0].ws, 9149440ULL * 1024);
        assert_int_equal(s[1].mono, USEC_PER_SEC);
        assert_true(s[0].has & SAMPLE_HAS_WALL);

        /* Milliseconds, a unit in parentheses, semicolons, comments and blank lines. */
        trace_reader_init(&r, 0, NULL);
        assert_int_equal(feed(&r, "# exported\ntime;RSS (GiB)\n\n1786403397000;8.5\n1786403397500;8.75\n", s, 8), 2);
        assert_int_equal(s[0].ws, 8ULL * 1024 * MB + 512 * MB);
        assert_int_equal(s[1].mono, 500 * USEC_PER_MSEC);

        /* White space separated, with a date and a time: one timestamp. */
        trace_reader_init(&r, 0, NULL);
        assert_int_equal(feed(&r, "date time rss_mb\n2026-08-10 23:09:57 100\n2026-08-10 23:09:58 101\n", s, 8), 2);
        assert_int_equal(s[1].ws, 101 * MB);

        /* ISO 8601 with an offset: the instant is UTC, the offset kept for local time. */
        trace_reader_init(&r, 0, NULL);
        assert_int_equal(feed(&r, "ts,mem_bytes\n2026-08-11T01:09:57+02:00,1000\n2026-08-10T23:09:58Z,1001\n", s, 8), 2);
        assert_int_equal(s[0].utc_offset, 7200);
        assert_int_equal(s[1].mono, USEC_PER_SEC);
        assert_string_equal(format_wall(w, s[0].wall, 0), "2026-08-10 23:09:57");

        /* Seconds from the start: no wall clock. */
        trace_reader_init(&r, 0, NULL);
        assert_int_equal(feed(&r, "t,rss_mb\n0,10\n1.5,11\n", s, 8), 2);
        assert_false(s[0].has & SAMPLE_HAS_WALL);
        assert_int_equal(s[1].mono, 1500 * USEC_PER_MSEC);

        /* No header: the unit must be given. */
        trace_reader_init(&r, MB, NULL);
        assert_int_equal(feed(&r, "1786403397,10\n1786403398,11\n", s, 8), 2);
        assert_int_equal(s[1].ws, 11 * MB);

        /* Several memory columns: one chosen by name. */
        trace_reader_init(&r, 0, "rss_mb");
        assert_int_equal(feed(&r, "ts,vsz_mb,rss_mb\n1786403397,900,10\n", s, 8), 1);
        assert_int_equal(s[0].ws, 10 * MB);
}

static void expect_error(const char *text, uint64_t unit, const char *column, int line, const char *msg) {
        TraceReader r;
        Sample s[4];
        trace_reader_init(&r, unit, column);
        int k = feed(&r, text, s, 4);
        if (k != -line)
                fail_msg("expected an error on line %d, got %d for <<%s>>", line, k, text);
        assert_string_equal(r.error, msg);
}

static void test_plain_errors(void **state) {
        expect_error("Timestamp, RSS\n2026-08-10 23:09:57, 8935\n", 0, NULL, 1,
                     "cannot tell the unit of column 'RSS' (expected a unit in its name such as RSS_MB, rss_kb or 'RSS (GiB)', or --unit)");
        expect_error("1786403397,10\n", 0, NULL, 1,
                     "no header line to take the unit from (expected a header like 'Timestamp, RSS_MB', or --unit)");
        expect_error("ts,vsz_mb,rss_mb\n1,2,3\n", 0, NULL, 1, "2 memory columns (vsz_mb, rss_mb): choose one with --column");
        expect_error("ts,rss_mb\n1786403398,10\n1786403397,10\n", 0, NULL, 3, "time goes backwards");
        expect_error("ts,rss_mb\nyesterday,10\n", 0, NULL, 2,
                     "'yesterday' is not a timestamp (expected 2026-08-10 23:09:57, an ISO 8601 time, or epoch seconds)");
        expect_error("ts,rss_mb\n1786403397,ten\n", 0, NULL, 2, "'ten' is not a memory figure (expected a number)");
        /* A trace may come from anyone: its bytes quoted in an error never reach the terminal raw. */
        expect_error("ts,rss_mb\n1786403397,\033]0;pwned\007\033[2J12\n", 0, NULL, 2,
                     "'\\x1b]0;pwned\\x07\\x1b[2J12' is not a memory figure (expected a number)");
        expect_error("ts,vsz\033[2J_mb,rss_mb\n1,2,3\n", 0, NULL, 1,
                     "2 memory columns (vsz\\x1b[2J_mb, rss_mb): choose one with --column");
        expect_error("ts,rss_mb\n1786403397,10\n5,10\n", 0, NULL, 3, "timestamps mix absolute times and seconds from the start");
        expect_error("ts,rss_mb\n2026-13-10 23:09:57,10\n", 0, NULL, 2,
                     "'2026-13-10 23:09:57' is not a timestamp (expected 2026-08-10 23:09:57, an ISO 8601 time, or epoch seconds)");
        expect_error("ts,rss_mb\n1786403397\n", 0, NULL, 2, "1 fields, expected at least 2");
        expect_error("ts,rss_mb\n", 0, "nope", 1, "no column 'nope' in the header");
        expect_error("ts,rss_mb\n1786403397,99999999999999999999\n", 0, NULL, 2,
                     "'99999999999999999999' is not a memory figure (expected a number)");
}

static void test_memgov_roundtrip(void **state) {
        char header[2048], row[TRACE_LINE_MAX];
        Sample a = {
                .mono = 123456789,
                .wall = 1786403397ULL * USEC_PER_SEC,
                .utc_offset = -18000,
                .has = SAMPLE_HAS_WALL | SAMPLE_HAS_CGROUP | SAMPLE_HAS_EVENTS | SAMPLE_HAS_PSI | SAMPLE_HAS_PROCESS |
                       SAMPLE_HAS_UPTIME | SAMPLE_HAS_HOST | SAMPLE_HAS_CONNECTIONS | SAMPLE_HAS_ACCEPTING |
                       SAMPLE_HAS_SERVER_MEMORY | SAMPLE_HAS_ALLOCATOR | SAMPLE_HAS_POOL_FILL,
                .memory_current = 5ULL << 30,
                .memory_high = SIZE_UNLIMITED,
                .memory_max = 6ULL << 30,
                .anon = 4ULL << 30,
                .file = 1ULL << 30,
                .inactive_file = 300 * MB,
                .active_file = 700 * MB,
                .shmem = 4096,
                .events = { .low = 0, .high = 17, .max = 3, .oom = 1, .oom_kill = 1, .oom_group_kill = 0 },
                .psi = { .some = { 153, 87, 21, 3457912 }, .full = { 98, 51, 12, 2085530 }, .has_full = true },
                .pid = 812,
                .uptime = 3600 * USEC_PER_SEC,
                .rss = 4ULL << 30,
                .rss_anon = 3ULL << 30,
                .anon_maps = 1246,
                .threads = 39,
                .connections = 171,
                .accepting = 1,
                .host_total = 16ULL << 30,
                .failed = (1u << ACTION_TRIM) | (1u << ACTION_SET_HIGH) | (1u << ACTION_RESET),
                .not_done = 1u << ACTION_TRIM,
                .found_nothing = 1u << ACTION_RESET,
                .found_fewer = 1u << ACTION_POOL,
                .reported = 1u << ACTION_RESET,
                .freed = { [ACTION_RESET] = 300 * MB },
                .based = 1u << ACTION_POOL,
                .baseline = { [ACTION_POOL] = 2ULL << 30 },
                .server_pool = 128 * MB,
                .server_accounted = 40 * MB,
                .server_sessions = 292 * MB,
                .allocator_free = 154 * MB,
                .allocator_in_use = 250 * MB,
                .pool_in_use = 96 * MB,
                .pool_room = 32 * MB,
                .pool_read = 123000000,
        };
        assert_true(trace_format_header(header, sizeof(header)) > 0);
        int n = trace_format_row(&a, row, sizeof(row));
        assert_true(n > 0);
        assert_string_contains(row, ",max,");
        assert_string_contains(row, "trim+memory.high+reset");

        TraceReader r;
        Sample b;
        trace_reader_init(&r, 0, NULL);
        assert_int_equal(trace_reader_line(&r, "# memgov trace", 14, &b), 0);
        assert_int_equal(trace_reader_line(&r, header, strlen(header), &b), 0);
        assert_int_equal(r.format, TRACE_FORMAT_MEMGOV);
        assert_int_equal(trace_reader_line(&r, row, (size_t) n, &b), 1);
        assert_memory_equal(&a, &b, sizeof(Sample));

        /* The freed columns come from the registry, after memgov's own: an older trace had them
         * between failed and pending, and reads the same (the reader goes by name). */
        assert_string_contains(header, ",limits_readonly,connections,accepting,not_done,");
        assert_string_contains(header, ",pool_read_us,found_nothing,found_fewer,trim_freed,reset_freed");
        assert_string_contains(row, ",171,");
        /* memgov explain's figures of the server, as the daemon last measured them. */
        assert_string_contains(header, ",server_pool,server_accounted,server_sessions,allocator_free,allocator_in_use,");
        assert_string_contains(row, ",134217728,41943040,306184192,161480704,262144000,");
        /* The buffer pool's fill as last read, for the ETA (pool-fill.h). */
        assert_string_contains(header, ",allocator_in_use,pool_in_use,pool_room,pool_read_us,");
        assert_string_contains(row, ",100663296,33554432,123000000,");
        /* A reset that failed finding no session, told from one that failed otherwise. */
        assert_string_contains(row, ",123000000,reset,");
        /* Then the baseline columns (the buffer pool's configured size, as the pool step found it). */
        assert_string_contains(header, ",pool_freed,pool_configured");
        assert_string_contains(row, ",2147483648");
        TraceReader old;
        Sample o;
        trace_reader_init(&old, 0, NULL);
        const char *old_header = "mono_us,rss,failed,trim_freed,reset_freed,pending";
        assert_int_equal(trace_reader_line(&old, old_header, strlen(old_header), &o), 0);
        assert_int_equal(trace_reader_line(&old, "7,100,,4096,,reset", strlen("7,100,,4096,,reset"), &o), 1);
        assert_int_equal(o.reported, 1u << ACTION_TRIM);
        assert_int_equal(o.freed[ACTION_TRIM], 4096);
        assert_int_equal(o.freed[ACTION_RESET], 0);
        assert_int_equal(o.pending, 1u << ACTION_RESET);
        /* A trace from before the connection count: no count, not a count of 0. */
        assert_false(o.has & SAMPLE_HAS_CONNECTIONS);
        /* Nor whether the server accepted clients: not known, not "starting". */
        assert_false(o.has & SAMPLE_HAS_ACCEPTING);
        /* Nor explain's figures. */
        assert_false(o.has & (SAMPLE_HAS_SERVER_MEMORY | SAMPLE_HAS_ALLOCATOR | SAMPLE_HAS_POOL_FILL));

        /* A sample with no cgroup, no PSI full line, nothing reported. */
        Sample c = { .mono = 123456790, .has = SAMPLE_HAS_PROCESS | SAMPLE_HAS_PSI, .rss = 100, .psi = { .some = { 1, 2, 3, 4 } } };
        n = trace_format_row(&c, row, sizeof(row));
        assert_int_equal(trace_reader_line(&r, row, (size_t) n, &b), 0 + 1);
        assert_memory_equal(&c, &b, sizeof(Sample));
}

static void test_memgov_errors(void **state) {
        char header[2048];
        assert_true(trace_format_header(header, sizeof(header)) > 0);

        expect_error("mono_us,bogus\n", 0, NULL, 1, "unknown column 'bogus' (expected memgov trace columns, see docs/trace-format.md)");
        expect_error("mono_us,rss,rss\n", 0, NULL, 1, "column 'rss' appears twice");
        expect_error("mono_us,memory_current,memory_max,inactive_file\n1,100,,5\n", 0, NULL, 2,
                     "memory_current is set but memory_max is empty (expected both or neither)");
        expect_error("mono_us,rss\n1,x\n", 0, NULL, 2, "column rss: 'x' is not valid");
        expect_error("mono_us,rss\n5,1\n4,1\n", 0, NULL, 3, "mono_us goes backwards (4 after 5)");
        expect_error("mono_us,rss\n5,1,2\n", 0, NULL, 2, "3 cells, the header has 2 columns");
        expect_error("mono_us,failed\n5,explode\n", 0, NULL, 2, "column failed: 'explode' is not valid");
        expect_error("mono_us,psi_some_avg10\n5,100.01\n", 0, NULL, 2, "column psi_some_avg10: '100.01' is not valid");

        /* A subset of columns is fine: a group whose columns are absent is just not there. */
        TraceReader r;
        Sample s;
        trace_reader_init(&r, 0, NULL);
        assert_int_equal(trace_reader_line(&r, "mono_us,ws", 10, &s), 0);
        assert_int_equal(trace_reader_line(&r, "7,4096", 6, &s), 1);
        assert_int_equal(s.has, SAMPLE_HAS_WS);
        assert_int_equal(s.ws, 4096);
}

static void test_timestamps(void **state) {
        usec_t t;
        int32_t off;

        assert_int_equal(parse_timestamp("2026-08-10 23:09:57", 19, &t, &off), 0);
        assert_int_equal(t, 1786403397ULL * USEC_PER_SEC);
        assert_int_equal(parse_timestamp("2026-08-10T23:09:57.25Z", 23, &t, &off), 0);
        assert_int_equal(t, 1786403397ULL * USEC_PER_SEC + 250000);
        assert_int_equal(parse_timestamp("2026-08-10 23:09", 16, &t, &off), 0);
        assert_int_equal(t, 1786403340ULL * USEC_PER_SEC);
        assert_int_equal(parse_timestamp("2026-08-10T18:09:57-0500", 24, &t, &off), 0);
        assert_int_equal(t, 1786403397ULL * USEC_PER_SEC);
        assert_int_equal(off, -18000);
        const char *bad[] = { "2026-08-10", "2026/08/10 23:09:57", "2026-08-10 23:09:57 ", "2026-08-10 24:00:00",
                              "1969-12-31 23:59:59", "2026-08-10 23:09:57+15:00", "2026-08-10 23:09:57." };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_timestamp(bad[i], strlen(bad[i]), &t, &off) == 0)
                        fail_msg("'%s' was accepted", bad[i]);
}

static void test_hostile_lines(void **state) {
        TraceReader r;
        Sample s;
        char big[8192];

        trace_reader_init(&r, 0, NULL);
        assert_int_equal(trace_reader_line(&r, "ts,rss_mb", 9, &s), 0);
        memset(big, ',', sizeof(big));
        assert_true(trace_reader_line(&r, big, sizeof(big), &s) < 0);
        assert_true(trace_reader_line(&r, "1786403397,1\0", 13, &s) < 0);
        assert_string_equal(r.error, "NUL byte in a text file");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain_dba_log),    cmocka_unit_test(test_plain_errors),
                cmocka_unit_test(test_memgov_roundtrip), cmocka_unit_test(test_memgov_errors),
                cmocka_unit_test(test_timestamps),       cmocka_unit_test(test_hostile_lines),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
