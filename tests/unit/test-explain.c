/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memgov explain's arithmetic (pure): the parts add up to the total whatever was measured, a
 * measure larger than what is left is said as overcounted, the allocator's figures come before
 * the server's own bookkeeping, and each finding appears on its evidence and only then. */
#include "test-util.h"

#include <stdlib.h>
#include <string.h>

#include "memgov/explain.h"
#include "memgov/units.h"

#define M (UINT64_C(1) << 20)

static const Finding *find(const Explanation *e, FindingKind k);

/* The finding, which must be there. */
static const Finding *must(const Explanation *e, FindingKind k) {
        const Finding *f = find(e, k);
        if (!f) {
                fail_msg("no %s finding", finding_kind_to_string(k));
                abort();
        }
        return f;
}

static uint64_t sum(const Explanation *e) {
        uint64_t s = 0;
        for (ExplainPart p = 0; p < _PART_MAX; p++)
                if (e->has[p])
                        s += e->parts[p];
        return s;
}

static const Finding *find(const Explanation *e, FindingKind k) {
        for (unsigned i = 0; i < e->n_findings; i++)
                if (e->findings[i].kind == k)
                        return &e->findings[i];
        return NULL;
}

/* A MariaDB in a cgroup: 1000M, of it 100M page cache, 10M shmem, 50M kernel, 840M anonymous of
 * which the server holds 800M. */
static ExplainInput mariadb(void) {
        ExplainInput in = {
                .has_cgroup = true,
                .current = 1000 * M,
                .limit = 1200 * M,
                .stat = { .anon = 840 * M, .file = 110 * M, .shmem = 10 * M, .active_file = 60 * M,
                          .inactive_file = 40 * M },
                .has_process = true,
                .rss_anon = 800 * M,
                .rss_file = 30 * M,
                .cpus = 4,
                .arena_heaps = 31,
                .flavor = SERVER_MARIADB,
                .has_pool = true,
                .pool = 400 * M,
                .has_accounted = true,
                .accounted = 150 * M,
                .accounted_source = "Memory_used",
                .has_sessions = true,
                .sessions_total = 100 * M,
                .n_sessions = 20,
                .n_top = 1,
                .top = { { .id = 7, .user = "app", .host = "10.0.0.5:4000", .command = "Sleep", .memory = 40 * M } },
                .sessions_median = 2 * M,
                .has_allocator = true,
                .allocator = { .allocator = ALLOCATOR_GLIBC, .source = "mallinfo2", .in_use = 170 * M, .heap = 370 * M,
                               .free = 200 * M, .releasable = 200 * M },
        };
        return in;
}

static void test_cgroup_parts_add_up(void **state) {
        ExplainInput in = mariadb();
        Explanation e;
        explain(&in, "mariadb.service", &e);
        assert_string_equal(e.total_source, "memory.current");
        assert_int_equal(e.total, 1000 * M);
        assert_int_equal(sum(&e), e.total);
        assert_int_equal(e.parts[PART_PAGE_CACHE], 100 * M);
        assert_int_equal(e.parts[PART_SHMEM], 10 * M);
        /* 1000 - 840 anonymous - 110 file */
        assert_int_equal(e.parts[PART_KERNEL], 50 * M);
        assert_int_equal(e.parts[PART_OTHER_PROCESSES], 40 * M);
        assert_int_equal(e.parts[PART_POOL], 400 * M);
        assert_int_equal(e.parts[PART_SESSIONS], 100 * M);
        assert_int_equal(e.parts[PART_ALLOCATOR_FREE], 200 * M);
        /* Memory_used less the sessions' share */
        assert_int_equal(e.parts[PART_SERVER_OTHER], 50 * M);
        /* mallinfo2's 170M in use less the 150M the server counts */
        assert_int_equal(e.parts[PART_IN_USE_UNCOUNTED], 20 * M);
        assert_int_equal(e.parts[PART_UNACCOUNTED], 30 * M);
        assert_int_equal(e.overcounted, 0);
}

/* Without a cgroup: the process's resident set. */
static void test_process_parts_add_up(void **state) {
        ExplainInput in = mariadb();
        in.has_cgroup = false;
        in.rss_shmem = 5 * M;
        Explanation e;
        explain(&in, NULL, &e);
        assert_string_equal(e.total_source, "RSS");
        assert_int_equal(e.total, 835 * M);
        assert_int_equal(sum(&e), e.total);
        assert_false(e.has[PART_KERNEL]);
        assert_false(e.has[PART_OTHER_PROCESSES]);
        assert_int_equal(e.parts[PART_PAGE_CACHE], 30 * M);
}

/* A pool not all touched, a server that counts more than its allocator handed out: what does
 * not fit is overcounted, never a part, and the allocator's measure keeps its place. */
static void test_overcounted(void **state) {
        ExplainInput in = mariadb();
        in.pool = 700 * M;
        in.accounted = 561 * M;
        Explanation e;
        explain(&in, NULL, &e);
        assert_int_equal(sum(&e), e.total);
        /* 800 anonymous: 700 pool, 100 sessions, nothing left for the allocator's 200 free */
        assert_int_equal(e.parts[PART_POOL], 700 * M);
        assert_int_equal(e.parts[PART_SESSIONS], 100 * M);
        assert_int_equal(e.parts[PART_ALLOCATOR_FREE], 0);
        assert_int_equal(e.parts[PART_UNACCOUNTED], 0);
        /* 200 free, and the 70 Memory_used may claim (170 in use less the 100 of the sessions);
         * the 391 it says beyond that are its bookkeeping */
        assert_int_equal(e.overcounted, 200 * M + 70 * M);
        assert_int_equal(e.server_count_excess, (461 - 70) * M);
        assert_int_equal(e.parts[PART_IN_USE_UNCOUNTED], 0);

        in = mariadb();
        in.accounted = 561 * M;
        explain(&in, NULL, &e);
        assert_int_equal(e.parts[PART_ALLOCATOR_FREE], 200 * M);
        assert_int_equal(e.parts[PART_SERVER_OTHER], 70 * M);
        assert_int_equal(e.parts[PART_IN_USE_UNCOUNTED], 0);
        assert_int_equal(e.parts[PART_UNACCOUNTED], 30 * M);
        assert_int_equal(e.overcounted, 0);
        assert_int_equal(e.server_count_excess, (461 - 70) * M);
        assert_int_equal(sum(&e), e.total);
}

/* Nothing measured: no total, no parts, no findings. */
static void test_nothing(void **state) {
        ExplainInput in = {};
        Explanation e;
        explain(&in, NULL, &e);
        assert_null(e.total_source);
        assert_int_equal(e.n_findings, 0);
        assert_int_equal(sum(&e), 0);
}

static void test_allocator_retention(void **state) {
        ExplainInput in = mariadb();
        Explanation e;
        explain(&in, "mariadb.service", &e);
        const Finding *f = must(&e, FINDING_ALLOCATOR_RETENTION);
        assert_int_equal(f->gives_back, 200 * M);
        assert_non_null(strstr(f->evidence, "32 arenas (cap 32: 8 x 4 cores)"));
        assert_non_null(strstr(f->fix, "systemctl edit mariadb.service"));
        assert_non_null(strstr(f->fix, "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"));
        assert_non_null(strstr(f->fix, "MALLOC_ARENA_MAX=2"));

        /* Each allocator its own fix. */
        in.allocator.allocator = ALLOCATOR_TCMALLOC;
        in.allocator.releasable = 150 * M;
        explain(&in, NULL, &e);
        f = must(&e, FINDING_ALLOCATOR_RETENTION);
        assert_int_equal(f->gives_back, 150 * M);
        assert_non_null(strstr(f->fix, "TCMALLOC_RELEASE_RATE"));
        assert_null(strstr(f->evidence, "arenas"));

        /* Under a tenth of the total, or under 32M: no finding. */
        in = mariadb();
        in.allocator.free = 90 * M;
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_ALLOCATOR_RETENTION));
        in.has_cgroup = false;
        in.rss_anon = 200 * M;
        in.rss_file = 0;
        in.has_pool = in.has_sessions = in.has_accounted = false;
        in.allocator.free = 31 * M;
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_ALLOCATOR_RETENTION));
        in.allocator.free = 33 * M;
        explain(&in, NULL, &e);
        assert_non_null(find(&e, FINDING_ALLOCATOR_RETENTION));
}

static void test_session_growth(void **state) {
        ExplainInput in = mariadb();
        Explanation e;
        explain(&in, NULL, &e);
        const Finding *f = must(&e, FINDING_SESSION_GROWTH);
        /* A limit at 4 x the 2M median is under the 16M floor: 16M; the 40M session's excess */
        assert_int_equal(f->gives_back, 24 * M);
        assert_non_null(strstr(f->fix, "max_session_mem_used = 16777216"));
        assert_non_null(strstr(f->evidence, "app@10.0.0.5:4000"));
        in.flavor = SERVER_MYSQL;
        explain(&in, NULL, &e);
        f = must(&e, FINDING_SESSION_GROWTH);
        assert_non_null(strstr(f->fix, "connection_memory_limit = 16777216"));
        assert_non_null(strstr(f->fix, "global_connection_memory_tracking = ON"));
        in.sessions_total = 60 * M;
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_SESSION_GROWTH));
}

static void test_pool_too_large(void **state) {
        ExplainInput in = mariadb();
        Explanation e;
        /* 90% of 1200M is 1080M; the rest 600M leaves 480M: the 400M pool fits. */
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_POOL_TOO_LARGE));
        in.limit = 1000 * M;
        in.pool_unit = 128 * M;
        explain(&in, NULL, &e);
        const Finding *f = must(&e, FINDING_POOL_TOO_LARGE);
        /* 900M - 600M = 300M, rounded down to 128M: 256M; gives back 144M */
        assert_int_equal(f->gives_back, 144 * M);
        assert_non_null(strstr(f->fix, "innodb_buffer_pool_size = 268435456"));
        in.limit = SIZE_UNLIMITED;
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_POOL_TOO_LARGE));

        /* A pool with 100M of its 400M in use: the part is what is in use, the rule goes by what
         * it grows to. */
        in.limit = 1000 * M;
        in.pool = 100 * M;
        in.pool_size = 400 * M;
        explain(&in, NULL, &e);
        assert_int_equal(e.parts[PART_POOL], 100 * M);
        assert_int_equal(sum(&e), e.total);
        /* 900M - (1000M - 100M) leaves nothing for the pool */
        f = must(&e, FINDING_POOL_TOO_LARGE);
        assert_int_equal(f->gives_back, 400 * M);
        assert_non_null(strstr(f->evidence, "configured at 400M"));
}

static void test_storm_risk(void **state) {
        ExplainInput in = mariadb();
        in.has_connections = true;
        in.max_connections = 151;
        in.connected = 21;
        in.per_connection = 4 * M;
        Explanation e;
        /* 130 more x 4M = 520M past the 200M left */
        explain(&in, NULL, &e);
        const Finding *f = must(&e, FINDING_STORM_RISK);
        assert_false(f->gives_back_known);
        assert_non_null(strstr(f->fix, "max_connections = 71"));
        in.per_connection = M;
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_STORM_RISK));
}

static void test_pressure_listener(void **state) {
        ExplainInput in = mariadb();
        in.has_auto_min = true;
        in.auto_min = UINT64_C(8) << 40;
        Explanation e;
        explain(&in, NULL, &e);
        const Finding *f = must(&e, FINDING_PRESSURE_LISTENER_IDLE);
        assert_non_null(strstr(f->fix, "innodb_buffer_pool_size_auto_min = 209715200"));
        in.auto_min = 200 * M;
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_PRESSURE_LISTENER_IDLE));
        in.auto_min = UINT64_C(8) << 40;
        in.flavor = SERVER_MYSQL;
        explain(&in, NULL, &e);
        assert_null(find(&e, FINDING_PRESSURE_LISTENER_IDLE));
}

/* The listener set up (auto_min under the pool) but unable to arm its trigger: each reason has its
 * own evidence and fix; a writable file with auto_min set is nothing to say. */
/* The listener's finding for this unit (NULL: no unit), which must be there. */
static const Finding *listener(const ExplainInput *in, const char *unit, Explanation *e) {
        explain(in, unit, e);
        return must(e, FINDING_PRESSURE_LISTENER_IDLE);
}

static void test_pressure_listener_blocked(void **state) {
        ExplainInput in = mariadb();
        in.has_auto_min = true;
        in.auto_min = 200 * M;
        in.server_uid = 106;
        in.pressure_owner = 0;
        in.pressure_mode = 0644;
        snprintf(in.pressure_path, sizeof(in.pressure_path), "/sys/fs/cgroup/system.slice/mariadb.service/memory.pressure");
        Explanation e;

        in.pressure_access = PRESSURE_ACCESS_WRITABLE;
        explain(&in, "mariadb.service", &e);
        assert_null(find(&e, FINDING_PRESSURE_LISTENER_IDLE));

        in.pressure_access = PRESSURE_ACCESS_DENIED;
        in.pressure_ids_deny = true;
        const Finding *f = listener(&in, "mariadb.service", &e);
        assert_null(strstr(f->fix, "ProtectControlGroups"));
        assert_non_null(strstr(f->evidence, "the server (uid 106) cannot write its cgroup's memory.pressure (owner uid 0, mode 644)"));
        assert_non_null(strstr(f->fix, "systemctl edit mariadb.service"));
        assert_non_null(strstr(f->fix, "ExecStartPre=+/bin/chown 106 /sys/fs/cgroup/system.slice/mariadb.service/memory.pressure"));
        assert_null(strstr(f->fix, "SET GLOBAL"));
        /* no unit: the file and the uid, no drop-in */
        f = listener(&in, NULL, &e);
        assert_null(strstr(f->fix, "ExecStartPre"));
        assert_non_null(strstr(f->fix, "uid 106"));

        /* Debian's mariadb.service: ProtectControlGroups=true, and the file root's */
        in.pressure_access = PRESSURE_ACCESS_READ_ONLY;
        f = listener(&in, "mariadb.service", &e);
        assert_non_null(strstr(f->evidence, "mounted read-only, and the server (uid 106) cannot write"));
        assert_non_null(strstr(f->fix, "  [Service]\n  ProtectControlGroups=false\n  ExecStartPre=+/bin/chown 106 "));
        /* a read-only mount alone: no chown */
        in.pressure_ids_deny = false;
        f = listener(&in, "mariadb.service", &e);
        assert_non_null(strstr(f->fix, "ProtectControlGroups=false"));
        assert_null(strstr(f->fix, "ExecStartPre"));
        /* a container (no unit): its runtime's mount */
        in.pressure_ids_deny = true;
        f = listener(&in, NULL, &e);
        assert_null(strstr(f->fix, "ProtectControlGroups"));
        assert_non_null(strstr(f->fix, "the container's own cgroup read-write"));

        in.pressure_access = PRESSURE_ACCESS_NO_FILE;
        f = listener(&in, "mariadb.service", &e);
        assert_non_null(strstr(f->evidence, "finds no memory.pressure"));

        /* both: blocked and auto_min at its default, one finding with both fixes */
        in.pressure_access = PRESSURE_ACCESS_DENIED;
        in.auto_min = UINT64_C(8) << 40;
        f = listener(&in, "mariadb.service", &e);
        assert_non_null(strstr(f->evidence, "so even started it would do nothing"));
        assert_non_null(strstr(f->fix, "ExecStartPre=+/bin/chown 106"));
        assert_non_null(strstr(f->fix, "innodb_buffer_pool_size_auto_min = 209715200"));
        unsigned n = 0;
        for (unsigned i = 0; i < e.n_findings; i++)
                n += e.findings[i].kind == FINDING_PRESSURE_LISTENER_IDLE;
        assert_int_equal(n, 1);

        /* names */
        for (PressureAccess a = 0; a < _PRESSURE_ACCESS_MAX; a++)
                assert_non_null(pressure_access_to_string(a));
        assert_null(pressure_access_to_string(_PRESSURE_ACCESS_MAX));
}

/* The allocator has more in use than the server counts: memory outside its instruments. */
static void test_uncounted_in_use(void **state) {
        ExplainInput in = mariadb();
        Explanation e;
        explain(&in, NULL, &e);
        /* 20M uncounted: under a tenth */
        assert_null(find(&e, FINDING_UNCOUNTED_IN_USE));
        in.allocator.in_use = 300 * M;
        in.allocator.free = 50 * M;
        in.flavor = SERVER_MYSQL;
        explain(&in, NULL, &e);
        assert_int_equal(e.parts[PART_IN_USE_UNCOUNTED], 150 * M);
        assert_int_equal(sum(&e), e.total);
        const Finding *f = must(&e, FINDING_UNCOUNTED_IN_USE);
        assert_false(f->gives_back_known);
        assert_non_null(strstr(f->fix, "memory/%=ON"));
        assert_non_null(strstr(f->evidence, "150M in use that the server does not count"));
}

/* The daemon's: the server's own figures as last measured, the cgroup's from a newer sample. */
static void test_from_sample(void **state) {
        ExplainInput in = mariadb();
        Sample s = { .has = SAMPLE_HAS_CGROUP | SAMPLE_HAS_PROCESS, .memory_current = 1100 * M, .memory_max = 1200 * M,
                     .anon = 900 * M, .file = 150 * M, .shmem = 0, .active_file = 100 * M, .inactive_file = 50 * M,
                     .rss = 900 * M, .rss_anon = 880 * M, .anon_maps = 99 };
        explain_input_from_sample(&in, &s);
        Explanation e;
        explain(&in, NULL, &e);
        assert_int_equal(e.total, 1100 * M);
        assert_int_equal(sum(&e), e.total);
        assert_int_equal(e.parts[PART_OTHER_PROCESSES], 20 * M);
        assert_int_equal(e.parts[PART_POOL], 400 * M);
        assert_int_equal(in.anon_maps, 99);

        /* A sample without the cgroup: the process's resident set, files and shared memory as one. */
        s.has = SAMPLE_HAS_PROCESS;
        explain_input_from_sample(&in, &s);
        explain(&in, NULL, &e);
        assert_string_equal(e.total_source, "RSS");
        assert_int_equal(e.total, 900 * M);
        assert_int_equal(e.parts[PART_PAGE_CACHE], 20 * M);
        assert_int_equal(sum(&e), e.total);
}

/* Every part and finding has its name (the JSON keys, the metrics' labels). */
static void test_names(void **state) {
        for (ExplainPart p = 0; p < _PART_MAX; p++) {
                assert_non_null(explain_part_to_string(p));
                assert_non_null(explain_part_label(p));
        }
        for (FindingKind k = 0; k < _FINDING_KIND_MAX; k++)
                assert_non_null(finding_kind_to_string(k));
        assert_null(explain_part_to_string(_PART_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_parts_add_up), cmocka_unit_test(test_process_parts_add_up),
                cmocka_unit_test(test_overcounted),         cmocka_unit_test(test_nothing),
                cmocka_unit_test(test_allocator_retention), cmocka_unit_test(test_session_growth),
                cmocka_unit_test(test_pool_too_large),      cmocka_unit_test(test_storm_risk),
                cmocka_unit_test(test_pressure_listener),   cmocka_unit_test(test_pressure_listener_blocked),   cmocka_unit_test(test_names),
                cmocka_unit_test(test_from_sample),         cmocka_unit_test(test_uncounted_in_use),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
