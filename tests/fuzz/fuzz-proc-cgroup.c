/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/PID/cgroup: parse_proc_cgroup(), then cgroup_path_resolve() of the paths it gives
 * against cgroup namespace roots, into buffers of several sizes. A resolved path is absolute and
 * normal (no "//", ".", ".." or trailing '/'), and never longer than the buffer. */
#include "fuzz.h"
#include "memgov/parse-cgroup.h"
#include "memgov/parse-proc.h"

static void check_normal(const char *p) {
        fuzz_assert(p[0] == '/');
        if (p[1] == '\0')
                return;
        fuzz_assert(p[strlen(p) - 1] != '/');
        fuzz_assert(!strstr(p, "//"));
        for (const char *c = p; c; c = strchr(c + 1, '/')) {
                const char *e = strchrnul(c + 1, '/');
                size_t n = (size_t) (e - c - 1);
                fuzz_assert(n > 0);
                fuzz_assert(!(n == 1 && c[1] == '.'));
                fuzz_assert(!(n == 2 && c[1] == '.' && c[2] == '.'));
        }
}

static void resolve(const char *ns_root, const char *path) {
        static const size_t sizes[] = { 2, 8, 64, PATH_MAX };
        char first[PATH_MAX];
        int first_r = 1;

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                /* Exactly the size given: AddressSanitizer sees any write past it. */
                char *buf = malloc(sizes[i]);
                if (!buf)
                        abort();
                int r = cgroup_path_resolve(ns_root, path, buf, sizes[i]);
                fuzz_assert(r == 0 || r == -EINVAL || r == -ENAMETOOLONG);
                if (first_r == 0) {
                        /* Resolved in a smaller buffer: a larger one gives the same answer. */
                        fuzz_assert(r == 0);
                        fuzz_assert(streq(buf, first));
                } else if (r == 0) {
                        fuzz_assert_string(buf, sizes[i]);
                        check_normal(buf);
                        first_r = 0;
                        snprintf(first, sizeof(first), "%s", buf);
                }
                free(buf);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProcCgroup *pc = malloc(sizeof(ProcCgroup));
        if (!pc)
                abort();

        int r = parse_proc_cgroup((const char *) data, size, pc);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ENODATA || r == -ENAMETOOLONG);
        if (r == 0) {
                fuzz_assert(pc->has_unified || pc->has_memory_v1);
                fuzz_assert_string(pc->unified, sizeof(pc->unified));
                fuzz_assert_string(pc->memory_v1, sizeof(pc->memory_v1));
                fuzz_assert(pc->has_unified == (pc->unified[0] == '/'));
                fuzz_assert(pc->has_memory_v1 == (pc->memory_v1[0] == '/'));

                static const char *const roots[] = { "/", "/kubepods/pod1/sidecar", "/system.slice/" };
                for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                        if (pc->has_unified)
                                resolve(roots[i], pc->unified);
                        if (pc->has_memory_v1)
                                resolve(roots[i], pc->memory_v1);
                }
        }
        free(pc);
        return 0;
}
