/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "memgov/strutil.h"

unsigned edit_distance(const char *a, const char *b, unsigned cap) {
        assert(a);
        assert(b);
        size_t n = strlen(a), m = strlen(b);
        unsigned d[65][65];

        if (n > 64 || m > 64)
                return cap + 1;
        for (size_t i = 0; i <= n; i++)
                d[i][0] = (unsigned) i;
        for (size_t j = 0; j <= m; j++)
                d[0][j] = (unsigned) j;
        for (size_t i = 1; i <= n; i++)
                for (size_t j = 1; j <= m; j++) {
                        unsigned cost = a[i - 1] == b[j - 1] ? 0 : 1;
                        unsigned v = MIN(d[i - 1][j] + 1, d[i][j - 1] + 1);
                        v = MIN(v, d[i - 1][j - 1] + cost);
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                                v = MIN(v, d[i - 2][j - 2] + 1);
                        d[i][j] = v;
                }
        return MIN(d[n][m], cap + 1);
}

const char *closest_match(const char *word, const char *const *candidates, size_t n) {
        assert(word);
        assert(candidates);
        size_t len = strlen(word);
        /* One typo per three characters, at least one and at most three. */
        unsigned cap = (unsigned) CLAMP(len / 3, 1, 3);
        const char *best = NULL;
        unsigned best_d = cap + 1;

        for (size_t i = 0; i < n; i++) {
                unsigned d = edit_distance(word, candidates[i], cap);
                if (d < best_d) {
                        best_d = d;
                        best = candidates[i];
                }
        }
        return best;
}

void strbuf_init(StrBuf *b, char *buf, size_t size) {
        assert(b);
        assert(buf);
        b->buf = buf;
        b->size = size;
        b->len = 0;
        b->truncated = false;
        if (size > 0)
                buf[0] = '\0';
}

bool strbuf_printf(StrBuf *b, const char *fmt, ...) {
        assert(b);
        assert(fmt);
        va_list ap;

        if (b->truncated || b->len + 1 >= b->size) {
                b->truncated = true;
                return false;
        }
        va_start(ap, fmt);
        int k = vsnprintf(b->buf + b->len, b->size - b->len, fmt, ap);
        va_end(ap);
        if (k < 0) {
                b->truncated = true;
                return false;
        }
        if ((size_t) k >= b->size - b->len) {
                b->len = b->size - 1;
                b->truncated = true;
                return false;
        }
        b->len += (size_t) k;
        return true;
}

bool name_in_list(const char *name, const char *list) {
        assert(name);
        assert(list);
        size_t n = strlen(name);
        for (const char *p = list; *p;) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t) (e - p) : strlen(p);
                if (len == n && strncmp(p, name, n) == 0)
                        return true;
                p += len + (e ? 1 : 0);
        }
        return false;
}

const char *path_below(const char *dir, const char *path) {
        assert(dir);
        assert(path);
        size_t n = strlen(dir);

        if (dir[0] != '/' || path[0] != '/')
                return NULL;
        while (n > 1 && dir[n - 1] == '/')
                n--;
        if (n == 1)
                return path;
        if (strncmp(dir, path, n) != 0 || path[n] != '/')
                return NULL;
        while (path[n + 1] == '/')
                n++;
        return path[n + 1] ? path + n : NULL;
}

bool parse_decimal_u64(const char *s, uint64_t *ret) {
        assert(ret);
        /* By hand, not strtoull(): this file is part of the pure core, which reads no errno. */
        uint64_t v = 0;
        if (!s || !*s)
                return false;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return false;
                unsigned digit = (unsigned) (*s - '0');
                if (v > (UINT64_MAX - digit) / 10)
                        return false;
                v = v * 10 + digit;
        }
        *ret = v;
        return true;
}

/* The length of the valid UTF-8 sequence at p (at most n bytes) and its code point, or 0 when it
 * is none (a stray continuation byte, a cut or overlong sequence, a surrogate, past U+10FFFF). */
static size_t utf8_sequence(const unsigned char *p, size_t n, uint32_t *ret) {
        size_t len;
        uint32_t c, min;
        if (p[0] < 0x80) {
                *ret = p[0];
                return 1;
        }
        if ((p[0] & 0xe0) == 0xc0)
                len = 2, c = p[0] & 0x1f, min = 0x80;
        else if ((p[0] & 0xf0) == 0xe0)
                len = 3, c = p[0] & 0x0f, min = 0x800;
        else if ((p[0] & 0xf8) == 0xf0)
                len = 4, c = p[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                c = c << 6 | (p[i] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret = c;
        return len;
}

/* Bytes at p to write as \xNN (k > 0), or to copy as they are (k < 0); |k| bytes either way. */
static ssize_t untrusted_run(const unsigned char *p, size_t n) {
        uint32_t c;
        size_t len = utf8_sequence(p, n, &c);
        if (len == 0)
                return 1;
        if (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f))
                return (ssize_t) len;
        return -(ssize_t) len;
}

char *escape_untrusted(const char *s, char *buf, size_t size) {
        assert(s);
        assert(buf);
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s), j = 0;
        static const char hex[] = "0123456789abcdef";

        if (size == 0)
                return buf;
        while (n > 0) {
                ssize_t k = untrusted_run(p, n);
                size_t len = (size_t) (k < 0 ? -k : k), out = k < 0 ? len : 4 * len;
                if (j + out >= size)
                        break;
                for (size_t i = 0; i < len; i++) {
                        if (k < 0) {
                                buf[j++] = (char) p[i];
                                continue;
                        }
                        buf[j++] = '\\';
                        buf[j++] = 'x';
                        buf[j++] = hex[p[i] >> 4];
                        buf[j++] = hex[p[i] & 15];
                }
                p += len;
                n -= len;
        }
        buf[j] = '\0';
        return buf;
}

size_t escape_untrusted_size(const char *s) {
        assert(s);
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s), total = 1;
        while (n > 0) {
                ssize_t k = untrusted_run(p, n);
                size_t len = (size_t) (k < 0 ? -k : k);
                total += k < 0 ? len : 4 * len;
                p += len;
                n -= len;
        }
        return total;
}

bool untrusted_needs_escape(const char *s) {
        assert(s);
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s);
        while (n > 0) {
                ssize_t k = untrusted_run(p, n);
                if (k > 0)
                        return true;
                p += (size_t) -k;
                n -= (size_t) -k;
        }
        return false;
}
