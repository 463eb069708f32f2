/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Helpers to walk kernel text files held in a buffer. Nothing here allocates. */

typedef struct Span {
        const char *p;
        size_t n;
} Span;

#define SPAN_NULL ((Span) { NULL, 0 })

static inline Span span_from_str(const char *s) {
        return (Span) { s, s ? strlen(s) : 0 };
}

bool span_eq(Span a, const char *s);
bool span_startswith(Span a, const char *prefix);
bool span_endswith(Span a, const char *suffix);
Span span_strip(Span a);

/* Cursor over the lines of a buffer. A final line without '\n' is still a line.
 * Returns 1 with the line (without '\n'), 0 at the end, -EBADMSG on a NUL byte. */
typedef struct LineCursor {
        const char *p, *end;
        unsigned lineno;
} LineCursor;

void line_cursor_init(LineCursor *c, const char *buf, size_t len);
int line_next(LineCursor *c, Span *ret_line);

/* Splits off the next field separated by any of seps (runs of separators count as one).
 * Returns false when no field is left. */
bool span_next_field(Span *s, const char *seps, Span *ret_field);

/* Unsigned decimal; the whole span must be digits. -EINVAL / -ERANGE. */
int span_to_u64(Span s, uint64_t *ret);
/* Hexadecimal without prefix (addresses in /proc/PID/maps). */
int span_to_x64(Span s, uint64_t *ret);
/* "12.34" -> 1234: PSI averages, exactly two decimals. */
int span_to_hundredths(Span s, uint32_t *ret);

/* Copies a span into a NUL-terminated buffer; -ENAMETOOLONG when it does not fit. */
int span_copy(Span s, char *buf, size_t size);
