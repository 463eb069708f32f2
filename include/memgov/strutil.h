/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Edit distance (insertions, deletions, substitutions, adjacent transpositions), capped: any
 * distance above cap is returned as cap + 1. Inputs longer than 64 bytes return cap + 1. */
unsigned edit_distance(const char *a, const char *b, unsigned cap);

/* The candidate closest to word when it is close enough to be a likely typo, or NULL. */
const char *closest_match(const char *word, const char *const *candidates, size_t n);

/* Whether name is one of the comma-separated words of list ("mariadbd,mysqld"). */
bool name_in_list(const char *name, const char *list);

/* The part of an absolute path below the directory dir, as an absolute path ("/usr/lib/x" for
 * dir "/srv/root" and path "/srv/root/usr/lib/x"; path itself for dir "/"), or NULL where path
 * does not lie strictly below dir (or either is not absolute). */
const char *path_below(const char *dir, const char *path);

/* A decimal number made of digits only (no sign, no space, no suffix) that fits 64 bits. */
bool parse_decimal_u64(const char *s, uint64_t *ret);

/* Appends to a fixed buffer, always NUL-terminated; returns false once it had to truncate. */
typedef struct StrBuf {
        char *buf;
        size_t size, len;
        bool truncated;
} StrBuf;

void strbuf_init(StrBuf *b, char *buf, size_t size);
_printf_(2, 3) bool strbuf_printf(StrBuf *b, const char *fmt, ...);

/* Text from the server's side (a process name, a session's user, host or query, a path in its
 * root, an error it sent) made safe for every output memgov writes it to (a terminal, the log,
 * the journal, JSON, the metrics): each control character is written as \xNN, byte by byte —
 * C0 (0x00-0x1f), DEL (0x7f), C1 (U+0080-U+009F, as UTF-8 encodes it) — and so is each byte
 * that is not part of valid UTF-8 (a lone 0x9b is CSI to a terminal in 8-bit mode). Printable
 * ASCII and valid UTF-8 stay as they are. Into buf, cut short to fit, never inside an escape or
 * a character; returns buf. */
char *escape_untrusted(const char *s, char *buf, size_t size);
/* The size of buf that holds s escaped whole, its NUL included. */
size_t escape_untrusted_size(const char *s);
/* Whether s would be changed by it. */
bool untrusted_needs_escape(const char *s);
