/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memgov/units.h"

static const char *skip_space(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

int parse_decimal_scaled(const char *s, size_t len, uint64_t unit, uint64_t *ret) {
        assert(s);
        assert(ret);
        const char *end = s + len;
        uint64_t whole = 0, frac = 0, frac_div = 1;
        bool any = false;

        if (len == 0 || unit == 0)
                return -EINVAL;

        for (; s < end && *s >= '0' && *s <= '9'; s++) {
                if (whole > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                whole = whole * 10 + (uint64_t) (*s - '0');
                any = true;
        }
        if (s < end && *s == '.') {
                s++;
                for (; s < end && *s >= '0' && *s <= '9'; s++) {
                        /* Digits beyond nanosecond/byte precision cannot change the result. */
                        if (frac_div < 1000000000ULL) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                frac_div *= 10;
                        }
                        any = true;
                }
        }
        if (!any || s != end)
                return -EINVAL;

        if (whole > UINT64_MAX / unit)
                return -ERANGE;
        uint64_t v = whole * unit;
        /* frac < frac_div <= 1e9, so frac * unit fits unless unit is enormous: split it. */
        uint64_t f = (unit / frac_div) * frac + ((unit % frac_div) * frac) / frac_div;
        if (v > UINT64_MAX - f)
                return -ERANGE;
        *ret = v + f;
        return 0;
}

static int size_unit(const char *u, size_t n, uint64_t *ret) {
        static const struct {
                char letter;
                uint64_t factor;
        } table[] = {
                { 'k', 1ULL << 10 }, { 'm', 1ULL << 20 }, { 'g', 1ULL << 30 },
                { 't', 1ULL << 40 }, { 'p', 1ULL << 50 },
        };

        if (n == 0) {
                *ret = 1;
                return 0;
        }
        if (n == 1 && (u[0] == 'B' || u[0] == 'b')) {
                *ret = 1;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                if (tolower((unsigned char) u[0]) != table[i].letter)
                        continue;
                /* "G", "GB", "GiB" (and lower case) all mean 1024^3. */
                if (n == 1 || (n == 2 && (u[1] == 'B' || u[1] == 'b')) ||
                    (n == 3 && u[1] == 'i' && (u[2] == 'B' || u[2] == 'b'))) {
                        *ret = table[i].factor;
                        return 0;
                }
        }
        return -EINVAL;
}

int parse_size(const char *s, uint64_t *ret) {
        assert(s);
        assert(ret);
        s = skip_space(s);
        const char *num = s;
        while ((*s >= '0' && *s <= '9') || *s == '.')
                s++;
        size_t numlen = (size_t) (s - num);
        s = skip_space(s);
        const char *u = s;
        while (isalpha((unsigned char) *s))
                s++;
        size_t ulen = (size_t) (s - u);
        s = skip_space(s);
        if (*s != '\0' || numlen == 0)
                return -EINVAL;

        uint64_t factor;
        if (size_unit(u, ulen, &factor) < 0)
                return -EINVAL;
        return parse_decimal_scaled(num, numlen, factor, ret);
}

static int time_unit(const char *u, size_t n, usec_t *ret) {
        static const struct {
                const char *name;
                usec_t factor;
        } table[] = {
                { "us", 1 },
                { "usec", 1 },
                { "ms", USEC_PER_MSEC },
                { "msec", USEC_PER_MSEC },
                { "s", USEC_PER_SEC },
                { "sec", USEC_PER_SEC },
                { "m", USEC_PER_MINUTE },
                { "min", USEC_PER_MINUTE },
                { "h", USEC_PER_HOUR },
                { "hr", USEC_PER_HOUR },
                { "d", USEC_PER_DAY },
                { "day", USEC_PER_DAY },
                { "days", USEC_PER_DAY },
                { "w", USEC_PER_WEEK },
                { "week", USEC_PER_WEEK },
                { "weeks", USEC_PER_WEEK },
        };
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strlen(table[i].name) == n && strncasecmp(table[i].name, u, n) == 0) {
                        *ret = table[i].factor;
                        return 0;
                }
        return -EINVAL;
}

int parse_timespan(const char *s, usec_t *ret) {
        assert(s);
        assert(ret);
        usec_t total = 0;
        bool any = false;

        s = skip_space(s);
        if (streq(s, "0")) {
                *ret = 0;
                return 0;
        }
        while (*s) {
                const char *num = s;
                while ((*s >= '0' && *s <= '9') || *s == '.')
                        s++;
                size_t numlen = (size_t) (s - num);
                s = skip_space(s);
                const char *u = s;
                while (isalpha((unsigned char) *s))
                        s++;
                size_t ulen = (size_t) (s - u);
                s = skip_space(s);

                usec_t factor, v;
                /* A unit is required: a bare "15" could mean seconds or minutes. */
                if (numlen == 0 || ulen == 0 || time_unit(u, ulen, &factor) < 0)
                        return -EINVAL;
                int r = parse_decimal_scaled(num, numlen, factor, &v);
                if (r < 0)
                        return r;
                if (total > USEC_INFINITY - 1 - v)
                        return -ERANGE;
                total += v;
                any = true;
        }
        if (!any)
                return -EINVAL;
        *ret = total;
        return 0;
}

int parse_percent(const char *s, uint32_t *ret_bp) {
        assert(s);
        assert(ret_bp);
        s = skip_space(s);
        const char *num = s;
        while ((*s >= '0' && *s <= '9') || *s == '.')
                s++;
        size_t numlen = (size_t) (s - num);
        s = skip_space(s);
        if (*s != '%')
                return -EINVAL;
        s = skip_space(s + 1);
        if (*s != '\0' || numlen == 0)
                return -EINVAL;

        /* At most two decimals: basis points are the resolution. */
        const char *dot = memchr(num, '.', numlen);
        if (dot && (size_t) (num + numlen - dot - 1) > 2)
                return -EINVAL;

        uint64_t bp;
        int r = parse_decimal_scaled(num, numlen, 100, &bp);
        if (r < 0)
                return r;
        if (bp > UINT32_MAX)
                return -ERANGE;
        *ret_bp = (uint32_t) bp;
        return 0;
}

int parse_uint(const char *s, unsigned max, unsigned *ret) {
        assert(s);
        assert(ret);
        uint64_t v = 0;

        s = skip_space(s);
        if (!(*s >= '0' && *s <= '9'))
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                v = v * 10 + (uint64_t) (*s - '0');
                if (v > max)
                        return -ERANGE;
        }
        s = skip_space(s);
        if (*s)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int parse_bool(const char *s, bool *ret) {
        assert(s);
        assert(ret);
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

uint32_t ratio_bp(uint64_t part, uint64_t whole) {
        if (whole == 0)
                return 0;
        /* 128-bit intermediate: part can be any 64-bit size. */
        unsigned __int128 v = (unsigned __int128) part * BP_ONE / whole;
        return v > UINT32_MAX ? UINT32_MAX : (uint32_t) v;
}

uint64_t apply_bp(uint64_t value, uint32_t bp) {
        unsigned __int128 v = (unsigned __int128) value * bp / BP_ONE;
        return v > UINT64_MAX ? UINT64_MAX : (uint64_t) v;
}

static const char byte_suffix[] = "KMGTPE";

/* BYTES in the unit 1024^(I+1), at most one decimal: tenths, rounded half up, in 128 bits so the
 * top unit cannot overflow. */
static const char *format_bytes_in(char buf[static FORMAT_BYTES_MAX], uint64_t bytes, size_t i) {
        uint64_t unit = 1024;
        for (size_t j = 0; j < i; j++)
                unit *= 1024;
        uint64_t tenths = (uint64_t) (((unsigned __int128) bytes * 10 + unit / 2) / unit);
        if (tenths >= 1000 || tenths % 10 == 0)
                snprintf(buf, FORMAT_BYTES_MAX, "%" PRIu64 "%c", (tenths + 5) / 10, byte_suffix[i]);
        else
                snprintf(buf, FORMAT_BYTES_MAX, "%" PRIu64 ".%" PRIu64 "%c", tenths / 10, tenths % 10,
                         byte_suffix[i]);
        return buf;
}

/* The unit format_bytes() writes BYTES in (index into byte_suffix); BYTES >= 1024. */
static size_t bytes_unit(uint64_t bytes) {
        size_t i = 0;
        uint64_t unit = 1024;
        /* Up a unit when rounding reaches 1024 of this one ("1G", not "1024M"). */
        while (i + 1 < STRLEN(byte_suffix) && (uint64_t) (((unsigned __int128) bytes * 10 + unit / 2) / unit) >= 10240) {
                unit *= 1024;
                i++;
        }
        return i;
}

const char *format_bytes_change(char a[static FORMAT_BYTES_MAX], char b[static FORMAT_BYTES_MAX], uint64_t from,
                                uint64_t to) {
        assert(a);
        assert(b);
        format_bytes(a, from);
        format_bytes(b, to);
        if (from == to || strcmp(a, b) != 0 || from == SIZE_UNLIMITED || to == SIZE_UNLIMITED)
                return a;
        /* Both in the same unit, a smaller one each time, until they read apart: "1G -> 1G" says
         * nothing, "1024M -> 1038M" what changed. */
        for (size_t i = bytes_unit(MAX(from, to)); i > 0; i--) {
                format_bytes_in(a, from, i - 1);
                format_bytes_in(b, to, i - 1);
                if (strcmp(a, b) != 0)
                        return a;
        }
        snprintf(a, FORMAT_BYTES_MAX, "%" PRIu64 "B", from);
        snprintf(b, FORMAT_BYTES_MAX, "%" PRIu64 "B", to);
        return a;
}

const char *format_bytes(char buf[static FORMAT_BYTES_MAX], uint64_t bytes) {
        assert(buf);

        if (bytes == SIZE_UNLIMITED) {
                snprintf(buf, FORMAT_BYTES_MAX, "max");
                return buf;
        }
        if (bytes < 1024) {
                snprintf(buf, FORMAT_BYTES_MAX, "%" PRIu64 "B", bytes);
                return buf;
        }
        return format_bytes_in(buf, bytes, bytes_unit(bytes));
}

const char *format_timespan(char buf[static FORMAT_TIMESPAN_MAX], usec_t t) {
        assert(buf);
        static const struct {
                const char *suffix;
                usec_t usec;
        } table[] = {
                { "w", USEC_PER_WEEK }, { "d", USEC_PER_DAY },   { "h", USEC_PER_HOUR },
                { "m", USEC_PER_MINUTE }, { "s", USEC_PER_SEC }, { "ms", USEC_PER_MSEC },
                { "us", 1 },
        };

        if (t == USEC_INFINITY) {
                snprintf(buf, FORMAT_TIMESPAN_MAX, "never");
                return buf;
        }
        if (t == 0) {
                snprintf(buf, FORMAT_TIMESPAN_MAX, "0s");
                return buf;
        }

        size_t n = 0, shown = 0;
        /* Past ten seconds, fractions of a second are noise: "19s", not "19s891ms". */
        usec_t smallest = t >= 10 * USEC_PER_SEC ? USEC_PER_SEC : 1;
        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(table) && shown < 2 && table[i].usec >= smallest; i++) {
                usec_t k = t / table[i].usec;
                if (k == 0) {
                        if (shown > 0)
                                break; /* "2h" not "2h0m"; a gap ends the display */
                        continue;
                }
                n += (size_t) snprintf(buf + n, FORMAT_TIMESPAN_MAX - n, "%" PRIu64 "%s", k,
                                       table[i].suffix);
                t -= k * table[i].usec;
                shown++;
                /* Sub-second units end the display: "1s500ms", "500ms", never "500ms3us". */
                if (table[i].usec < USEC_PER_SEC)
                        break;
        }
        return buf;
}

const char *format_bp(char buf[static FORMAT_PERCENT_MAX], uint32_t bp) {
        assert(buf);
        if (bp % 100 == 0)
                snprintf(buf, FORMAT_PERCENT_MAX, "%u%%", bp / 100);
        else if (bp % 10 == 0)
                snprintf(buf, FORMAT_PERCENT_MAX, "%u.%u%%", bp / 100, (bp % 100) / 10);
        else
                snprintf(buf, FORMAT_PERCENT_MAX, "%u.%02u%%", bp / 100, bp % 100);
        return buf;
}

const char *format_rate(char buf[static FORMAT_RATE_MAX], double bytes_per_sec) {
        assert(buf);
        char b[FORMAT_BYTES_MAX];
        double per_hour = bytes_per_sec * 3600.0;
        bool neg = per_hour < 0;
        double mag = neg ? -per_hour : per_hour;

        if (!isfinite(mag) || mag >= 1.8e19)
                mag = 1.8e19;
        snprintf(buf, FORMAT_RATE_MAX, "%s%s/h", neg ? "-" : "", format_bytes(b, (uint64_t) llround(mag)));
        return buf;
}

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
        /* Proleptic Gregorian calendar arithmetic on 400-year eras. */
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (int64_t) (m > 2 ? m - 3 : m + 9) + 2) / 5 + (int64_t) d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

void civil_from_days(int64_t z, int64_t *ret_y, unsigned *ret_m, unsigned *ret_d) {
        assert(ret_y);
        assert(ret_m);
        assert(ret_d);
        z += 719468;
        int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        int64_t doe = z - era * 146097;
        int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        int64_t y = yoe + era * 400;
        int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        int64_t mp = (5 * doy + 2) / 153;
        unsigned d = (unsigned) (doy - (153 * mp + 2) / 5 + 1);
        unsigned m = (unsigned) (mp < 10 ? mp + 3 : mp - 9);
        *ret_y = y + (m <= 2);
        *ret_m = m;
        *ret_d = d;
}

const char *format_wall(char buf[static FORMAT_WALL_MAX], usec_t wall, int32_t utc_offset_sec) {
        assert(buf);
        int64_t secs = (int64_t) (wall / USEC_PER_SEC) + utc_offset_sec;
        int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
        int64_t sod = secs - days * 86400;
        int64_t y;
        unsigned m, d;

        civil_from_days(days, &y, &m, &d);
        snprintf(buf, FORMAT_WALL_MAX, "%04" PRId64 "-%02u-%02u %02u:%02u:%02u", y, m, d,
                 (unsigned) (sod / 3600), (unsigned) (sod / 60 % 60), (unsigned) (sod % 60));
        return buf;
}
