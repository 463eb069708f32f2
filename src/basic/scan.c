/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <string.h>

#include "memgov/scan.h"

bool span_eq(Span a, const char *s) {
        assert(s);
        size_t n = strlen(s);
        return a.n == n && memcmp(a.p, s, n) == 0;
}

bool span_startswith(Span a, const char *prefix) {
        assert(prefix);
        size_t n = strlen(prefix);
        return a.n >= n && memcmp(a.p, prefix, n) == 0;
}

bool span_endswith(Span a, const char *suffix) {
        assert(suffix);
        size_t n = strlen(suffix);
        return a.n >= n && memcmp(a.p + a.n - n, suffix, n) == 0;
}

Span span_strip(Span a) {
        while (a.n > 0 && (a.p[0] == ' ' || a.p[0] == '\t' || a.p[0] == '\r')) {
                a.p++;
                a.n--;
        }
        while (a.n > 0 && (a.p[a.n - 1] == ' ' || a.p[a.n - 1] == '\t' || a.p[a.n - 1] == '\r'))
                a.n--;
        return a;
}

void line_cursor_init(LineCursor *c, const char *buf, size_t len) {
        assert(c);
        c->p = buf;
        c->end = buf + len;
        c->lineno = 0;
}

int line_next(LineCursor *c, Span *ret_line) {
        assert(c);
        assert(ret_line);
        if (!c->p || c->p >= c->end)
                return 0;

        const char *nl = memchr(c->p, '\n', (size_t) (c->end - c->p));
        const char *e = nl ? nl : c->end;
        /* Kernel text files never contain NUL; one means the input is not what we think it is. */
        if (memchr(c->p, '\0', (size_t) (e - c->p)))
                return -EBADMSG;

        *ret_line = (Span) { c->p, (size_t) (e - c->p) };
        c->p = nl ? nl + 1 : c->end;
        c->lineno++;
        return 1;
}

bool span_next_field(Span *s, const char *seps, Span *ret_field) {
        assert(s);
        assert(seps);
        assert(ret_field);
        while (s->n > 0 && strchr(seps, s->p[0])) {
                s->p++;
                s->n--;
        }
        if (s->n == 0)
                return false;

        size_t i = 0;
        while (i < s->n && !strchr(seps, s->p[i]))
                i++;
        *ret_field = (Span) { s->p, i };
        s->p += i;
        s->n -= i;
        return true;
}

int span_to_u64(Span s, uint64_t *ret) {
        assert(ret);
        uint64_t v = 0;

        if (s.n == 0)
                return -EINVAL;
        for (size_t i = 0; i < s.n; i++) {
                if (s.p[i] < '0' || s.p[i] > '9')
                        return -EINVAL;
                uint64_t d = (uint64_t) (s.p[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int span_to_x64(Span s, uint64_t *ret) {
        assert(ret);
        uint64_t v = 0;

        if (s.n == 0 || s.n > 16)
                return s.n == 0 ? -EINVAL : -ERANGE;
        for (size_t i = 0; i < s.n; i++) {
                char c = s.p[i];
                unsigned d;
                if (c >= '0' && c <= '9')
                        d = (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        d = (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        d = (unsigned) (c - 'A' + 10);
                else
                        return -EINVAL;
                v = (v << 4) | d;
        }
        *ret = v;
        return 0;
}

int span_to_hundredths(Span s, uint32_t *ret) {
        assert(ret);
        const char *dot = memchr(s.p, '.', s.n);
        uint64_t whole, frac;
        int r;

        if (!dot || (size_t) (s.p + s.n - dot) != 3)
                return -EINVAL;
        r = span_to_u64((Span) { s.p, (size_t) (dot - s.p) }, &whole);
        if (r < 0)
                return r;
        r = span_to_u64((Span) { dot + 1, 2 }, &frac);
        if (r < 0)
                return r;
        if (whole > (UINT32_MAX - frac) / 100)
                return -ERANGE;
        *ret = (uint32_t) (whole * 100 + frac);
        return 0;
}

int span_copy(Span s, char *buf, size_t size) {
        assert(buf);
        if (s.n >= size)
                return -ENAMETOOLONG;
        memcpy(buf, s.p, s.n);
        buf[s.n] = '\0';
        return 0;
}
