/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pressure files (memory.pressure, /proc/pressure/memory and cpu): parse_psi(). Averages are shares (at most
 * 100.00 %); a parsed file printed back in the kernel's format parses to the same values. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-cgroup.h"

static bool line_eq(const PsiLine *a, const PsiLine *b) {
        return a->avg10 == b->avg10 && a->avg60 == b->avg60 && a->avg300 == b->avg300 && a->total == b->total;
}

static size_t print_line(char *buf, size_t size, const char *kind, const PsiLine *l) {
        int n = snprintf(buf, size, "%s avg10=%u.%02u avg60=%u.%02u avg300=%u.%02u total=%" PRIu64 "\n", kind,
                         l->avg10 / 100, l->avg10 % 100, l->avg60 / 100, l->avg60 % 100, l->avg300 / 100,
                         l->avg300 % 100, l->total);
        fuzz_assert(n > 0 && (size_t) n < size);
        return (size_t) n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Psi p, again;

        memset(&p, 0x33, sizeof(p));
        int r = parse_psi((const char *) data, size, &p);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENODATA);
        if (r < 0) {
                /* Untouched. */
                const uint8_t *b = (const uint8_t *) &p;
                for (size_t i = 0; i < sizeof(p); i++)
                        fuzz_assert(b[i] == 0x33);
                return 0;
        }
        fuzz_assert(p.some.avg10 <= 10000 && p.some.avg60 <= 10000 && p.some.avg300 <= 10000);
        if (p.has_full)
                fuzz_assert(p.full.avg10 <= 10000 && p.full.avg60 <= 10000 && p.full.avg300 <= 10000);
        else {
                PsiLine zero = {};
                fuzz_assert(line_eq(&p.full, &zero));
        }

        char text[512];
        size_t n = print_line(text, sizeof(text), "some", &p.some);
        if (p.has_full)
                n += print_line(text + n, sizeof(text) - n, "full", &p.full);
        fuzz_assert(parse_psi(text, n, &again) == 0);
        fuzz_assert(again.has_full == p.has_full);
        fuzz_assert(line_eq(&again.some, &p.some));
        fuzz_assert(line_eq(&again.full, &p.full));
        return 0;
}
