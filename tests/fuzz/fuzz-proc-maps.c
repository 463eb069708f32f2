/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/maps: parse_proc_maps() (allocator detection, libc's base for the trim injection)
 * and proc_maps_find() (the mapping holding an address); the same lines as /proc/PID/smaps
 * (proc_smaps_add_line: the heaps' resident bytes, for memgov explain). */
#include <inttypes.h>

#include "fuzz.h"
#include "memgov/parse-proc.h"

static void check_lib(const MappedLib *l) {
        if (!l->found) {
                fuzz_assert(l->path[0] == '\0' && l->base == 0 && l->base_end == 0);
                return;
        }
        fuzz_assert_string(l->path, sizeof(l->path));
        fuzz_assert(l->path[0] == '/');
        fuzz_assert(l->base <= l->base_end);
}

static void check_find(const char *buf, size_t len, uint64_t addr) {
        uint64_t start = 1, end = 0;
        char perms[5] = "xxxx";

        int r = proc_maps_find(buf, len, addr, &start, &end, perms);
        fuzz_assert(r == 0 || r == -ENOENT || r == -EBADMSG);
        if (r < 0)
                return;
        fuzz_assert(start <= addr && addr < end);
        fuzz_assert(strlen(perms) == 4);
}

/* Line by line as smaps: whatever the lines, a verdict and, for a whole file, the same mappings
 * as parse_proc_maps() sees when no line is a "Key: value" one. */
static void check_smaps(const char *buf, size_t size) {
        ProcMaps m;
        proc_maps_init(&m);
        const char *p = buf, *end = buf + size;
        int r = 0;
        while (p < end && r >= 0) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                r = proc_smaps_add_line(&m, p, n);
                fuzz_assert(r == 0 || r == -EBADMSG || r == -ENAMETOOLONG || r == -ERANGE);
                p += n + 1;
        }
        fuzz_assert(m.arena_heaps <= m.mappings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *buf = (const char *) data;
        ProcMaps m;

        check_smaps(buf, size);

        memset(&m, 0, sizeof(m));
        int r = parse_proc_maps(buf, size, &m);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ENODATA || r == -ENAMETOOLONG);

        /* Addresses around the first mapping, whatever the verdict. */
        check_find(buf, size, 0);
        check_find(buf, size, UINT64_MAX);
        check_find(buf, size, 0x7f0000000000);
        if (r < 0)
                return 0;

        fuzz_assert(m.mappings > 0);
        fuzz_assert(m.anon_rw <= m.mappings);
        fuzz_assert(m.arena_heaps <= m.mappings);
        fuzz_assert(m.allocator >= ALLOCATOR_UNKNOWN && m.allocator < _ALLOCATOR_MAX);
        check_lib(&m.libc);
        check_lib(&m.allocator_lib);
        if (m.allocator_lib.found)
                fuzz_assert(m.allocator == ALLOCATOR_JEMALLOC || m.allocator == ALLOCATOR_TCMALLOC);
        if (m.allocator == ALLOCATOR_GLIBC)
                fuzz_assert(m.libc.found);
        if (m.allocator == ALLOCATOR_UNKNOWN)
                fuzz_assert(!m.libc.found);

        /* A file parse_proc_maps() accepts, proc_maps_find() reads too: libc's first mapping
         * holds its base address. */
        check_find(buf, size, m.libc.base);
        if (m.libc.found && m.libc.base < m.libc.base_end) {
                uint64_t start, end;
                char perms[5];
                fuzz_assert(proc_maps_find(buf, size, m.libc.base, &start, &end, perms) == 0);
                fuzz_assert(start <= m.libc.base && m.libc.base < end);
        }
        if (m.libc.found && m.libc.base_end > 0)
                check_find(buf, size, m.libc.base_end - 1);
        return 0;
}
