/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Command lines of hooks, as policy files write them: words separated by blanks, a word in
 * double quotes may hold blanks ("\"" and "\\" inside). No shell ever sees them: no variables,
 * no globbing, no redirections; the first word is an absolute path. */

#define ARGV_MAX 32

/* Splits s into at most ARGV_MAX words written into buf (NUL-separated), with pointers in
 * ret_argv (NULL-terminated). -EINVAL for an unterminated quote or a relative program,
 * -E2BIG for too many words or too little room. An empty s gives 0 words. */
int argv_split(const char *s, char *buf, size_t buf_size, char *ret_argv[static ARGV_MAX + 1], unsigned *ret_n);
