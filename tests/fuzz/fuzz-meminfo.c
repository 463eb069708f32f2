/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/meminfo: parse_meminfo(). Round trip through the kernel's format. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MemInfo m, again;

        memset(&m, 0x44, sizeof(m));
        int r = parse_meminfo((const char *) data, size, &m);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENODATA);
        if (r < 0) {
                const uint8_t *b = (const uint8_t *) &m;
                for (size_t i = 0; i < sizeof(m); i++)
                        fuzz_assert(b[i] == 0x44);
                return 0;
        }
        fuzz_assert(m.total % 1024 == 0 && m.available % 1024 == 0 && m.swap_total % 1024 == 0);

        char text[512];
        int n = snprintf(text, sizeof(text),
                         "MemTotal:       %8" PRIu64 " kB\nMemFree:          123456 kB\nMemAvailable:   %8" PRIu64
                         " kB\nSwapTotal:      %8" PRIu64 " kB\nHugePages_Total:       0\n",
                         m.total / 1024, m.available / 1024, m.swap_total / 1024);
        fuzz_assert(n > 0 && (size_t) n < sizeof(text));
        fuzz_assert(parse_meminfo(text, (size_t) n, &again) == 0);
        fuzz_assert(again.total == m.total && again.available == m.available && again.swap_total == m.swap_total);
        return 0;
}
