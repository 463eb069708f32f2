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
