/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memory.stat: parse_memory_stat(). A parsed file printed back the way the kernel prints it
 * parses to the same values; a refused one leaves the result untouched. */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-cgroup.h"

static const struct {
        const char *name;
        size_t offset;
} fields[] = {
        { "anon", offsetof(MemoryStat, anon) },
        { "file", offsetof(MemoryStat, file) },
        { "kernel", offsetof(MemoryStat, kernel) },
        { "shmem", offsetof(MemoryStat, shmem) },
        { "file_mapped", offsetof(MemoryStat, file_mapped) },
        { "file_dirty", offsetof(MemoryStat, file_dirty) },
        { "inactive_anon", offsetof(MemoryStat, inactive_anon) },
        { "active_anon", offsetof(MemoryStat, active_anon) },
        { "inactive_file", offsetof(MemoryStat, inactive_file) },
        { "active_file", offsetof(MemoryStat, active_file) },
        { "unevictable", offsetof(MemoryStat, unevictable) },
        { "slab", offsetof(MemoryStat, slab) },
        { "sock", offsetof(MemoryStat, sock) },
        { "kernel_stack", offsetof(MemoryStat, kernel_stack) },
        { "pagetables", offsetof(MemoryStat, pagetables) },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MemoryStat s, before, again;

        memset(&s, 0xa5, sizeof(s));
        before = s;
        int r = parse_memory_stat((const char *) data, size, &s);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ERANGE || r == -ENODATA);
        if (r < 0) {
                fuzz_assert(memcmp(&s, &before, sizeof(s)) == 0);
                return 0;
        }

        char text[1024];
        size_t n = 0;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                n += (size_t) snprintf(text + n, sizeof(text) - n, "%s %" PRIu64 "\n", fields[i].name,
                                       *(const uint64_t *) ((const char *) &s + fields[i].offset));
        fuzz_assert(n < sizeof(text));
        fuzz_assert(parse_memory_stat(text, n, &again) == 0);
        fuzz_assert(memcmp(&s, &again, sizeof(s)) == 0);

        /* Parsing is a function of the bytes alone. */
        fuzz_assert(parse_memory_stat((const char *) data, size, &again) == 0);
        fuzz_assert(memcmp(&s, &again, sizeof(s)) == 0);
        return 0;
}
