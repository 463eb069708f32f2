/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/smaps_rollup: parse_smaps_rollup(). Sizes are whole kB; a parsed file printed back
 * in the kernel's format parses to the same values. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-proc.h"
#include "memgov/strutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SmapsRollup s, again;

        memset(&s, 0x11, sizeof(s));
        int r = parse_smaps_rollup((const char *) data, size, &s);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENODATA);
        if (r < 0) {
                const uint8_t *b = (const uint8_t *) &s;
                for (size_t i = 0; i < sizeof(s); i++)
                        fuzz_assert(b[i] == 0x11);
                return 0;
        }
        const uint64_t v[] = { s.rss, s.pss, s.pss_anon, s.anonymous, s.private_dirty, s.lazyfree, s.swap };
        for (size_t i = 0; i < ELEMENTSOF(v); i++)
                fuzz_assert(v[i] % 1024 == 0);
        if (!s.has_pss_anon)
                fuzz_assert(s.pss_anon == 0);

        char text[1024];
        StrBuf b;
        strbuf_init(&b, text, sizeof(text));
        strbuf_printf(&b, "55d1e5c6f000-7ffd2a1f3000 ---p 00000000 00:00 0                          [rollup]\n");
        strbuf_printf(&b, "Rss:            %8" PRIu64 " kB\nPss:            %8" PRIu64 " kB\n", s.rss / 1024,
                      s.pss / 1024);
        if (s.has_pss_anon)
                strbuf_printf(&b, "Pss_Anon:       %8" PRIu64 " kB\n", s.pss_anon / 1024);
        strbuf_printf(&b, "Anonymous:      %8" PRIu64 " kB\nPrivate_Dirty:  %8" PRIu64 " kB\n", s.anonymous / 1024,
                      s.private_dirty / 1024);
        strbuf_printf(&b, "LazyFree:       %8" PRIu64 " kB\nSwap:           %8" PRIu64 " kB\n", s.lazyfree / 1024,
                      s.swap / 1024);
        fuzz_assert(!b.truncated);
        size_t n = b.len;
        fuzz_assert(parse_smaps_rollup(text, n, &again) == 0);
        fuzz_assert(again.rss == s.rss && again.pss == s.pss && again.pss_anon == s.pss_anon &&
                    again.anonymous == s.anonymous && again.private_dirty == s.private_dirty &&
                    again.lazyfree == s.lazyfree && again.swap == s.swap && again.has_pss_anon == s.has_pss_anon);
        return 0;
}
