/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memory.events (and memory.events.local): parse_memory_events(). Round trip through the
 * kernel's format; a refused file leaves the result untouched. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MemoryEvents e, before, again;

        memset(&e, 0x5a, sizeof(e));
        before = e;
        int r = parse_memory_events((const char *) data, size, &e);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENODATA);
        if (r < 0) {
                fuzz_assert(memcmp(&e, &before, sizeof(e)) == 0);
                return 0;
        }

        char text[512];
        int n = snprintf(text, sizeof(text),
                         "low %" PRIu64 "\nhigh %" PRIu64 "\nmax %" PRIu64 "\noom %" PRIu64 "\noom_kill %" PRIu64
                         "\noom_group_kill %" PRIu64 "\n",
                         e.low, e.high, e.max, e.oom, e.oom_kill, e.oom_group_kill);
        fuzz_assert(n > 0 && (size_t) n < sizeof(text));
        fuzz_assert(parse_memory_events(text, (size_t) n, &again) == 0);
        fuzz_assert(memcmp(&e, &again, sizeof(e)) == 0);
        return 0;
}
