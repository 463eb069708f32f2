/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "test-util.h"

#include "memgov/parse-cgroup.h"

/* Captured from real kernels: see tests/data/kernel-* /README. */
static const char *const kernels[] = { "kernel-6.1" };

static void test_memory_stat_real(void **state) {
        for (size_t k = 0; k < ELEMENTSOF(kernels); k++) {
                const char *files[] = { "memory.stat", "memory.stat.under-pressure" };
                for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                        char path[128];
                        size_t len;
                        MemoryStat s;

                        snprintf(path, sizeof(path), "%s/%s", kernels[k], files[i]);
                        char *buf = fixture(path, &len);
                        assert_int_equal(parse_memory_stat(buf, len, &s), 0);
                        /* The LRU lists add up to what the kernel counts as anon and file (give or
                         * take the unevictable list and pages in flight). */
                        assert_true(s.anon > 0);
                        assert_true(s.inactive_file + s.active_file <= s.file + s.unevictable + (1 << 20));
                        assert_true(s.inactive_anon + s.active_anon <= s.anon + s.shmem + (1 << 20));
                        /* What memgov explain's kernel part is made of: every real kernel has them. */
                        assert_true(s.slab > 0 && s.kernel_stack > 0 && s.pagetables > 0);
                        /* Every truncation is refused or parsed, never read past. */
                        for (size_t n = 0; n < len; n++) {
                                char *copy = malloc(n + 1);
                                memcpy(copy, buf, n);
                                int r = parse_memory_stat(copy, n, &s);
                                assert_true(r == 0 || r == -ENODATA || r == -EBADMSG);
                                free(copy);
                        }
                        free(buf);
                }
        }
}

static void test_memory_stat_synthetic(void **state) {
        MemoryStat s;
        const char ok[] = "anon 1282469888\nfile 373141504\nkernel 12345\nnewkey 5\ninactive_anon 1000\n"
                          "active_anon 2000\ninactive_file 284663808\nactive_file 88477696\n";
        assert_int_equal(parse_memory_stat(ok, strlen(ok), &s), 0);
        assert_int_equal(s.anon, 1282469888ULL);
        assert_int_equal(s.inactive_file, 284663808ULL);
        assert_int_equal(s.kernel, 12345);

        /* No trailing newline is still a file. */
        assert_int_equal(parse_memory_stat(ok, strlen(ok) - 1, &s), 0);

        const char *bad[] = {
                "anon 1\nfile 2\ninactive_anon 1\nactive_anon 1\ninactive_file 1\nactive_file x\n",
                "anon 1\nanon 2\nfile 2\ninactive_anon 1\nactive_anon 1\ninactive_file 1\nactive_file 1\n",
                "anon 1 2\nfile 2\ninactive_anon 1\nactive_anon 1\ninactive_file 1\nactive_file 1\n",
                "anon\nfile 2\n",
                "anon -1\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(parse_memory_stat(bad[i], strlen(bad[i]), &s), -EBADMSG);

        const char big[] = "anon 99999999999999999999\nfile 1\n";
        assert_int_equal(parse_memory_stat(big, strlen(big), &s), -ERANGE);
        const char missing[] = "anon 1\nfile 2\n";
        assert_int_equal(parse_memory_stat(missing, strlen(missing), &s), -ENODATA);
        const char nul[] = "anon 1\0\nfile 2\n";
        assert_int_equal(parse_memory_stat(nul, sizeof(nul) - 1, &s), -EBADMSG);
}

static void test_memory_events(void **state) {
        MemoryEvents e;
        size_t len;
        char *buf;

        buf = fixture("kernel-6.1/memory.events.oom", &len);
        assert_int_equal(parse_memory_events(buf, len, &e), 0);
        assert_true(e.oom_kill >= 1);
        assert_true(e.oom >= 1);
        assert_true(e.max >= 1);
        free(buf);

        buf = fixture("kernel-6.1/memory.events.under-pressure", &len);
        assert_int_equal(parse_memory_events(buf, len, &e), 0);
        assert_true(e.high > 0);
        free(buf);

        /* 5.4 had no oom_group_kill: still valid. */
        const char old[] = "low 0\nhigh 17\nmax 3\noom 1\noom_kill 1\n";
        assert_int_equal(parse_memory_events(old, strlen(old), &e), 0);
        assert_int_equal(e.high, 17);
        assert_int_equal(e.oom_group_kill, 0);

        const char missing[] = "low 0\nhigh 17\n";
        assert_int_equal(parse_memory_events(missing, strlen(missing), &e), -ENODATA);
}

static void test_psi(void **state) {
        Psi p;
        size_t len;
        char *buf;

        const char *files[] = { "kernel-6.1/memory.pressure", "kernel-6.1/proc-pressure-memory",
                                "kernel-6.18/pressure-memory" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                buf = fixture(files[i], &len);
                assert_int_equal(parse_psi(buf, len, &p), 0);
                assert_true(p.has_full);
                assert_true(p.some.total >= p.full.total);
                free(buf);
        }

        const char ok[] = "some avg10=1.53 avg60=0.87 avg300=0.21 total=3457912\n"
                          "full avg10=100.00 avg60=0.51 avg300=0.12 total=2085530\n";
        assert_int_equal(parse_psi(ok, strlen(ok), &p), 0);
        assert_int_equal(p.some.avg10, 153);
        assert_int_equal(p.some.avg300, 21);
        assert_int_equal(p.some.total, 3457912);
        assert_int_equal(p.full.avg10, 10000);

        /* cpu.pressure before 5.13: no full line. */
        const char cpu[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_int_equal(parse_psi(cpu, strlen(cpu), &p), 0);
        assert_false(p.has_full);

        const char *bad[] = {
                "some avg10=1.5 avg60=0.87 avg300=0.21 total=3\n",
                "some avg60=0.87 avg10=1.53 avg300=0.21 total=3\n",
                "some avg10=1.53 avg60=0.87 avg300=0.21\n",
                "some avg10=1.53 avg60=0.87 avg300=0.21 total=3 extra=1\n",
                "half avg10=1.53 avg60=0.87 avg300=0.21 total=3\n",
                "some avg10=1.53 avg60=0.87 avg300=0.21 total=3\nsome avg10=1.53 avg60=0.87 avg300=0.21 total=3\n",
                "some avg10=101.00 avg60=0.87 avg300=0.21 total=3\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_true(parse_psi(bad[i], strlen(bad[i]), &p) < 0);
        assert_int_equal(parse_psi("", 0, &p), -ENODATA);
}

static void test_value(void **state) {
        uint64_t v;

        assert_int_equal(parse_cgroup_value("max\n", 4, &v), 0);
        assert_int_equal(v, SIZE_UNLIMITED);
        assert_int_equal(parse_cgroup_value("68719476736\n", 12, &v), 0);
        assert_int_equal(v, 68719476736ULL);
        assert_int_equal(parse_cgroup_value("4096", 4, &v), 0);
        assert_int_equal(v, 4096);
        assert_int_equal(parse_cgroup_value("", 0, &v), -EBADMSG);
        assert_int_equal(parse_cgroup_value("\n", 1, &v), -EBADMSG);
        assert_int_equal(parse_cgroup_value("1\n2\n", 4, &v), -EBADMSG);
        assert_int_equal(parse_cgroup_value("12k\n", 4, &v), -EBADMSG);
        assert_int_equal(parse_cgroup_value("18446744073709551615\n", 21, &v), -ERANGE);
        assert_int_equal(parse_cgroup_value("99999999999999999999\n", 21, &v), -ERANGE);

        size_t len;
        char *buf = fixture("kernel-6.1/memory.max", &len);
        assert_int_equal(parse_cgroup_value(buf, len, &v), 0);
        free(buf);
        buf = fixture("kernel-6.1/memory.current", &len);
        assert_int_equal(parse_cgroup_value(buf, len, &v), 0);
        assert_true(v > 0);
        free(buf);
}

static void test_path_resolve(void **state) {
        char b[64];

        assert_int_equal(cgroup_path_resolve("/", "/system.slice/mariadb.service", b, sizeof(b)), 0);
        assert_string_equal(b, "/system.slice/mariadb.service");
        assert_int_equal(cgroup_path_resolve("/kubepods/pod1/sidecar", "/../db-0", b, sizeof(b)), 0);
        assert_string_equal(b, "/kubepods/pod1/db-0");
        assert_int_equal(cgroup_path_resolve("/kubepods/pod1/sidecar", "/", b, sizeof(b)), 0);
        assert_string_equal(b, "/kubepods/pod1/sidecar");
        assert_int_equal(cgroup_path_resolve("/a/b/", "/../../c/./d", b, sizeof(b)), 0);
        assert_string_equal(b, "/c/d");
        assert_int_equal(cgroup_path_resolve("/a", "/../..", b, sizeof(b)), -EINVAL);
        assert_int_equal(cgroup_path_resolve("/a", "relative", b, sizeof(b)), -EINVAL);
        assert_int_equal(cgroup_path_resolve("/", "/0123456789012345678901234567890123456789012345678901234567890123",
                                             b, sizeof(b)),
                         -ENAMETOOLONG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_memory_stat_real), cmocka_unit_test(test_memory_stat_synthetic),
                cmocka_unit_test(test_memory_events),    cmocka_unit_test(test_psi),
                cmocka_unit_test(test_value),            cmocka_unit_test(test_path_resolve),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
