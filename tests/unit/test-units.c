/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include <inttypes.h>

#include "memgov/strutil.h"
#include "memgov/units.h"

static void test_parse_size(void **state) {
        uint64_t v;

        assert_int_equal(parse_size("64G", &v), 0);
        assert_int_equal(v, 64ULL << 30);
        assert_int_equal(parse_size("512M", &v), 0);
        assert_int_equal(v, 512ULL << 20);
        assert_int_equal(parse_size("1.5G", &v), 0);
        assert_int_equal(v, 3ULL << 29);
        assert_int_equal(parse_size("4096", &v), 0);
        assert_int_equal(v, 4096);
        assert_int_equal(parse_size("1KiB", &v), 0);
        assert_int_equal(v, 1024);
        assert_int_equal(parse_size("2 GB", &v), 0);
        assert_int_equal(v, 2ULL << 30);
        assert_int_equal(parse_size("  8k ", &v), 0);
        assert_int_equal(v, 8192);
        assert_int_equal(parse_size("0", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_size("16E", &v), -EINVAL); /* no exabyte unit */
        assert_int_equal(parse_size("20000000P", &v), -ERANGE);
        assert_int_equal(parse_size("99999999999999999999", &v), -ERANGE);

        const char *bad[] = { "", "G", "-1G", "1.2.3G", "1Gb2", "1 G B", "1X", "1Gi", "0x10", "1e9" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_not_equal(parse_size(bad[i], &v), 0);
}

static void test_parse_timespan(void **state) {
        usec_t t;

        assert_int_equal(parse_timespan("15s", &t), 0);
        assert_int_equal(t, 15 * USEC_PER_SEC);
        assert_int_equal(parse_timespan("500ms", &t), 0);
        assert_int_equal(t, 500 * USEC_PER_MSEC);
        assert_int_equal(parse_timespan("2h", &t), 0);
        assert_int_equal(t, 2 * USEC_PER_HOUR);
        assert_int_equal(parse_timespan("1h30m", &t), 0);
        assert_int_equal(t, 90 * USEC_PER_MINUTE);
        assert_int_equal(parse_timespan("1h 30min", &t), 0);
        assert_int_equal(t, 90 * USEC_PER_MINUTE);
        assert_int_equal(parse_timespan("1.5h", &t), 0);
        assert_int_equal(t, 90 * USEC_PER_MINUTE);
        assert_int_equal(parse_timespan("1d", &t), 0);
        assert_int_equal(t, USEC_PER_DAY);
        assert_int_equal(parse_timespan("2w", &t), 0);
        assert_int_equal(t, 2 * USEC_PER_WEEK);
        assert_int_equal(parse_timespan("0", &t), 0);
        assert_int_equal(t, 0);

        /* A bare number is refused: seconds or minutes? */
        const char *bad[] = { "", "15", "s", "15x", "-5s", "1h-30m", "15 s s" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_not_equal(parse_timespan(bad[i], &t), 0);
        assert_int_equal(parse_timespan("99999999999999999w", &t), -ERANGE);
}

static void test_parse_percent(void **state) {
        uint32_t bp;

        assert_int_equal(parse_percent("85%", &bp), 0);
        assert_int_equal(bp, 8500);
        assert_int_equal(parse_percent("2.5%", &bp), 0);
        assert_int_equal(bp, 250);
        assert_int_equal(parse_percent("0.01%", &bp), 0);
        assert_int_equal(bp, 1);
        assert_int_equal(parse_percent("100 %", &bp), 0);
        assert_int_equal(bp, 10000);
        assert_int_equal(parse_percent("85", &bp), -EINVAL);
        assert_int_equal(parse_percent("85.555%", &bp), -EINVAL);
        assert_int_equal(parse_percent("%", &bp), -EINVAL);
        assert_int_equal(parse_percent("5%%", &bp), -EINVAL);
}

static void test_parse_bool_uint(void **state) {
        bool b;
        unsigned u;

        assert_int_equal(parse_bool("yes", &b), 0);
        assert_true(b);
        assert_int_equal(parse_bool("Off", &b), 0);
        assert_false(b);
        assert_int_equal(parse_bool("maybe", &b), -EINVAL);
        assert_int_equal(parse_uint("42", 100, &u), 0);
        assert_int_equal(u, 42);
        assert_int_equal(parse_uint("101", 100, &u), -ERANGE);
        assert_int_equal(parse_uint("4x", 100, &u), -EINVAL);
        assert_int_equal(parse_uint("", 100, &u), -EINVAL);
}

static void test_format_bytes(void **state) {
        char b[FORMAT_BYTES_MAX];

        assert_string_equal(format_bytes(b, 0), "0B");
        assert_string_equal(format_bytes(b, 1023), "1023B");
        assert_string_equal(format_bytes(b, 1024), "1K");
        assert_string_equal(format_bytes(b, 60ULL << 30), "60G");
        assert_string_equal(format_bytes(b, (512ULL << 30) / 10), "51.2G");
        assert_string_equal(format_bytes(b, 8935ULL << 20), "8.7G");
        assert_string_equal(format_bytes(b, 1023ULL << 20), "1023M");
        assert_string_equal(format_bytes(b, (1ULL << 30) - 1), "1G");
        assert_string_equal(format_bytes(b, SIZE_UNLIMITED), "max");
        assert_string_equal(format_bytes(b, SIZE_UNLIMITED - 1), "16E");
}

/* format_bytes_change(FROM, TO) writes A and B. */
static void expect_change(uint64_t from, uint64_t to, const char *a, const char *b) {
        char x[FORMAT_BYTES_MAX], y[FORMAT_BYTES_MAX];

        format_bytes_change(x, y, from, to);
        assert_string_equal(x, a);
        assert_string_equal(y, b);
}

static void test_format_bytes_change(void **state) {
        /* Apart as they are: as format_bytes() writes them. */
        expect_change(993ULL << 20, 983ULL << 20, "993M", "983M");
        expect_change(1ULL << 30, SIZE_UNLIMITED, "1G", "max");
        /* The same value: the same text. */
        expect_change(1ULL << 30, 1ULL << 30, "1G", "1G");
        /* Read the same in G: in M. A raise of 14M of 1G, and 1% of a 2G budget. */
        expect_change(1ULL << 30, (1ULL << 30) + (14ULL << 20), "1024M", "1038M");
        expect_change(1946ULL << 20, 1926ULL << 20, "1946M", "1926M");
        /* Down to K, then bytes. */
        expect_change(500ULL << 20, (500ULL << 20) + (300ULL << 10), "512000K", "512300K");
        expect_change(5000, 5001, "5000B", "5001B");
}

static void test_format_timespan(void **state) {
        char t[FORMAT_TIMESPAN_MAX];

        assert_string_equal(format_timespan(t, 0), "0s");
        assert_string_equal(format_timespan(t, 34800 * USEC_PER_SEC), "9h40m");
        assert_string_equal(format_timespan(t, 2 * USEC_PER_HOUR), "2h");
        assert_string_equal(format_timespan(t, 90 * USEC_PER_SEC), "1m30s");
        assert_string_equal(format_timespan(t, 500 * USEC_PER_MSEC), "500ms");
        assert_string_equal(format_timespan(t, 1500 * USEC_PER_MSEC), "1s500ms");
        assert_string_equal(format_timespan(t, 3 * USEC_PER_DAY + 5 * USEC_PER_HOUR + 7), "3d5h");
        assert_string_equal(format_timespan(t, 9 * USEC_PER_DAY), "1w2d");
        assert_string_equal(format_timespan(t, 7), "7us");
        assert_string_equal(format_timespan(t, 19891 * USEC_PER_MSEC), "19s");
        assert_string_equal(format_timespan(t, 9891 * USEC_PER_MSEC), "9s891ms");
        assert_string_equal(format_timespan(t, USEC_INFINITY), "never");
}

static void test_format_misc(void **state) {
        char p[FORMAT_PERCENT_MAX], r[FORMAT_RATE_MAX], w[FORMAT_WALL_MAX];

        assert_string_equal(format_bp(p, 8500), "85%");
        assert_string_equal(format_bp(p, 8550), "85.5%");
        assert_string_equal(format_bp(p, 1), "0.01%");
        assert_string_equal(format_rate(r, (0.9 * (1 << 30)) / 3600.0), "922M/h");
        assert_string_equal(format_rate(r, (2.0 * (1 << 30)) / 3600.0), "2G/h");
        assert_string_equal(format_rate(r, -(120.0 * (1 << 20)) / 3600.0), "-120M/h");
        /* 2026-08-10 23:09:57 UTC */
        assert_string_equal(format_wall(w, 1786403397ULL * USEC_PER_SEC, 0), "2026-08-10 23:09:57");
        assert_string_equal(format_wall(w, 1786403397ULL * USEC_PER_SEC, 7200), "2026-08-11 01:09:57");
        assert_string_equal(format_wall(w, 0, 0), "1970-01-01 00:00:00");
}

static void test_civil(void **state) {
        int64_t y;
        unsigned m, d;

        assert_int_equal(days_from_civil(1970, 1, 1), 0);
        assert_int_equal(days_from_civil(2000, 3, 1), 11017);
        assert_int_equal(days_from_civil(2026, 8, 10), 20675);
        for (int64_t z = -1000; z < 200000; z += 37) {
                civil_from_days(z, &y, &m, &d);
                assert_int_equal(days_from_civil(y, m, d), z);
        }
        civil_from_days(days_from_civil(2024, 2, 29), &y, &m, &d);
        assert_int_equal(y, 2024);
        assert_int_equal(m, 2);
        assert_int_equal(d, 29);
}

static void test_ratio_apply_bp(void **state) {
        assert_int_equal(ratio_bp(51, 60), 8500);
        assert_int_equal(ratio_bp(0, 60), 0);
        assert_int_equal(ratio_bp(5, 0), 0);
        assert_int_equal(ratio_bp(UINT64_MAX, 1), UINT32_MAX);
        assert_int_equal(apply_bp(60ULL << 30, 500), 3ULL * (1ULL << 30));
        assert_int_equal(apply_bp(UINT64_MAX, 10000), UINT64_MAX);
        assert_int_equal(apply_bp(UINT64_MAX, 20000), UINT64_MAX);
}

static void test_edit_distance(void **state) {
        const char *const keys[] = { "max-per-day", "min-uptime", "windows", "at", "eta" };

        assert_int_equal(edit_distance("abc", "abc", 3), 0);
        assert_int_equal(edit_distance("max-per-dya", "max-per-day", 3), 1);
        assert_int_equal(edit_distance("kitten", "sitting", 5), 3);
        assert_int_equal(edit_distance("a", "zzzzzz", 2), 3);
        assert_string_equal(closest_match("max-per-dya", keys, ELEMENTSOF(keys)), "max-per-day");
        assert_string_equal(closest_match("window", keys, ELEMENTSOF(keys)), "windows");
        assert_null(closest_match("completely-else", keys, ELEMENTSOF(keys)));
}

static void test_strbuf(void **state) {
        char small[8];
        StrBuf b;

        strbuf_init(&b, small, sizeof(small));
        assert_true(strbuf_printf(&b, "abc"));
        assert_false(strbuf_printf(&b, "defghij"));
        assert_true(b.truncated);
        assert_string_equal(small, "abcdefg");
        assert_false(strbuf_printf(&b, "x"));
}

static void test_parse_decimal_u64(void **state) {
        uint64_t v = 1;
        assert_true(parse_decimal_u64("0", &v) && v == 0);
        assert_true(parse_decimal_u64("200", &v) && v == 200);
        assert_true(parse_decimal_u64("18446744073709551615", &v) && v == UINT64_MAX);
        v = 7;
        static const char *const bad[] = { "18446744073709551616", "99999999999999999999", "", "-1", "+1", " 1",
                                           "1 ", "12a", "0x10" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_decimal_u64(bad[i], &v))
                        fail_msg("'%s' parsed as %" PRIu64, bad[i], v);
        assert_true(v == 7);
        assert_false(parse_decimal_u64(NULL, &v));
}

static void test_path_below(void **state) {
        assert_string_equal(path_below("/srv/root", "/srv/root/usr/lib/libc.so.6"), "/usr/lib/libc.so.6");
        assert_string_equal(path_below("/srv/root/", "/srv/root/usr/lib/libc.so.6"), "/usr/lib/libc.so.6");
        assert_string_equal(path_below("/srv/root", "/srv/root//lib/libc.so.6"), "/lib/libc.so.6");
        assert_string_equal(path_below("/", "/usr/lib/libc.so.6"), "/usr/lib/libc.so.6");
        assert_string_equal(path_below("//", "/usr/lib/libc.so.6"), "/usr/lib/libc.so.6");
        /* Not below: a sibling whose name starts the same, the directory itself, outside. */
        assert_null(path_below("/srv/root", "/srv/rootfs/usr/lib/libc.so.6"));
        assert_null(path_below("/srv/root", "/srv/root"));
        assert_null(path_below("/srv/root", "/srv/root/"));
        assert_null(path_below("/srv/root", "/usr/lib/libc.so.6"));
        assert_null(path_below("/srv/root", "/srv"));
        /* Not absolute: what readlink gives for a root that is no path. */
        assert_null(path_below("", "/usr/lib/libc.so.6"));
        assert_null(path_below("srv/root", "srv/root/usr/lib/libc.so.6"));
        assert_null(path_below("/srv/root", "usr/lib/libc.so.6"));
}

/* Each class of control the server's side may put in a string, and what stays as it is. */
static void test_escape_untrusted(void **state) {
        static const struct { const char *in, *out; } cases[] = {
                { "root@localhost", "root@localhost" },
                { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xac", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xac" }, /* UTF-8 kept */
                { "a\x1b[2Jb", "a\\x1b[2Jb" },                 /* C0: ESC */
                { "line\nforged", "line\\x0aforged" },           /* C0: newline */
                { "\x01\x09\x0d\x1f", "\\x01\\x09\\x0d\\x1f" },
                { "del\x7f", "del\\x7f" },                      /* DEL */
                { "\xc2\x9b""31m", "\\xc2\\x9b31m" },           /* C1: CSI as UTF-8 */
                { "\xc2\x80\xc2\x9f\xc2\xa0", "\\xc2\\x80\\xc2\\x9f\xc2\xa0" }, /* U+0080, U+009F; U+00A0 kept */
                { "\x9b""31m", "\\x9b31m" },                     /* C1 as a raw byte: not UTF-8 */
                { "\xc3", "\\xc3" },                              /* a cut sequence */
                { "\xc0\xaf", "\\xc0\\xaf" },                   /* overlong */
                { "\xed\xa0\x80", "\\xed\\xa0\\x80" },         /* a surrogate */
                { "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
                { "back\\slash", "back\\slash" },
        };
        char buf[128];
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_string_equal(escape_untrusted(cases[i].in, buf, sizeof(buf)), cases[i].out);
                assert_int_equal(escape_untrusted_size(cases[i].in), strlen(cases[i].out) + 1);
                assert_int_equal(untrusted_needs_escape(cases[i].in), !streq(cases[i].in, cases[i].out));
        }
        /* Cut short to fit: never inside an escape or a character. */
        assert_string_equal(escape_untrusted("ab\x1b", buf, 5), "ab");
        assert_string_equal(escape_untrusted("ab\xc3\xa9", buf, 4), "ab");
        assert_string_equal(escape_untrusted("ab\xc3\xa9", buf, 5), "ab\xc3\xa9");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_size),     cmocka_unit_test(test_parse_timespan),
                cmocka_unit_test(test_parse_percent),  cmocka_unit_test(test_parse_bool_uint),
                cmocka_unit_test(test_format_bytes), cmocka_unit_test(test_format_bytes_change),   cmocka_unit_test(test_format_timespan),
                cmocka_unit_test(test_format_misc),    cmocka_unit_test(test_civil),
                cmocka_unit_test(test_ratio_apply_bp), cmocka_unit_test(test_edit_distance),
                cmocka_unit_test(test_strbuf),         cmocka_unit_test(test_path_below), cmocka_unit_test(test_parse_decimal_u64),
                cmocka_unit_test(test_escape_untrusted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
