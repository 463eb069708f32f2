/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memgov/macro.h"

/* The libFuzzer entry points. Each fuzz-*.c defines LLVMFuzzerTestOneInput; LLVMFuzzerInitialize
 * is optional (weak), for set-up done once. The same files link with libFuzzer (-Dfuzzing=true)
 * or with standalone-main.c, which replays a corpus (the regression tests of the unit suite). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant: checked in every build (no NDEBUG), and a crash libFuzzer records. */
#define fuzz_assert(expr)                                                                           \
        do {                                                                                        \
                if (!(expr)) {                                                                      \
                        fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #expr); \
                        abort();                                                                    \
                }                                                                                   \
        } while (0)

/* A C string within size bytes: NUL-terminated before the end of its buffer. */
#define fuzz_assert_string(buf, size) fuzz_assert(memchr((buf), '\0', (size)) != NULL)

/* The input as a NUL-terminated copy, exactly size + 1 bytes, for parsers that take C strings
 * (AddressSanitizer then catches a read past its end). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        if (size > 0)
                memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* The input cut at its first NUL (policy text and traces are text). */
static inline size_t fuzz_text_len(const uint8_t *data, size_t size) {
        const uint8_t *nul = memchr(data, '\0', size);
        return nul ? (size_t) (nul - data) : size;
}

/* A fresh copy of a buffer with exactly its size, for the same reason. */
static inline char *fuzz_memdup(const char *p, size_t n) {
        char *s = malloc(n ? n : 1);
        if (!s)
                abort();
        if (n > 0)
                memcpy(s, p, n);
        else
                s[0] = '\0';
        return s;
}
