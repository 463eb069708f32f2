/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Single-value cgroup files (memory.current, memory.high, memory.max, memory.peak...):
 * parse_cgroup_value(). "max" is the only way to say "no limit"; a parsed value printed back as
 * the kernel prints it parses to the same value. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint64_t v = 42, again = 0;

        int r = parse_cgroup_value((const char *) data, size, &v);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ERANGE);
        if (r < 0)
                return 0;

        char text[32];
        int n = v == SIZE_UNLIMITED ? snprintf(text, sizeof(text), "max\n")
                                    : snprintf(text, sizeof(text), "%" PRIu64 "\n", v);
        fuzz_assert(n > 0 && (size_t) n < sizeof(text));
        fuzz_assert(parse_cgroup_value(text, (size_t) n, &again) == 0);
        fuzz_assert(again == v);
        /* Without the newline too. */
        fuzz_assert(parse_cgroup_value(text, (size_t) n - 1, &again) == 0);
        fuzz_assert(again == v);

        /* "max" only when the input says max. */
        if (v == SIZE_UNLIMITED)
                fuzz_assert(memmem(data, size, "max", 3) != NULL);
        return 0;
}
