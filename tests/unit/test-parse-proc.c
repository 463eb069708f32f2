/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include "memgov/parse-proc.h"
#include "memgov/proc-access.h"

/* Every proper prefix of a real file is either parsed or refused cleanly, never read past. */
static void check_prefixes(const char *buf, size_t len, int (*parse)(const char *, size_t, void *), void *ret) {
        for (size_t n = 0; n < len; n++) {
                char *copy = malloc(n ? n : 1);
                assert_non_null(copy);
                memcpy(copy, buf, n);
                int r = parse(copy, n, ret);
                assert_true(r == 0 || r == -EBADMSG || r == -ENODATA || r == -ERANGE || r == -ENAMETOOLONG);
                free(copy);
        }
}

static int status_cb(const char *b, size_t n, void *r) {
        return parse_proc_status(b, n, r);
}
static int rollup_cb(const char *b, size_t n, void *r) {
        return parse_smaps_rollup(b, n, r);
}
static int cgroup_cb(const char *b, size_t n, void *r) {
        return parse_proc_cgroup(b, n, r);
}
static int maps_cb(const char *b, size_t n, void *r) {
        return parse_proc_maps(b, n, r);
}
static int stat_cb(const char *b, size_t n, void *r) {
        return parse_proc_stat(b, n, r);
}

static void test_status_real(void **state) {
        const char *files[] = { "kernel-6.18/proc-status", "kernel-6.1/proc-status" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                size_t len;
                char *buf = fixture(files[i], &len);
                ProcStatus s;

                assert_int_equal(parse_proc_status(buf, len, &s), 0);
                assert_true(s.name[0] != '\0');
                assert_true(s.tgid > 0);
                /* The captured processes: python3 with four extra threads and tens of MB of heap. */
                assert_true(s.threads >= 5);
                assert_true(s.vm_rss >= (32ULL << 20));
                assert_true(s.rss_anon >= (32ULL << 20));
                assert_true(s.vm_rss >= s.rss_anon);
                assert_int_equal(s.tracer_pid, 0);
                assert_true(s.seccomp >= 0);
                assert_false(s.shadow_stack);
                check_prefixes(buf, len, status_cb, &s);
                free(buf);
        }
}

static void test_status_synthetic(void **state) {
        const char ok[] = "Name:\tmariadbd\nState:\tS (sleeping)\nTgid:\t812\nPPid:\t1\nTracerPid:\t4242\n"
                          "Uid:\t106\t106\t106\t106\nNSpid:\t812\t1\nVmRSS:\t  412340 kB\nRssAnon:\t 400000 kB\n"
                          "Threads:\t39\nCapEff:\t000001ffffffffff\nSeccomp:\t2\nx86_Thread_features:\tshstk wrss\n";
        ProcStatus s;

        assert_int_equal(parse_proc_status(ok, strlen(ok), &s), 0);
        assert_string_equal(s.name, "mariadbd");
        assert_int_equal(s.state, 'S');
        assert_int_equal(s.tracer_pid, 4242);
        assert_int_equal(s.ruid, 106);
        assert_int_equal(s.nspid, 1);
        assert_int_equal(s.vm_rss, 412340ULL * 1024);
        assert_int_equal(s.threads, 39);
        assert_int_equal(s.seccomp, 2);
        assert_true(s.shadow_stack);
        assert_int_equal(s.cap[CAP_SET_EFFECTIVE], 0x1ffffffffffULL);
        assert_int_equal(s.cap_seen, 1u << CAP_SET_EFFECTIVE);

        const char *bad[] = {
                "Name:\tx\nState:\tS\nTgid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nThreads:\tmany\n",
                "Name:\tx\nState:\tS\nTgid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nThreads:\t1\nVmRSS:\t12 MB\n",
                "Name:\tx\nState:\tS\nTgid:\t99999999999\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nThreads:\t1\n",
                "no colon here\n",
                "Name:\tx\nState:\tS\nTgid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nThreads:\t1\nVmRSS:\t999999999999999999999 kB\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_true(parse_proc_status(bad[i], strlen(bad[i]), &s) < 0);

        /* The ids file access is checked against: the fourth Uid and Gid fields, and the groups. */
        const char ids[] = "Name:\tmariadbd\nState:\tS\nTgid:\t9\nPPid:\t1\nTracerPid:\t0\nUid:\t106\t106\t106\t107\n"
                           "Gid:\t111\t111\t111\t112\nGroups:\t4 24 1000 \nThreads:\t1\nCapEff:\t0000000000000000\n";
        assert_int_equal(parse_proc_status(ids, strlen(ids), &s), 0);
        assert_int_equal(s.euid, 106);
        assert_int_equal(s.fsuid, 107);
        assert_int_equal(s.fsgid, 112);
        assert_int_equal(s.n_groups, 3);
        assert_int_equal(s.groups[2], 1000);
        assert_false(s.groups_truncated);
        /* what it may write: owner bits for its fsuid, group bits for its groups, the rest others' */
        assert_true(proc_may_write(&s, 107, 0, 0600));
        assert_false(proc_may_write(&s, 107, 112, 0460)); /* the owner's bits, even where the group's allow */
        assert_false(proc_may_write(&s, 106, 0, 0644));   /* euid is not what the kernel checks */
        assert_true(proc_may_write(&s, 0, 24, 0664));
        assert_true(proc_may_write(&s, 0, 112, 0620));
        assert_false(proc_may_write(&s, 0, 0, 0644));
        assert_true(proc_may_write(&s, 0, 0, 0646));
        s.cap[CAP_SET_EFFECTIVE] = UINT64_C(1) << 1; /* CAP_DAC_OVERRIDE */
        assert_true(proc_may_write(&s, 0, 0, 0444));
        s.cap_seen = 0;
        assert_false(proc_may_write(&s, 0, 0, 0444));
        /* more groups than kept: the first kept, the rest said */
        char many[2048] = "Name:\tx\nState:\tS\nTgid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nThreads:\t1\nGroups:\t";
        for (int g = 0; g < PROC_GROUPS_MAX + 3; g++)
                snprintf(many + strlen(many), sizeof(many) - strlen(many), "%d ", g + 1);
        strcat(many, "\n");
        assert_int_equal(parse_proc_status(many, strlen(many), &s), 0);
        assert_int_equal(s.n_groups, PROC_GROUPS_MAX);
        assert_true(s.groups_truncated);
        assert_true(proc_may_write(&s, 1000, 9999, 0620));  /* 9999 may be among those not kept */
        assert_false(proc_may_write(&s, 1000, 9999, 0600));
        const char bad_gid[] = "Name:\tx\nState:\tS\nTgid:\t1\nPPid:\t0\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\tx\nThreads:\t1\n";
        assert_int_equal(parse_proc_status(bad_gid, strlen(bad_gid), &s), -EBADMSG);

        /* A NUL byte in the middle is not a status file. */
        const char nul[] = "Name:\tx\0y\nState:\tS\n";
        assert_int_equal(parse_proc_status(nul, sizeof(nul) - 1, &s), -EBADMSG);
        /* Missing required fields. */
        assert_int_equal(parse_proc_status("Name:\tx\n", 8, &s), -ENODATA);
}

static void test_smaps_rollup(void **state) {
        size_t len;
        char *buf = fixture("kernel-6.18/proc-smaps_rollup", &len);
        SmapsRollup r;

        assert_int_equal(parse_smaps_rollup(buf, len, &r), 0);
        assert_true(r.rss >= (64ULL << 20));
        assert_true(r.anonymous >= (64ULL << 20));
        assert_true(r.has_pss_anon);
        assert_true(r.pss <= r.rss);
        check_prefixes(buf, len, rollup_cb, &r);
        free(buf);

        const char no_header[] = "Rss:   12 kB\n";
        assert_int_equal(parse_smaps_rollup(no_header, strlen(no_header), &r), -EBADMSG);
        const char old[] = "00400000-7ffd0000 ---p 00000000 00:00 0   [rollup]\nRss:  100 kB\nPss:  50 kB\nAnonymous:  20 kB\n";
        assert_int_equal(parse_smaps_rollup(old, strlen(old), &r), 0);
        assert_false(r.has_pss_anon);
        assert_int_equal(r.anonymous, 20 * 1024);
}

static void test_proc_cgroup(void **state) {
        size_t len;
        char *buf = fixture("kernel-6.18/proc-cgroup.hybrid", &len);
        ProcCgroup c;

        assert_int_equal(parse_proc_cgroup(buf, len, &c), 0);
        assert_true(c.has_unified);
        assert_string_equal(c.unified, "/");
        assert_true(c.has_memory_v1);
        assert_string_equal(c.memory_v1, "/system.slice/mariadb.service");
        check_prefixes(buf, len, cgroup_cb, &c);
        free(buf);

        const char v2[] = "0::/system.slice/mariadb.service\n";
        assert_int_equal(parse_proc_cgroup(v2, strlen(v2), &c), 0);
        assert_string_equal(c.unified, "/system.slice/mariadb.service");
        assert_false(c.has_memory_v1);

        const char ns[] = "0::/../db-0\n";
        assert_int_equal(parse_proc_cgroup(ns, strlen(ns), &c), 0);
        assert_string_equal(c.unified, "/../db-0");

        /* A path with a colon in it is still one path. */
        const char colon[] = "0::/odd:name\n";
        assert_int_equal(parse_proc_cgroup(colon, strlen(colon), &c), 0);
        assert_string_equal(c.unified, "/odd:name");

        const char *bad[] = { "0::relative\n", "x::/a\n", "0:/a\n", "0::/a\n0::/b\n", "" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_true(parse_proc_cgroup(bad[i], strlen(bad[i]), &c) < 0);
}

static void test_maps_allocators(void **state) {
        static const struct {
                const char *file;
                Allocator expect;
                const char *lib;
        } cases[] = {
                { "kernel-6.18/proc-maps.glibc", ALLOCATOR_GLIBC, NULL },
                { "kernel-6.18/proc-maps.jemalloc", ALLOCATOR_JEMALLOC, "libjemalloc.so.2" },
                { "kernel-6.18/proc-maps.tcmalloc", ALLOCATOR_TCMALLOC, "libtcmalloc.so.4" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t len;
                char *buf = fixture(cases[i].file, &len);
                ProcMaps m;

                assert_int_equal(parse_proc_maps(buf, len, &m), 0);
                assert_int_equal(m.allocator, cases[i].expect);
                assert_true(m.libc.found);
                assert_string_contains(m.libc.path, "libc.so.6");
                assert_true(m.libc.base > 0);
                assert_true(m.libc.inode > 0);
                assert_true(m.anon_rw > 0);
                assert_true(m.anon_rw_bytes >= (64ULL << 20) || cases[i].expect != ALLOCATOR_GLIBC);
                if (cases[i].lib) {
                        assert_true(m.allocator_lib.found);
                        assert_string_contains(m.allocator_lib.path, cases[i].lib);
                } else
                        assert_false(m.allocator_lib.found);
                check_prefixes(buf, len, maps_cb, &m);
                free(buf);
        }
}

static void test_maps_synthetic(void **state) {
        const char text[] =
                "55d0c3a00000-55d0c3a21000 rw-p 00000000 00:00 0                          [heap]\n"
                "7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0 \n"
                "7f3a1c021000-7f3a20000000 ---p 00000000 00:00 0 \n"
                "7f3a20a28000-7f3a20a4e000 r--p 00000000 fe:01 1046534                    /usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)\n"
                "7f3a20a4e000-7f3a20ba3000 r-xp 00026000 fe:01 1046534                    /usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)\n"
                "7f3a30000000-7f3a30001000 rw-p 00000000 00:00 0                          [anon:arena]\n"
                "7ffd0000000-7ffd0021000 rw-p 00000000 00:00 0                          [stack]\n"
                "7f3a40000000-7f3a40001000 r--p 00000000 fe:01 77 /opt/my lib/libc-2.31.so\n";
        ProcMaps m;

        assert_int_equal(parse_proc_maps(text, strlen(text), &m), 0);
        assert_int_equal(m.mappings, 8);
        assert_int_equal(m.anon_rw, 3); /* heap, the unnamed rw mapping, the named anon one */
        assert_int_equal(m.anon_rw_bytes, 0x21000 + 0x21000 + 0x1000);
        assert_int_equal(m.allocator, ALLOCATOR_GLIBC);
        assert_string_equal(m.libc.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        assert_true(m.libc.deleted);
        assert_int_equal(m.libc.base, 0x7f3a20a28000ULL);
        assert_int_equal(m.libc.dev_major, 0xfe);
        assert_int_equal(m.libc.dev_minor, 1);
        assert_int_equal(m.libc.inode, 1046534);

        const char *bad[] = {
                "zz-10 rw-p 00000000 00:00 0\n",
                "20-10 rw-p 00000000 00:00 0\n",
                "10-20 rw 00000000 00:00 0\n",
                "10-20 rw-p 00000000 0000 0\n",
                "10-20 rw-p 00000000 00:00\n",
                "10-20 rw-p 00000000 00:00 x\n",
                "10-200000000000000000 rw-p 00000000 00:00 0\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(parse_proc_maps(bad[i], strlen(bad[i]), &m), -EBADMSG);
        assert_int_equal(parse_proc_maps("", 0, &m), -ENODATA);
        /* The path exactly as printed: a name may end in blanks (nothing stripped at the end), and
         * "\012" may be a newline the kernel escaped or four characters of the name: unclear. */
        const char odd[] =
                "7f00-8f00 r--p 00000000 fe:01 9                          /opt/lib\\012x/libc.so.6\n"
                "9f00-af00 r--p 00000000 fe:01 8                          /opt/jemalloc/libjemalloc.so.2  \n";
        assert_int_equal(parse_proc_maps(odd, strlen(odd), &m), 0);
        assert_string_equal(m.libc.path, "/opt/lib\\012x/libc.so.6");
        assert_true(m.libc.path_unclear);
        assert_string_equal(m.allocator_lib.path, "/opt/jemalloc/libjemalloc.so.2  ");
        assert_false(m.allocator_lib.path_unclear);
        /* A musl process: no glibc, no allocator we know. */
        const char musl[] = "7f00-8f00 r-xp 00000000 fe:01 5 /lib/ld-musl-x86_64.so.1\n";
        assert_int_equal(parse_proc_maps(musl, strlen(musl), &m), 0);
        assert_int_equal(m.allocator, ALLOCATOR_UNKNOWN);
}

static void test_proc_stat(void **state) {
        size_t len;
        char *buf = fixture("kernel-6.18/proc-stat", &len);
        ProcStat s;

        assert_int_equal(parse_proc_stat(buf, len, &s), 0);
        assert_int_equal(s.state, 'S');
        assert_true(s.ppid > 0);
        assert_true(s.starttime > 0);
        check_prefixes(buf, len, stat_cb, &s);
        free(buf);

        const char odd[] = "42 (a) b (c)) R 7 42 42 0 -1 4194560 1 0 0 0 11 12 0 0 20 0 1 0 9876 1000 10\n";
        assert_int_equal(parse_proc_stat(odd, strlen(odd), &s), 0);
        assert_int_equal(s.state, 'R');
        assert_int_equal(s.ppid, 7);
        assert_int_equal(s.utime, 11);
        assert_int_equal(s.stime, 12);
        assert_int_equal(s.starttime, 9876);
        assert_int_equal(parse_proc_stat("42 (a) R 7", 10, &s), -EBADMSG);
        assert_int_equal(parse_proc_stat("no paren", 8, &s), -EBADMSG);
}

static void test_allocator_names(void **state) {
        Allocator a;
        for (int i = 0; i < _ALLOCATOR_MAX; i++) {
                assert_int_equal(allocator_from_string(allocator_to_string((Allocator) i), &a), 0);
                assert_int_equal(a, i);
        }
        assert_int_equal(allocator_from_string("mimalloc", &a), -EINVAL);
}

/* glibc's arena heaps: 64 MiB reserved at a 64 MiB boundary, in use then PROT_NONE, anonymous. */
static void test_maps_arena_heaps(void **state) {
        static const char text[] =
                "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"      /* heap 1: 132K in use */
                "7f0000021000-7f0004000000 ---p 00000000 00:00 0 \n"      /* ... the rest reserved */
                "7f0004000000-7f0008000000 rw-p 00000000 00:00 0 \n"      /* heap 2: all in use */
                "7f0009000000-7f000a000000 rw-p 00000000 00:00 0 \n"      /* not at a boundary */
                "7f000c000000-7f000c021000 rw-p 00000000 00:00 0 \n"      /* a file between: no heap */
                "7f000c021000-7f000d000000 r--p 00000000 08:01 42 /usr/lib/x \n"
                "7f000d000000-7f0010000000 ---p 00000000 00:00 0 \n"
                "7f0010000000-7f0018000000 rw-p 00000000 00:00 0 \n"      /* 128 MiB: a pool, not a heap */
                "7f0018000000-7f0018021000 rw-p 00000000 00:00 0 [heap]\n" /* named: not an arena's */
                "7f0018021000-7f001c000000 ---p 00000000 00:00 0 \n";
        ProcMaps m;
        assert_int_equal(parse_proc_maps(text, strlen(text), &m), 0);
        assert_int_equal(m.arena_heaps, 2);
}

/* The same in /proc/PID/smaps: the heaps' resident bytes, the main one's and the arenas', and
 * nothing of a mapping that is no heap. */
static void test_smaps_heap_rss(void **state) {
        static const char *const lines[] = {
                "55d0c0000000-55d0c0100000 rw-p 00000000 00:00 0                          [heap]",
                "Size:               1024 kB",
                "Rss:                 512 kB",
                "VmFlags: rd wr mr mw me ac sd",
                "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 ", /* an arena heap: 132K in use */
                "Rss:                 100 kB",
                "7f0000021000-7f0004000000 ---p 00000000 00:00 0 ",
                "Rss:                   0 kB",
                "7f0004000000-7f0008000000 rw-p 00000000 00:00 0 ", /* a heap all in use */
                "Rss:               65536 kB",
                "7f0009000000-7f000a000000 rw-p 00000000 00:00 0 ", /* no heap: not at a boundary */
                "Rss:                4096 kB",
                "7f000c000000-7f000c021000 rw-p 00000000 00:00 0 ", /* a run cut by a file: no heap */
                "Rss:                 132 kB",
                "7f000c021000-7f000d000000 r--p 00000000 08:01 42 /usr/lib/x",
                "Rss:                  64 kB",
        };
        ProcMaps m;
        proc_maps_init(&m);
        for (size_t i = 0; i < ELEMENTSOF(lines); i++)
                assert_int_equal(proc_smaps_add_line(&m, lines[i], strlen(lines[i])), 0);
        assert_int_equal(proc_maps_finish(&m), 0);
        assert_int_equal(m.arena_heaps, 2);
        assert_int_equal(m.heap_rss, (512 + 100 + 65536) * 1024ULL);
        assert_int_equal(proc_smaps_add_line(&m, "Rss: lots", 9), -EBADMSG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_real),     cmocka_unit_test(test_status_synthetic),
                cmocka_unit_test(test_smaps_rollup),    cmocka_unit_test(test_proc_cgroup),
                cmocka_unit_test(test_maps_allocators), cmocka_unit_test(test_maps_arena_heaps), cmocka_unit_test(test_smaps_heap_rss), cmocka_unit_test(test_maps_synthetic),
                cmocka_unit_test(test_proc_stat),       cmocka_unit_test(test_allocator_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
