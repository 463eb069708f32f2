/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/sample.h"

/* Trace files, read one line at a time (pure: the caller reads the file).
 *
 * Two formats:
 *  - memgov's own CSV, which `memgov record` writes: a header naming Sample fields (mono_us,
 *    wall_us, memory_current, ...), one row per sample, empty cells for unknown values;
 *  - the plain logs DBAs already keep: a timestamp column and one memory column, e.g.
 *        Timestamp, RSS_MB
 *        2026-08-10 23:09:57, 8935
 *    with the unit taken from the column name (or given with --unit), timestamps as dates or
 *    epoch seconds/milliseconds, separated by commas, tabs, semicolons or spaces. */

typedef enum TraceFormat {
        TRACE_FORMAT_UNKNOWN,
        TRACE_FORMAT_MEMGOV,
        TRACE_FORMAT_PLAIN,
} TraceFormat;

#define TRACE_MAX_COLUMNS 64
#define TRACE_ERROR_MAX 256

typedef struct TraceReader {
        TraceFormat format;
        unsigned lineno;
        char error[TRACE_ERROR_MAX];

        /* options */
        uint64_t unit;          /* plain: bytes per unit, 0 = from the header */
        const char *column;     /* plain: the memory column's name, NULL = the only one */

        /* memgov format: which Sample field each column holds (-1 = ignored) */
        int col_field[TRACE_MAX_COLUMNS];
        unsigned n_columns;

        /* plain format */
        char sep; /* ',', '\t', ';' or ' ' for runs of white space */
        unsigned time_col, value_col;
        bool have_header;

        bool have_time;
        usec_t first_time, last_time;
        bool time_absolute;

        /* From memgov's own comment lines (TRACE_MARK_ACTING, TRACE_MARK_DRY_RUN): whether the
         * daemon that recorded the rows that follow carried its actions out, so that what the
         * working set did afterwards is their measured effect. false for any other trace. */
        bool acting;
} TraceReader;

/* The comment lines a recording daemon writes: at the start, after the header comment, and again
 * whenever a reload changes whether it acts. */
#define TRACE_MARK_ACTING "# memgov: acting"
#define TRACE_MARK_DRY_RUN "# memgov: dry run"

void trace_reader_init(TraceReader *r, uint64_t unit, const char *column);
/* Feeds one line (without its '\n'). Returns 1 and fills *ret for a sample row, 0 for a
 * header, comment or blank line, or a negative errno with r->error saying what is wrong. */
int trace_reader_line(TraceReader *r, const char *line, size_t len, Sample *ret);

/* Writing memgov's own format. */
#define TRACE_LINE_MAX 1024
/* The header line of memgov's own format; returns its length or -ENOBUFS. */
int trace_format_header(char *buf, size_t size);
/* Formats s as one row (no '\n'); returns the length or -ENOBUFS. */
int trace_format_row(const Sample *s, char *buf, size_t size);

/* Parses "2026-08-10 23:09:57", "2026-08-10T23:09:57.250+02:00", "2026-08-10T21:09:57Z" into
 * microseconds since the epoch and the offset it was written in (0 when none). */
int parse_timestamp(const char *s, size_t n, usec_t *ret, int32_t *ret_offset);
