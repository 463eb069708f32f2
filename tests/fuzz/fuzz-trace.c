/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Traces: trace_reader_line() fed line by line as `memgov replay` feeds it, with the default
 * options and with --unit M --column rss. Errors say what is wrong in a bounded message and
 * success leaves none; time never goes backwards between the samples of one trace; a plain log
 * has a working set and only that; every sample, written back with trace_format_row() under
 * trace_format_header(), reads back to the same row (memgov's own format is a fixpoint). */
#include "fuzz.h"
#include "memgov/trace.h"

static void check_roundtrip(const Sample *s) {
        char header[TRACE_LINE_MAX], row[TRACE_LINE_MAX], row2[TRACE_LINE_MAX];
        TraceReader r;
        Sample again;

        int hn = trace_format_header(header, sizeof(header));
        fuzz_assert(hn > 0);
        int n = trace_format_row(s, row, sizeof(row));
        fuzz_assert(n > 0 && (size_t) n < sizeof(row) && strlen(row) == (size_t) n);

        trace_reader_init(&r, 0, NULL);
        fuzz_assert(trace_reader_line(&r, header, (size_t) hn, &again) == 0);
        fuzz_assert(r.format == TRACE_FORMAT_MEMGOV);
        int k = trace_reader_line(&r, row, (size_t) n, &again);
        if (k != 1)
                fprintf(stderr, "row %s: %s\n", row, r.error);
        fuzz_assert(k == 1);
        int n2 = trace_format_row(&again, row2, sizeof(row2));
        fuzz_assert(n2 == n && streq(row, row2));
}

static void run(const char *text, size_t len, uint64_t unit, const char *column) {
        TraceReader r;
        bool have = false;
        usec_t last = 0;

        trace_reader_init(&r, unit, column);
        for (const char *p = text, *end = text + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                unsigned lineno = r.lineno;
                Sample s;

                /* The line alone, exactly allocated: a read past its end is caught. */
                char *line = fuzz_memdup(p, n);
                int k = trace_reader_line(&r, line, n, &s);
                free(line);
                p += n + (nl ? 1 : 0);

                fuzz_assert(r.lineno == lineno + 1);
                fuzz_assert_string(r.error, sizeof(r.error));
                if (k < 0) {
                        fuzz_assert(r.error[0] != '\0');
                        break; /* memgov replay stops at the first error */
                }
                fuzz_assert(k == 0 || k == 1);
                fuzz_assert(r.error[0] == '\0');
                if (k == 0)
                        continue;

                fuzz_assert(r.format == TRACE_FORMAT_MEMGOV || r.format == TRACE_FORMAT_PLAIN);
                if (have)
                        fuzz_assert(s.mono >= last);
                have = true;
                last = s.mono;
                if (r.format == TRACE_FORMAT_PLAIN) {
                        fuzz_assert((s.has & ~(unsigned) SAMPLE_HAS_WALL) == SAMPLE_HAS_WS);
                        fuzz_assert(s.mono == r.last_time - r.first_time);
                        fuzz_assert(((s.has & SAMPLE_HAS_WALL) != 0) == r.time_absolute);
                } else
                        fuzz_assert(s.psi.has_full ? (s.has & SAMPLE_HAS_PSI) != 0 : true);
                if (s.has & SAMPLE_HAS_WALL)
                        fuzz_assert(s.utc_offset >= -14 * 3600 && s.utc_offset <= 14 * 3600);
                check_roundtrip(&s);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        run((const char *) data, size, 0, NULL);
        run((const char *) data, size, 1ULL << 20, "rss");
        return 0;
}
