/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memgov/scan.h"
#include "memgov/strutil.h"
#include "memgov/trace.h"
#include "memgov/units.h"

typedef enum ColumnType {
        T_U64,
        T_SIZE_MAX, /* a size or "max" */
        T_I32,
        T_PID,
        T_UINT,
        T_HUNDREDTHS,
        T_FAILED,
} ColumnType;

typedef struct TraceColumn {
        const char *name;
        ColumnType type;
        size_t offset;
        unsigned group;  /* SampleHas bit; 0 = always (mono_us) */
        bool required;   /* within its group: the group is present only when all of these are */
} TraceColumn;

#define C(n, t, f, g, req) { n, t, offsetof(Sample, f), g, req }

/* The order of memgov's own trace columns. Appending is compatible; the reader goes by name. */
static const TraceColumn columns[] = {
        C("mono_us", T_U64, mono, 0, true),
        C("wall_us", T_U64, wall, SAMPLE_HAS_WALL, true),
        C("utc_offset", T_I32, utc_offset, SAMPLE_HAS_WALL, false),
        C("memory_current", T_U64, memory_current, SAMPLE_HAS_CGROUP, true),
        C("memory_high", T_SIZE_MAX, memory_high, SAMPLE_HAS_CGROUP, false),
        C("memory_max", T_SIZE_MAX, memory_max, SAMPLE_HAS_CGROUP, true),
        C("anon", T_U64, anon, SAMPLE_HAS_CGROUP, false),
        C("file", T_U64, file, SAMPLE_HAS_CGROUP, false),
        C("inactive_file", T_U64, inactive_file, SAMPLE_HAS_CGROUP, true),
        C("active_file", T_U64, active_file, SAMPLE_HAS_CGROUP, false),
        C("shmem", T_U64, shmem, SAMPLE_HAS_CGROUP, false),
        C("events_low", T_U64, events.low, SAMPLE_HAS_EVENTS, false),
        C("events_high", T_U64, events.high, SAMPLE_HAS_EVENTS, true),
        C("events_max", T_U64, events.max, SAMPLE_HAS_EVENTS, true),
        C("events_oom", T_U64, events.oom, SAMPLE_HAS_EVENTS, true),
        C("events_oom_kill", T_U64, events.oom_kill, SAMPLE_HAS_EVENTS, true),
        C("events_oom_group_kill", T_U64, events.oom_group_kill, SAMPLE_HAS_EVENTS, false),
        C("psi_some_avg10", T_HUNDREDTHS, psi.some.avg10, SAMPLE_HAS_PSI, true),
        C("psi_some_avg60", T_HUNDREDTHS, psi.some.avg60, SAMPLE_HAS_PSI, false),
        C("psi_some_avg300", T_HUNDREDTHS, psi.some.avg300, SAMPLE_HAS_PSI, false),
        C("psi_some_total", T_U64, psi.some.total, SAMPLE_HAS_PSI, false),
        C("psi_full_avg10", T_HUNDREDTHS, psi.full.avg10, SAMPLE_HAS_PSI, false),
        C("psi_full_avg60", T_HUNDREDTHS, psi.full.avg60, SAMPLE_HAS_PSI, false),
        C("psi_full_avg300", T_HUNDREDTHS, psi.full.avg300, SAMPLE_HAS_PSI, false),
        C("psi_full_total", T_U64, psi.full.total, SAMPLE_HAS_PSI, false),
        C("pid", T_PID, pid, SAMPLE_HAS_PROCESS, false),
        C("rss", T_U64, rss, SAMPLE_HAS_PROCESS, true),
        C("rss_anon", T_U64, rss_anon, SAMPLE_HAS_PROCESS, false),
        C("anon_maps", T_UINT, anon_maps, SAMPLE_HAS_PROCESS, false),
        C("threads", T_UINT, threads, SAMPLE_HAS_PROCESS, false),
        C("uptime_us", T_U64, uptime, SAMPLE_HAS_UPTIME, true),
        C("host_total", T_U64, host_total, SAMPLE_HAS_HOST, true),
        C("ws", T_U64, ws, SAMPLE_HAS_WS, true),
        C("failed", T_FAILED, failed, 0, false),
        C("pending", T_FAILED, pending, 0, false),
        C("limits_readonly", T_UINT, limits_readonly, 0, false),
        /* Appended after the columns above (a trace without it still reads: no connection count). */
        C("connections", T_UINT, connections, SAMPLE_HAS_CONNECTIONS, true),
        C("accepting", T_UINT, accepting, SAMPLE_HAS_ACCEPTING, true),
        C("not_done", T_FAILED, not_done, 0, false),
        C("server_pool", T_U64, server_pool, SAMPLE_HAS_SERVER_MEMORY, true),
        C("server_accounted", T_U64, server_accounted, SAMPLE_HAS_SERVER_MEMORY, false),
        C("server_sessions", T_U64, server_sessions, SAMPLE_HAS_SERVER_MEMORY, false),
        C("allocator_free", T_U64, allocator_free, SAMPLE_HAS_ALLOCATOR, true),
        C("allocator_in_use", T_U64, allocator_in_use, SAMPLE_HAS_ALLOCATOR, false),
        C("pool_in_use", T_U64, pool_in_use, SAMPLE_HAS_POOL_FILL, true),
        C("pool_room", T_U64, pool_room, SAMPLE_HAS_POOL_FILL, true),
        C("pool_read_us", T_U64, pool_read, SAMPLE_HAS_POOL_FILL, true),
        C("found_nothing", T_FAILED, found_nothing, 0, false),
        C("found_fewer", T_FAILED, found_fewer, 0, false),
};

#define N_FIXED ELEMENTSOF(columns)
/* After them, one column per action whose actuator measures what it gave back (the registry's
 * freed_column, "trim_freed"), in registry order: column N_FIXED + ActionKind; then one per action
 * whose actuator reports the server's own value it works from (baseline_column,
 * "pool_configured"): column N_FIXED + _ACTION_KIND_MAX + ActionKind. */
#define N_COLUMNS (N_FIXED + 2 * _ACTION_KIND_MAX)
/* Indexes into columns[] the reader needs by position (checked by the unit tests). */
#define COL_MEMORY_HIGH 4
#define COL_PSI_FULL_AVG10 21

/* An action's column: its action, and whether it is the baseline (else the freed figure). */
static ActionKind column_action(size_t i, bool *ret_baseline) {
        *ret_baseline = i >= N_FIXED + _ACTION_KIND_MAX;
        return (ActionKind) ((i - N_FIXED) % _ACTION_KIND_MAX);
}

static const char *action_column_name(size_t i) {
        bool baseline;
        const ActionInfo *a = action_info(column_action(i, &baseline));
        return baseline ? a->baseline_column : a->freed_column;
}

static bool column_exists(size_t i) {
        return i < N_FIXED || (i < N_COLUMNS && action_column_name(i));
}

static TraceColumn column(size_t i) {
        if (i < N_FIXED)
                return columns[i];
        bool baseline;
        ActionKind a = column_action(i, &baseline);
        return (TraceColumn) { .name = action_column_name(i),
                               .type = T_U64,
                               .offset = (baseline ? offsetof(Sample, baseline) : offsetof(Sample, freed)) +
                                         (size_t) a * sizeof(uint64_t) };
}

/* An action's figure is there when its actuator reported one: its bit in the sample's `reported`
 * (freed) or `based` (baseline); 0 for the other columns. */
static unsigned column_bit(size_t i, bool *ret_baseline) {
        if (i < N_FIXED)
                return 0;
        return 1u << column_action(i, ret_baseline);
}

/* The message quotes the file (a name, a cell): a trace may come from anyone, so its controls are
 * escaped before they reach a terminal. */
_printf_(2, 3) static int fail(TraceReader *r, const char *fmt, ...) {
        char raw[sizeof(r->error)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof(raw), fmt, ap);
        va_end(ap);
        escape_untrusted(raw, r->error, sizeof(r->error));
        return -EBADMSG;
}

void trace_reader_init(TraceReader *r, uint64_t unit, const char *column) {
        memset(r, 0, sizeof(*r));
        r->unit = unit;
        r->column = column;
}

int trace_format_header(char *buf, size_t size) {
        size_t n = 0;
        for (size_t i = 0; i < N_COLUMNS; i++) {
                if (!column_exists(i))
                        continue;
                int k = snprintf(buf + n, size - n, "%s%s", i ? "," : "", column(i).name);
                if (k < 0 || (size_t) k >= size - n)
                        return -ENOBUFS;
                n += (size_t) k;
        }
        return (int) n;
}

static int format_failed(unsigned mask, char *buf, size_t size) {
        size_t n = 0;
        buf[0] = '\0';
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++)
                if (mask & (1u << a)) {
                        int k = snprintf(buf + n, size - n, "%s%s", n ? "+" : "", action_kind_to_string(a));
                        if (k < 0 || (size_t) k >= size - n)
                                return -ENOBUFS;
                        n += (size_t) k;
                }
        return 0;
}

static int parse_failed(Span v, unsigned *ret) {
        unsigned mask = 0;
        Span name;
        while (span_next_field(&v, "+", &name)) {
                bool found = false;
                for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++)
                        if (span_eq(name, action_kind_to_string(a))) {
                                mask |= 1u << a;
                                found = true;
                        }
                if (!found)
                        return -EINVAL;
        }
        *ret = mask;
        return 0;
}

int trace_format_row(const Sample *s, char *buf, size_t size) {
        size_t n = 0;

        for (size_t i = 0; i < N_COLUMNS; i++) {
                if (!column_exists(i))
                        continue;
                TraceColumn col = column(i);
                const TraceColumn *c = &col;
                const void *f = (const char *) s + c->offset;
                char v[96] = "";
                bool present = c->group == 0 || (s->has & c->group);
                bool baseline;
                unsigned bit = column_bit(i, &baseline);
                if (bit)
                        present = ((baseline ? s->based : s->reported) & bit) != 0;

                if (c->offset >= offsetof(Sample, psi.full) && c->offset < offsetof(Sample, psi.full) + sizeof(PsiLine))
                        present = present && s->psi.has_full;
                if (present)
                        switch (c->type) {
                        case T_U64:
                                snprintf(v, sizeof(v), "%" PRIu64, *(const uint64_t *) f);
                                break;
                        case T_SIZE_MAX:
                                if (*(const uint64_t *) f == SIZE_UNLIMITED)
                                        snprintf(v, sizeof(v), "max");
                                else
                                        snprintf(v, sizeof(v), "%" PRIu64, *(const uint64_t *) f);
                                break;
                        case T_I32:
                                snprintf(v, sizeof(v), "%" PRId32, *(const int32_t *) f);
                                break;
                        case T_PID:
                                snprintf(v, sizeof(v), "%d", (int) *(const pid_t *) f);
                                break;
                        case T_UINT:
                                snprintf(v, sizeof(v), "%u", *(const unsigned *) f);
                                break;
                        case T_HUNDREDTHS: {
                                uint32_t h = *(const uint32_t *) f;
                                snprintf(v, sizeof(v), "%u.%02u", h / 100, h % 100);
                                break;
                        }
                        case T_FAILED:
                                if (format_failed(*(const unsigned *) f, v, sizeof(v)) < 0)
                                        return -ENOBUFS;
                                break;
                        }
                int k = snprintf(buf + n, size - n, "%s%s", i ? "," : "", v);
                if (k < 0 || (size_t) k >= size - n)
                        return -ENOBUFS;
                n += (size_t) k;
        }
        return (int) n;
}

/* ---- timestamps ---- */

static bool digits(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] < '0' || s[i] > '9')
                        return false;
        return n > 0;
}

static unsigned num(const char *s, size_t n) {
        unsigned v = 0;
        for (size_t i = 0; i < n; i++)
                v = v * 10 + (unsigned) (s[i] - '0');
        return v;
}

int parse_timestamp(const char *s, size_t n, usec_t *ret, int32_t *ret_offset) {
        /* YYYY-MM-DD[ T]HH:MM[:SS[.frac]][Z|+HH:MM|-HH:MM|+HHMM] */
        if (n < 16 || !digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2) ||
            (s[10] != ' ' && s[10] != 'T') || !digits(s + 11, 2) || s[13] != ':' || !digits(s + 14, 2))
                return -EINVAL;
        unsigned y = num(s, 4), mo = num(s + 5, 2), d = num(s + 8, 2), h = num(s + 11, 2), mi = num(s + 14, 2);
        unsigned sec = 0;
        usec_t frac = 0;
        size_t i = 16;
        if (i < n && s[i] == ':') {
                if (i + 3 > n || !digits(s + i + 1, 2))
                        return -EINVAL;
                sec = num(s + i + 1, 2);
                i += 3;
                if (i < n && (s[i] == '.' || s[i] == ',')) {
                        usec_t scale = 100000;
                        i++;
                        size_t start = i;
                        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
                                frac += (usec_t) (s[i] - '0') * scale;
                                scale /= 10;
                        }
                        if (i == start)
                                return -EINVAL;
                }
        }
        int32_t offset = 0;
        if (i < n && (s[i] == 'Z' || s[i] == 'z'))
                i++;
        else if (i < n && (s[i] == '+' || s[i] == '-')) {
                int sign = s[i] == '-' ? -1 : 1;
                i++;
                unsigned oh, om;
                if (i + 5 <= n && digits(s + i, 2) && s[i + 2] == ':' && digits(s + i + 3, 2)) {
                        oh = num(s + i, 2);
                        om = num(s + i + 3, 2);
                        i += 5;
                } else if (i + 4 <= n && digits(s + i, 4)) {
                        oh = num(s + i, 2);
                        om = num(s + i + 2, 2);
                        i += 4;
                } else
                        return -EINVAL;
                /* Offsets in use run from -12:00 to +14:00; memgov's own traces refuse more. */
                if (om > 59 || oh * 60 + om > 14 * 60)
                        return -EINVAL;
                offset = sign * (int32_t) (oh * 3600 + om * 60);
        }
        if (i != n)
                return -EINVAL;
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
                return -EINVAL;
        /* A day the month has: 2026-02-30 is a typo, not March 2nd. */
        static const uint8_t month_days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        if (d > month_days[mo - 1] + (mo == 2 && leap ? 1u : 0u))
                return -EINVAL;

        int64_t days = days_from_civil(y, mo, d);
        int64_t secs = days * 86400 + h * 3600 + mi * 60 + MIN(sec, 59u) - offset;
        if (secs < 0)
                return -EINVAL;
        *ret = (usec_t) secs * USEC_PER_SEC + frac;
        *ret_offset = offset;
        return 0;
}

/* ---- reading ---- */

static unsigned split_fields(Span line, char sep, Span *fields, unsigned max) {
        unsigned n = 0;

        if (sep == ' ') {
                Span f;
                while (n < max && span_next_field(&line, " \t", &f))
                        fields[n++] = f;
                /* "2026-08-10 23:09:57 8935": a date and a time are one timestamp. */
                if (n >= 3 && fields[0].n == 10 && fields[0].p[4] == '-' && fields[1].n >= 5 && fields[1].p[2] == ':') {
                        fields[0].n = (size_t) (fields[1].p + fields[1].n - fields[0].p);
                        memmove(fields + 1, fields + 2, (n - 2) * sizeof(Span));
                        n--;
                }
                return n;
        }

        const char *p = line.p, *end = line.p + line.n;
        for (;;) {
                const char *e = memchr(p, sep, (size_t) (end - p));
                if (n == max)
                        return max + 1;
                fields[n++] = span_strip((Span) { p, (size_t) ((e ? e : end) - p) });
                if (!e)
                        break;
                p = e + 1;
        }
        return n;
}

static uint64_t unit_from_name(Span name) {
        static const struct {
                const char *token;
                uint64_t unit;
        } units[] = {
                { "b", 1 },           { "byte", 1 },         { "bytes", 1 },       { "k", 1ULL << 10 },
                { "kb", 1ULL << 10 }, { "kib", 1ULL << 10 }, { "m", 1ULL << 20 },  { "mb", 1ULL << 20 },
                { "mib", 1ULL << 20 }, { "g", 1ULL << 30 },  { "gb", 1ULL << 30 }, { "gib", 1ULL << 30 },
                { "t", 1ULL << 40 },  { "tb", 1ULL << 40 },  { "tib", 1ULL << 40 },
        };
        /* The last alphanumeric token: RSS_MB, rss_kb, "RSS (GiB)", rss[KiB], mem-bytes. */
        size_t e = name.n;
        while (e > 0 && !((name.p[e - 1] >= 'a' && name.p[e - 1] <= 'z') || (name.p[e - 1] >= 'A' && name.p[e - 1] <= 'Z') ||
                          (name.p[e - 1] >= '0' && name.p[e - 1] <= '9')))
                e--;
        size_t b = e;
        while (b > 0 && ((name.p[b - 1] >= 'a' && name.p[b - 1] <= 'z') || (name.p[b - 1] >= 'A' && name.p[b - 1] <= 'Z') ||
                         (name.p[b - 1] >= '0' && name.p[b - 1] <= '9')))
                b--;
        if (b == 0)
                return 0; /* a single token ("RSS") names no unit */
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strlen(units[i].token) == e - b && strncasecmp(units[i].token, name.p + b, e - b) == 0)
                        return units[i].unit;
        return 0;
}

static bool looks_numeric(Span v) {
        bool dot = false;
        if (v.n == 0)
                return false;
        for (size_t i = 0; i < v.n; i++) {
                if (v.p[i] == '.' && !dot)
                        dot = true;
                else if (v.p[i] < '0' || v.p[i] > '9')
                        return false;
        }
        return true;
}

static int setup_memgov(TraceReader *r, Span *fields, unsigned n) {
        bool seen[N_COLUMNS] = {};

        if (n > TRACE_MAX_COLUMNS)
                return fail(r, "more than %d columns", TRACE_MAX_COLUMNS);
        for (unsigned i = 0; i < n; i++) {
                r->col_field[i] = -1;
                for (size_t c = 0; c < N_COLUMNS; c++)
                        if (column_exists(c) && span_eq(fields[i], column(c).name)) {
                                if (seen[c])
                                        return fail(r, "column '%s' appears twice", column(c).name);
                                seen[c] = true;
                                r->col_field[i] = (int) c;
                        }
                if (r->col_field[i] < 0)
                        return fail(r, "unknown column '%.*s' (expected memgov trace columns, see "
                                    "docs/trace-format.md)", (int) MIN(fields[i].n, 64), fields[i].p);
        }
        if (!seen[0])
                return fail(r, "no mono_us column");
        r->n_columns = n;
        r->format = TRACE_FORMAT_MEMGOV;
        return 0;
}

static int parse_cell(TraceReader *r, const TraceColumn *c, Span v, Sample *s) {
        void *f = (char *) s + c->offset;
        uint64_t u;
        int rr;

        switch (c->type) {
        case T_SIZE_MAX:
                if (span_eq(v, "max")) {
                        *(uint64_t *) f = SIZE_UNLIMITED;
                        return 0;
                }
                _fallthrough_;
        case T_U64:
                rr = span_to_u64(v, f);
                break;
        case T_I32: {
                bool neg = v.n > 0 && v.p[0] == '-';
                Span d = neg ? (Span) { v.p + 1, v.n - 1 } : v;
                rr = span_to_u64(d, &u);
                if (rr == 0 && u > 14 * 3600)
                        rr = -ERANGE;
                if (rr == 0)
                        *(int32_t *) f = neg ? -(int32_t) u : (int32_t) u;
                break;
        }
        case T_PID:
                rr = span_to_u64(v, &u);
                if (rr == 0 && u > INT32_MAX)
                        rr = -ERANGE;
                if (rr == 0)
                        *(pid_t *) f = (pid_t) u;
                break;
        case T_UINT:
                rr = span_to_u64(v, &u);
                if (rr == 0 && u > UINT32_MAX)
                        rr = -ERANGE;
                if (rr == 0)
                        *(unsigned *) f = (unsigned) u;
                break;
        case T_HUNDREDTHS:
                rr = span_to_hundredths(v, f);
                if (rr == 0 && *(uint32_t *) f > 10000)
                        rr = -ERANGE;
                break;
        case T_FAILED:
                rr = parse_failed(v, f);
                break;
        default:
                rr = -EINVAL;
        }
        if (rr < 0)
                return fail(r, "column %s: '%.*s' is not valid", c->name, (int) MIN(v.n, 40), v.p);
        return 0;
}

static int row_memgov(TraceReader *r, Span *fields, unsigned n, Sample *ret) {
        Sample s = {};
        bool present[N_COLUMNS] = {};
        int k;

        if (n != r->n_columns)
                return fail(r, "%u cells, the header has %u columns", n, r->n_columns);
        for (unsigned i = 0; i < n; i++) {
                TraceColumn c = column((size_t) r->col_field[i]);
                if (fields[i].n == 0)
                        continue;
                if ((k = parse_cell(r, &c, fields[i], &s)) < 0)
                        return k;
                present[r->col_field[i]] = true;
        }
        if (!present[0])
                return fail(r, "mono_us is empty");

        /* A group counts when all its required columns are there; half a group is an error. The
         * groups are the columns' own. */
        unsigned groups = 0;
        for (size_t c = 0; c < N_FIXED; c++)
                groups |= columns[c].group;
        for (unsigned group = 1; group != 0 && group <= groups; group <<= 1) {
                if (!(groups & group))
                        continue;
                unsigned req = 0, have = 0, any = 0;
                const char *missing = NULL, *given = NULL;
                for (size_t c = 0; c < N_FIXED; c++) {
                        if (columns[c].group != group)
                                continue;
                        if (present[c]) {
                                any++;
                                if (!given)
                                        given = columns[c].name;
                        }
                        if (!columns[c].required)
                                continue;
                        req++;
                        if (present[c])
                                have++;
                        else if (!missing)
                                missing = columns[c].name;
                }
                if (have == req)
                        s.has |= group;
                else if (any > 0)
                        return fail(r, "%s is set but %s is empty (expected both or neither)", given, missing);
        }
        for (size_t c = N_FIXED; c < N_COLUMNS; c++) {
                bool baseline;
                unsigned bit = column_bit(c, &baseline);
                if (present[c])
                        *(baseline ? &s.based : &s.reported) |= bit;
        }
        if ((s.has & SAMPLE_HAS_CGROUP) && !present[COL_MEMORY_HIGH])
                s.memory_high = SIZE_UNLIMITED;
        s.psi.has_full = present[COL_PSI_FULL_AVG10];

        if (r->have_time && s.mono < r->last_time)
                return fail(r, "mono_us goes backwards (%" PRIu64 " after %" PRIu64 ")", s.mono, r->last_time);
        r->have_time = true;
        r->last_time = s.mono;
        *ret = s;
        return 1;
}

static int setup_plain(TraceReader *r, Span *fields, unsigned n, bool header) {
        if (n < 2)
                return fail(r, "expected a timestamp and a memory column");
        r->time_col = 0;

        if (header && r->column) {
                unsigned found = 0;
                for (unsigned i = 1; i < n; i++)
                        if (fields[i].n == strlen(r->column) && strncasecmp(fields[i].p, r->column, fields[i].n) == 0) {
                                r->value_col = i;
                                found++;
                        }
                if (found != 1)
                        return fail(r, "%s column '%s' in the header", found ? "more than one" : "no", r->column);
        } else if (n == 2)
                r->value_col = 1;
        else {
                char names[160] = "";
                size_t len = 0;
                for (unsigned i = 1; i < n && len < sizeof(names) - 1; i++) {
                        int k = snprintf(names + len, sizeof(names) - len, "%s%.*s", i > 1 ? ", " : "",
                                         (int) MIN(fields[i].n, 30), fields[i].p);
                        if (k > 0)
                                len += (size_t) k;
                }
                return fail(r, "%u memory columns (%s): choose one with --column", n - 1,
                            header ? names : "no header");
        }

        if (r->unit == 0) {
                if (!header)
                        return fail(r, "no header line to take the unit from (expected a header like "
                                    "'Timestamp, RSS_MB', or --unit)");
                r->unit = unit_from_name(fields[r->value_col]);
                if (r->unit == 0)
                        return fail(r, "cannot tell the unit of column '%.*s' (expected a unit in its name "
                                    "such as RSS_MB, rss_kb or 'RSS (GiB)', or --unit)",
                                    (int) MIN(fields[r->value_col].n, 60), fields[r->value_col].p);
        }
        r->have_header = header;
        r->format = TRACE_FORMAT_PLAIN;
        return 0;
}

static int plain_time(TraceReader *r, Span v, usec_t *ret, int32_t *ret_offset, bool *ret_absolute) {
        *ret_offset = 0;
        if (looks_numeric(v)) {
                const char *dot = memchr(v.p, '.', v.n);
                size_t intlen = dot ? (size_t) (dot - v.p) : v.n;
                uint64_t whole;
                if (span_to_u64((Span) { v.p, intlen }, &whole) < 0)
                        return fail(r, "timestamp '%.*s' is out of range", (int) MIN(v.n, 40), v.p);
                /* Epoch seconds from 2001 on, milliseconds, microseconds; smaller numbers count
                 * seconds from the start of the log. */
                uint64_t unit = whole < 100000000000ULL ? USEC_PER_SEC : whole < 100000000000000ULL ? USEC_PER_MSEC : 1;
                if (parse_decimal_scaled(v.p, v.n, unit, ret) < 0)
                        return fail(r, "timestamp '%.*s' is out of range", (int) MIN(v.n, 40), v.p);
                *ret_absolute = whole >= 1000000000ULL;
                return 0;
        }
        if (parse_timestamp(v.p, v.n, ret, ret_offset) < 0)
                return fail(r, "'%.*s' is not a timestamp (expected 2026-08-10 23:09:57, an ISO 8601 time, "
                            "or epoch seconds)", (int) MIN(v.n, 40), v.p);
        *ret_absolute = true;
        return 0;
}

static int row_plain(TraceReader *r, Span *fields, unsigned n, Sample *ret) {
        Sample s = {};
        usec_t t;
        int32_t off = 0;
        bool absolute = false;
        int k;

        if (n <= r->value_col || n <= r->time_col)
                return fail(r, "%u fields, expected at least %u", n, r->value_col + 1);
        if ((k = plain_time(r, fields[r->time_col], &t, &off, &absolute)) < 0)
                return k;
        if (r->have_time && absolute != r->time_absolute)
                return fail(r, "timestamps mix absolute times and seconds from the start");
        if (r->have_time && t < r->last_time)
                return fail(r, "time goes backwards");
        if (!r->have_time) {
                r->have_time = true;
                r->first_time = t;
                r->time_absolute = absolute;
        }
        r->last_time = t;

        Span v = fields[r->value_col];
        if (!looks_numeric(v) || parse_decimal_scaled(v.p, v.n, r->unit, &s.ws) < 0)
                return fail(r, "'%.*s' is not a memory figure (expected a number)", (int) MIN(v.n, 40), v.p);

        s.mono = t - r->first_time;
        s.has = SAMPLE_HAS_WS;
        if (absolute) {
                s.wall = t;
                s.utc_offset = off;
                s.has |= SAMPLE_HAS_WALL;
        }
        *ret = s;
        return 1;
}

int trace_reader_line(TraceReader *r, const char *line, size_t len, Sample *ret) {
        Span fields[TRACE_MAX_COLUMNS + 1];
        Span l = { line, len };

        r->lineno++;
        r->error[0] = '\0';
        if (memchr(line, '\0', len))
                return fail(r, "NUL byte in a text file");
        l = span_strip(l);
        if (l.n > 0 && l.p[0] == '#') {
                if (span_eq(l, TRACE_MARK_ACTING))
                        r->acting = true;
                else if (span_eq(l, TRACE_MARK_DRY_RUN))
                        r->acting = false;
                return 0;
        }
        if (l.n == 0)
                return 0;

        if (r->format == TRACE_FORMAT_UNKNOWN) {
                r->sep = memchr(l.p, ',', l.n) ? ',' : memchr(l.p, '\t', l.n) ? '\t' : memchr(l.p, ';', l.n) ? ';' : ' ';
                unsigned n = split_fields(l, r->sep, fields, TRACE_MAX_COLUMNS);
                if (n > TRACE_MAX_COLUMNS)
                        return fail(r, "more than %d columns", TRACE_MAX_COLUMNS);
                for (unsigned i = 0; i < n; i++)
                        if (span_eq(fields[i], "mono_us"))
                                return setup_memgov(r, fields, n) < 0 ? -EBADMSG : 0;
                bool header = n >= 2 && !looks_numeric(fields[n - 1]);
                /* "date time rss_mb": the rows' date and time are one field, so are the names. */
                if (header && r->sep == ' ' && n == 3 && !r->column) {
                        fields[0].n = (size_t) (fields[1].p + fields[1].n - fields[0].p);
                        fields[1] = fields[2];
                        n = 2;
                }
                if (setup_plain(r, fields, n, header) < 0)
                        return -EBADMSG;
                if (header)
                        return 0;
                return row_plain(r, fields, n, ret);
        }

        unsigned n = split_fields(l, r->sep, fields, TRACE_MAX_COLUMNS);
        if (n > TRACE_MAX_COLUMNS)
                return fail(r, "more than %d columns", TRACE_MAX_COLUMNS);
        if (r->format == TRACE_FORMAT_MEMGOV)
                return row_memgov(r, fields, n, ret);
        return row_plain(r, fields, n, ret);
}
