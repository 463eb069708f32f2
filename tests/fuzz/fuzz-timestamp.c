/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Timestamps of plain traces: parse_timestamp(). The offset is whole minutes within +-14h, and a
 * parsed time is a real calendar time: printed back with format_wall() in the offset it was
 * written in, it is the date and time the input wrote (a leap second :60 reads as :59). */
#include "fuzz.h"
#include "memgov/trace.h"
#include "memgov/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *) data;
        usec_t t = 7;
        int32_t off = 7;

        int r = parse_timestamp(s, size, &t, &off);
        fuzz_assert(r == 0 || r == -EINVAL);
        if (r < 0) {
                fuzz_assert(t == 7 && off == 7);
                return 0;
        }
        fuzz_assert(size >= 16);
        fuzz_assert(off >= -14 * 3600 && off <= 14 * 3600 && off % 60 == 0);

        char wall[FORMAT_WALL_MAX];
        format_wall(wall, t, off);
        fuzz_assert(strlen(wall) == 19);
        /* YYYY-MM-DD and HH:MM as written ('T' or ' ' between them). */
        fuzz_assert(memcmp(wall, s, 10) == 0);
        fuzz_assert(memcmp(wall + 11, s + 11, 5) == 0);
        if (size > 16 && s[16] == ':') {
                if (s[17] == '6' && s[18] == '0')
                        fuzz_assert(memcmp(wall + 16, ":59", 3) == 0);
                else
                        fuzz_assert(memcmp(wall + 16, s + 16, 3) == 0);
        } else
                fuzz_assert(memcmp(wall + 16, ":00", 3) == 0);

        /* And it reads back as the same second. */
        char again[64];
        int32_t a = off < 0 ? -off : off;
        snprintf(again, sizeof(again), "%.10sT%s%c%02d:%02d", wall, wall + 11, off < 0 ? '-' : '+', a / 3600,
                 a / 60 % 60);
        usec_t t2;
        int32_t off2;
        fuzz_assert(parse_timestamp(again, strlen(again), &t2, &off2) == 0);
        fuzz_assert(off2 == off);
        fuzz_assert(t2 == t / USEC_PER_SEC * USEC_PER_SEC);
        return 0;
}
