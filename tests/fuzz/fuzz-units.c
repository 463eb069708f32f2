/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The value parsers of policy files and traces, on the input as one string: parse_size(),
 * parse_timespan(), parse_percent(), parse_uint(), parse_bool(), parse_decimal_scaled(),
 * parse_windows(), argv_split(), and edit_distance() behind the did-you-mean suggestions. What
 * the format_*() functions print reads back (sizes within their rounding, percentages exactly),
 * and outputs stay within their buffers. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/argv.h"
#include "memgov/policy.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

static void check_size(const char *s) {
        uint64_t v, v2;
        char buf[FORMAT_BYTES_MAX];

        if (parse_size(s, &v) < 0)
                return;
        format_bytes(buf, v);
        fuzz_assert(strlen(buf) < sizeof(buf));
        /* From 1024P up, format_bytes() says E, a unit sizes do not take (on purpose: see
         * test-units.c). */
        if (v >= 1023ULL << 50)
                return;
        if (parse_size(buf, &v2) != 0) {
                fprintf(stderr, "'%s' = %" PRIu64 " prints as '%s', which does not parse\n", s, v, buf);
                abort();
        }
        uint64_t d = v > v2 ? v - v2 : v2 - v;
        fuzz_assert(d <= v / 20 + 1);
}

static void check_timespan(const char *s) {
        usec_t v, v2;
        char buf[FORMAT_TIMESPAN_MAX];

        if (parse_timespan(s, &v) < 0)
                return;
        fuzz_assert(v != USEC_INFINITY);
        format_timespan(buf, v);
        fuzz_assert(strlen(buf) < sizeof(buf));
        fuzz_assert(parse_timespan(buf, &v2) == 0);
        /* Two components at most: never more than the value, and nothing only when it is 0. */
        fuzz_assert(v2 <= v);
        fuzz_assert((v2 == 0) == (v == 0));
}

static void check_percent(const char *s) {
        uint32_t bp, bp2;
        char buf[FORMAT_PERCENT_MAX];

        if (parse_percent(s, &bp) < 0)
                return;
        format_bp(buf, bp);
        fuzz_assert(strlen(buf) < sizeof(buf));
        fuzz_assert(parse_percent(buf, &bp2) == 0);
        fuzz_assert(bp2 == bp);
}

static void check_uint(const char *s) {
        unsigned u, u2;
        char buf[16];

        if (parse_uint(s, 1000, &u) == 0)
                fuzz_assert(u <= 1000);
        if (parse_uint(s, UINT32_MAX, &u) < 0)
                return;
        snprintf(buf, sizeof(buf), "%u", u);
        fuzz_assert(parse_uint(buf, UINT32_MAX, &u2) == 0 && u2 == u);
}

static void check_decimal(const char *s, size_t len) {
        static const uint64_t units[] = { 1, 1024, 1000000, 1ULL << 40 };

        for (size_t i = 0; i < ELEMENTSOF(units); i++) {
                uint64_t v;
                if (parse_decimal_scaled(s, len, units[i], &v) < 0)
                        continue;
                /* The whole part times the unit, plus less than one unit. */
                unsigned __int128 whole = 0;
                for (size_t j = 0; j < len && s[j] != '.'; j++)
                        whole = whole * 10 + (unsigned) (s[j] - '0');
                fuzz_assert((unsigned __int128) v >= whole * units[i]);
                fuzz_assert((unsigned __int128) v < (whole + 1) * units[i]);
        }
}

static void check_windows(const char *s) {
        MaintenanceWindow w[POLICY_MAX_WINDOWS];
        unsigned n = 99;

        if (parse_windows(s, w, ELEMENTSOF(w), &n) < 0)
                return;
        fuzz_assert(n <= ELEMENTSOF(w));
        for (unsigned i = 0; i < n; i++) {
                fuzz_assert(w[i].days != 0 && w[i].days < 0x80);
                fuzz_assert(w[i].start_min < 1440 && w[i].end_min <= 1440 && w[i].start_min != w[i].end_min);
                /* A window holds its own start. */
                for (unsigned d = 0; d < 7; d++)
                        if (w[i].days & (1u << d))
                                fuzz_assert(windows_contain(&w[i], 1, d * 1440 + w[i].start_min));
        }
        if (n == 0)
                fuzz_assert(windows_contain(w, 0, 1234));
}

static void check_argv(const char *s) {
        char buf[POLICY_ARGV_MAX];
        char *av[ARGV_MAX + 1];
        unsigned n = 99;

        int r = argv_split(s, buf, sizeof(buf), av, &n);
        fuzz_assert(r == 0 || r == -EINVAL || r == -E2BIG);
        if (r < 0)
                return;
        fuzz_assert(n <= ARGV_MAX);
        fuzz_assert(av[n] == NULL);
        for (unsigned i = 0; i < n; i++) {
                fuzz_assert(av[i] >= buf && av[i] < buf + sizeof(buf));
                fuzz_assert_string(av[i], (size_t) (buf + sizeof(buf) - av[i]));
        }
        if (n > 0)
                fuzz_assert(av[0][0] == '/');
}

static void check_edit_distance(const char *s) {
        const char *nl = strchr(s, '\n');
        if (!nl)
                return;
        char *a = strndup(s, (size_t) (nl - s));
        const char *b = nl + 1;
        if (!a)
                abort();
        unsigned d = edit_distance(a, b, 3), d2 = edit_distance(b, a, 3);
        fuzz_assert(d == d2);
        fuzz_assert(d <= 4);
        fuzz_assert(edit_distance(a, a, 3) == (strlen(a) > 64 ? 4u : 0u));
        if (streq(a, b) && strlen(a) <= 64)
                fuzz_assert(d == 0);
        free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_strndup(data, size);
        bool b;

        check_size(s);
        check_timespan(s);
        check_percent(s);
        check_uint(s);
        (void) parse_bool(s, &b);
        check_decimal(s, strlen(s));
        check_windows(s);
        check_argv(s);
        check_edit_distance(s);
        free(s);
        return 0;
}
