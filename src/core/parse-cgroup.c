/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "memgov/parse-cgroup.h"
#include "memgov/scan.h"

typedef struct FlatKey {
        const char *name;
        size_t offset;
        bool required;
} FlatKey;

/* Flat-keyed files: one "key value" pair per line. Unknown keys are skipped; a key that appears
 * twice or a line that is not "key value" is malformed. */
static int parse_flat_keyed(const char *buf, size_t len, const FlatKey *keys, size_t n_keys,
                            void *ret) {
        uint64_t seen = 0;
        LineCursor c;
        Span line;
        int r;

        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0) {
                Span key, value, extra;

                if (line.n == 0)
                        continue;
                if (!span_next_field(&line, " ", &key) || !span_next_field(&line, " ", &value) ||
                    span_next_field(&line, " ", &extra))
                        return -EBADMSG;

                for (size_t i = 0; i < n_keys; i++) {
                        if (!span_eq(key, keys[i].name))
                                continue;
                        if (seen & (UINT64_C(1) << i))
                                return -EBADMSG;
                        r = span_to_u64(value, (uint64_t *) ((char *) ret + keys[i].offset));
                        if (r < 0)
                                return r == -ERANGE ? -ERANGE : -EBADMSG;
                        seen |= UINT64_C(1) << i;
                        break;
                }
        }
        if (r < 0)
                return r;

        for (size_t i = 0; i < n_keys; i++)
                if (keys[i].required && !(seen & (UINT64_C(1) << i)))
                        return -ENODATA;
        return 0;
}

/* memory.stat, e.g.:
 *   anon 1282469888
 *   file 373141504
 *   ...
 *   inactive_file 284663808
 */
int parse_memory_stat(const char *buf, size_t len, MemoryStat *ret) {
        static const FlatKey keys[] = {
                { "anon", offsetof(MemoryStat, anon), true },
                { "file", offsetof(MemoryStat, file), true },
                { "kernel", offsetof(MemoryStat, kernel), false },
                { "shmem", offsetof(MemoryStat, shmem), false },
                { "file_mapped", offsetof(MemoryStat, file_mapped), false },
                { "file_dirty", offsetof(MemoryStat, file_dirty), false },
                { "inactive_anon", offsetof(MemoryStat, inactive_anon), true },
                { "active_anon", offsetof(MemoryStat, active_anon), true },
                { "inactive_file", offsetof(MemoryStat, inactive_file), true },
                { "active_file", offsetof(MemoryStat, active_file), true },
                { "unevictable", offsetof(MemoryStat, unevictable), false },
                { "slab", offsetof(MemoryStat, slab), false },
                { "sock", offsetof(MemoryStat, sock), false },
                { "kernel_stack", offsetof(MemoryStat, kernel_stack), false },
                { "pagetables", offsetof(MemoryStat, pagetables), false },
        };
        MemoryStat s = {};
        int r = parse_flat_keyed(buf, len, keys, ELEMENTSOF(keys), &s);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

/* memory.events, e.g.:
 *   low 0
 *   high 4711
 *   max 18
 *   oom 1
 *   oom_kill 1
 *   oom_group_kill 0
 */
int parse_memory_events(const char *buf, size_t len, MemoryEvents *ret) {
        static const FlatKey keys[] = {
                { "low", offsetof(MemoryEvents, low), true },
                { "high", offsetof(MemoryEvents, high), true },
                { "max", offsetof(MemoryEvents, max), true },
                { "oom", offsetof(MemoryEvents, oom), true },
                { "oom_kill", offsetof(MemoryEvents, oom_kill), true },
                { "oom_group_kill", offsetof(MemoryEvents, oom_group_kill), false },
        };
        MemoryEvents e = {};
        int r = parse_flat_keyed(buf, len, keys, ELEMENTSOF(keys), &e);
        if (r < 0)
                return r;
        *ret = e;
        return 0;
}

/* One PSI line after its "some"/"full" word:
 *   avg10=1.53 avg60=0.87 avg300=0.21 total=3457912
 */
static int parse_psi_fields(Span rest, PsiLine *ret) {
        static const char *const names[] = { "avg10=", "avg60=", "avg300=", "total=" };
        PsiLine l = {};
        Span field;
        unsigned i = 0;
        int r;

        while (span_next_field(&rest, " ", &field)) {
                if (i >= ELEMENTSOF(names) || !span_startswith(field, names[i]))
                        return -EBADMSG;
                Span v = { field.p + strlen(names[i]), field.n - strlen(names[i]) };
                if (i < 3) {
                        uint32_t *avg = i == 0 ? &l.avg10 : i == 1 ? &l.avg60 : &l.avg300;
                        r = span_to_hundredths(v, avg);
                        /* An average above 100 % is not a stall share. */
                        if (r == 0 && *avg > 10000)
                                r = -ERANGE;
                } else
                        r = span_to_u64(v, &l.total);
                if (r < 0)
                        return r == -ERANGE ? -ERANGE : -EBADMSG;
                i++;
        }
        if (i != ELEMENTSOF(names))
                return -EBADMSG;
        *ret = l;
        return 0;
}

/* memory.pressure (and /proc/pressure/memory), e.g.:
 *   some avg10=1.53 avg60=0.87 avg300=0.21 total=3457912
 *   full avg10=0.98 avg60=0.51 avg300=0.12 total=2085530
 */
int parse_psi(const char *buf, size_t len, Psi *ret) {
        Psi p = {};
        bool has_some = false;
        LineCursor c;
        Span line;
        int r;

        line_cursor_init(&c, buf, len);
        while ((r = line_next(&c, &line)) > 0) {
                Span kind;
                if (line.n == 0)
                        continue;
                if (!span_next_field(&line, " ", &kind))
                        return -EBADMSG;
                if (span_eq(kind, "some") && !has_some) {
                        r = parse_psi_fields(line, &p.some);
                        has_some = true;
                } else if (span_eq(kind, "full") && !p.has_full) {
                        r = parse_psi_fields(line, &p.full);
                        p.has_full = true;
                } else
                        return -EBADMSG;
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!has_some)
                return -ENODATA;
        *ret = p;
        return 0;
}

/* memory.max / memory.high / memory.current, e.g. "max" or "68719476736". */
int parse_cgroup_value(const char *buf, size_t len, uint64_t *ret) {
        Span s = span_strip((Span) { buf, len });

        /* Exactly one line, optionally ending in '\n'. */
        if (s.n > 0 && s.p[s.n - 1] == '\n')
                s.n--;
        if (s.n == 0 || memchr(s.p, '\n', s.n) || memchr(s.p, '\0', s.n))
                return -EBADMSG;
        if (span_eq(s, "max")) {
                *ret = SIZE_UNLIMITED;
                return 0;
        }
        int r = span_to_u64(s, ret);
        if (r == 0 && *ret == SIZE_UNLIMITED)
                return -ERANGE; /* the kernel never prints UINT64_MAX; it says "max" */
        return r == -ERANGE ? -ERANGE : r < 0 ? -EBADMSG : 0;
}

int cgroup_path_resolve(const char *ns_root, const char *path, char *buf, size_t size) {
        size_t n = 0;

        if (!ns_root || !path || path[0] != '/' || ns_root[0] != '/' || size < 2)
                return -EINVAL;

        /* Start from the namespace root, unless the path is already absolute in the hierarchy
         * (no ".." anywhere and root "/"), then apply each component of path. */
        size_t rl = strlen(ns_root);
        if (rl >= size)
                return -ENAMETOOLONG;
        memcpy(buf, ns_root, rl + 1);
        n = rl;
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';

        Span rest = span_from_str(path), comp;
        while (span_next_field(&rest, "/", &comp)) {
                if (span_eq(comp, "."))
                        continue;
                if (span_eq(comp, "..")) {
                        if (n <= 1)
                                return -EINVAL;
                        while (n > 0 && buf[n - 1] != '/')
                                n--;
                        if (n > 1)
                                n--; /* drop the separator too, but keep the root "/" */
                        buf[n] = '\0';
                        continue;
                }
                size_t need = n + (n > 1 ? 1 : 0) + comp.n + 1;
                if (need > size)
                        return -ENAMETOOLONG;
                if (n > 1)
                        buf[n++] = '/';
                memcpy(buf + n, comp.p, comp.n);
                n += comp.n;
                buf[n] = '\0';
        }
        return 0;
}
