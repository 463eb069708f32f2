/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The real cgroup and proc readers against a fake tree in a temporary directory. */
#include "test-util.h"

#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memgov/sampler.h"
#include "memgov/target.h"

typedef struct Tree {
        char root[256];
        char cg[300], proc[300];
} Tree;

static void put(const Tree *t, const char *rel, const char *text) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", t->root, rel);
        /* mkdir -p of the parent */
        for (char *p = path + strlen(t->root) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                mkdir(path, 0755);
                *p = '/';
        }
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void put_fixture(const Tree *t, const char *rel, const char *fixture_name) {
        size_t len;
        char *buf = fixture(fixture_name, &len);
        put(t, rel, buf);
        free(buf);
}

/* The uid a server runs as here: the servers' account when the host has one (a process of
 * another user is not taken for a server). */
static unsigned server_uid(void) {
        struct passwd *pw = getpwnam("mysql");
        return pw ? (unsigned) pw->pw_uid : 106;
}

static void put_process(const Tree *t, int pid, const char *comm, int ppid, unsigned long starttime, const char *cgroup) {
        char rel[128], text[1024];
        snprintf(rel, sizeof(rel), "proc/%d/comm", pid);
        snprintf(text, sizeof(text), "%s\n", comm);
        put(t, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
        snprintf(text, sizeof(text), "%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 39 0 %lu 1000 10\n", pid,
                 comm, ppid, pid, pid, starttime);
        put(t, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/status", pid);
        snprintf(text, sizeof(text),
                 "Name:\t%s\nState:\tS (sleeping)\nTgid:\t%d\nPPid:\t%d\nTracerPid:\t0\nUid:\t%u\t%u\t%u\t%u\n"
                 "VmRSS:\t  412340 kB\nRssAnon:\t  400000 kB\nThreads:\t39\n",
                 comm, pid, ppid, server_uid(), server_uid(), server_uid(), server_uid());
        put(t, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
        snprintf(text, sizeof(text), "0::%s\n", cgroup);
        put(t, rel, text);
        snprintf(rel, sizeof(rel), "proc/%d/maps", pid);
        put_fixture(t, rel, "kernel-6.18/proc-maps.glibc");
        /* What a real server's exe points at: a root-owned binary of its name nobody else may
         * write. */
        char path[1024], bin[1024];
        snprintf(rel, sizeof(rel), "bin/%s", comm);
        put(t, rel, "#!/bin/sh\n");
        snprintf(bin, sizeof(bin), "%s/bin/%s", t->root, comm);
        assert_int_equal(chmod(bin, 0755), 0);
        snprintf(path, sizeof(path), "%s/proc/%d/exe", t->root, pid);
        (void) unlink(path);
        assert_int_equal(symlink(bin, path), 0);
}

static Tree *tree_new(void) {
        Tree *t = calloc(1, sizeof(Tree));
        snprintf(t->root, sizeof(t->root), "/tmp/memgov-tree-XXXXXX");
        assert_non_null(mkdtemp(t->root));
        snprintf(t->cg, sizeof(t->cg), "%s/cg", t->root);
        snprintf(t->proc, sizeof(t->proc), "%s/proc", t->root);
        put(t, "cg/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
        const char *svc = "cg/system.slice/mariadb.service/";
        const char *files[][2] = {
                { "memory.current", "kernel-6.1/memory.current" }, { "memory.high", "kernel-6.1/memory.high" },
                { "memory.stat", "kernel-6.1/memory.stat" },       { "memory.events", "kernel-6.1/memory.events.oom" },
                { "memory.pressure", "kernel-6.1/memory.pressure" },
        };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                char rel[256];
                snprintf(rel, sizeof(rel), "%s%s", svc, files[i][0]);
                put_fixture(t, rel, files[i][1]);
        }
        put(t, "cg/system.slice/mariadb.service/memory.max", "1073741824\n");
        put(t, "cg/system.slice/mariadb.service/cgroup.procs", "700\n812\n");
        put_fixture(t, "proc/meminfo", "kernel-6.18/meminfo");
        put_process(t, 700, "mysqld_safe", 1, 500, "/system.slice/mariadb.service");
        put_process(t, 812, "mariadbd", 700, 1620, "/system.slice/mariadb.service");
        return t;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void tree_free(Tree *t) {
        nftw(t->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(t);
}

static void open_roots(const Tree *t, Roots *r) {
        char msg[1024];
        RootsOptions o = { .cgroup_root = t->cg, .proc_root = t->proc, .assume_unified = true };
        assert_int_equal(roots_open(r, &o, msg, sizeof(msg)), 0);
        assert_true(r->memory_v2);
        assert_string_equal(msg, "");
}

static void test_cgroup_target(void **state) {
        Tree *tree = tree_new();
        Roots roots;
        Target t;
        char why[512];
        open_roots(tree, &roots);

        TargetSpec spec = { .kind = TARGET_CGROUP };
        snprintf(spec.value, sizeof(spec.value), "/system.slice/mariadb.service");
        target_init(&t, &spec);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_true(t.has_cgroup);
        /* The server, not the wrapper script listed first. */
        assert_int_equal(t.pid, 812);
        assert_int_equal(t.starttime, 1620);
        assert_string_equal(t.comm, "mariadbd");
        assert_string_equal(t.description, "cgroup /system.slice/mariadb.service (mariadbd pid 812)");

        Sampler s;
        Sample smp;
        assert_int_equal(sampler_init(&s, &roots), 0);
        sampler_set_target(&s, t.cgroup_fd, t.pid, t.starttime);
        /* Boot time 1000 s; the process started at 1620 ticks = 16.2 s after boot. */
        assert_int_equal(sampler_read(&s, 5, 6, 7, 1000 * USEC_PER_SEC, &smp), 0);
        assert_int_equal(smp.mono, 5);
        assert_int_equal(smp.wall, 6);
        assert_int_equal(smp.utc_offset, 7);
        assert_true(smp.has & SAMPLE_HAS_CGROUP);
        assert_true(smp.has & SAMPLE_HAS_EVENTS);
        assert_true(smp.has & SAMPLE_HAS_PSI);
        assert_true(smp.has & SAMPLE_HAS_PROCESS);
        assert_true(smp.has & SAMPLE_HAS_UPTIME);
        assert_true(smp.has & SAMPLE_HAS_HOST);
        assert_int_equal(smp.memory_max, 1073741824ULL);
        assert_true(smp.memory_current > 0);
        assert_true(smp.events.oom_kill >= 1);
        assert_int_equal(smp.rss, 412340ULL * 1024);
        assert_int_equal(smp.threads, 39);
        assert_true(smp.anon_maps > 0);
        assert_int_equal(smp.uptime, 1000 * USEC_PER_SEC - 16200000);
        assert_true(smp.host_total > 0);

        /* The server restarted: same pid number, another process. */
        put_process(tree, 812, "mariadbd", 700, 99999, "/system.slice/mariadb.service");
        assert_int_equal(sampler_read(&s, 8, 9, 0, 2000 * USEC_PER_SEC, &smp), 0);
        assert_int_equal(s.process_error, -ESRCH);
        assert_true(smp.has & SAMPLE_HAS_CGROUP);
        assert_false(smp.has & SAMPLE_HAS_PROCESS);

        /* A malformed file is an error for its part only. */
        sampler_set_target(&s, t.cgroup_fd, 812, 99999);
        put(tree, "cg/system.slice/mariadb.service/memory.stat", "anon 12\nfile\n");
        assert_int_equal(sampler_read(&s, 10, 11, 0, 2000 * USEC_PER_SEC, &smp), 0);
        assert_int_equal(s.cgroup_error, -EBADMSG);
        assert_false(smp.has & SAMPLE_HAS_CGROUP);
        assert_true(smp.has & SAMPLE_HAS_PROCESS);

        sampler_done(&s);
        target_release(&t);
        roots_close(&roots);
        tree_free(tree);
}

static void test_cgroup_vanishes(void **state) {
        Tree *tree = tree_new();
        Roots roots;
        Target t;
        Sampler s;
        Sample smp;
        char why[512];
        open_roots(tree, &roots);

        TargetSpec spec = { .kind = TARGET_CGROUP };
        snprintf(spec.value, sizeof(spec.value), "system.slice/mariadb.service");
        target_init(&t, &spec);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_int_equal(sampler_init(&s, &roots), 0);
        sampler_set_target(&s, t.cgroup_fd, 0, 0);

        char path[512];
        snprintf(path, sizeof(path), "%s/system.slice/mariadb.service/memory.current", tree->cg);
        unlink(path);
        assert_int_equal(sampler_read(&s, 1, 1, 0, 0, &smp), -ENOENT);

        /* Resolving again: the cgroup is not there: wait (-ESRCH), not a hard error. */
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/system.slice/mariadb.service", tree->cg);
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -ESRCH);
        assert_string_contains(why, "cannot open cgroup /system.slice/mariadb.service");

        sampler_done(&s);
        target_release(&t);
        roots_close(&roots);
        tree_free(tree);
}

static void test_process_target(void **state) {
        Tree *tree = tree_new();
        Roots roots;
        Target t;
        char why[512];
        open_roots(tree, &roots);

        /* By name: mariadbd's parent mysqld_safe is not a server name: one match. */
        TargetSpec spec = { .kind = TARGET_PROCESS };
        target_init(&t, &spec);
        assert_string_equal(t.spec.value, "mariadbd,mysqld");
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_int_equal(t.pid, 812);
        assert_true(t.has_cgroup);
        assert_string_equal(t.cgroup, "/system.slice/mariadb.service");
        target_release(&t);

        /* A second, independent server: which one? */
        put_process(tree, 913, "mysqld", 1, 2000, "/system.slice/mysql.service");
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -ENOTUNIQ);
        assert_string_contains(why, "2 processes named mariadbd,mysqld (");
        assert_string_contains(why, "): refusing to guess which is the server; name it with --unit (or --pid)");

        /* By pid. */
        TargetSpec byp = { .kind = TARGET_PID, .pid = 913 };
        target_init(&t, &byp);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -ESRCH);
        assert_string_contains(why, "cannot open cgroup /system.slice/mysql.service");
        put(tree, "cg/system.slice/mysql.service/memory.current", "1\n");
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_int_equal(t.pid, 913);
        target_release(&t);

        /* In another cgroup namespace (a container next to ours in a pod), with neither the host
         * hierarchy nor the server's own cgroup file system to read: said plainly. */
        put_process(tree, 914, "mariadbd", 1, 2001, "/../db-0");
        TargetSpec ns = { .kind = TARGET_PID, .pid = 914 };
        target_init(&t, &ns);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -EREMOTE);
        assert_string_contains(why, "is in another cgroup namespace");
        assert_string_contains(why, "--cgroup-root");

        /* Through the server's own root: its container mounted the cgroup file system at its
         * cgroup, which lists the server. */
        put(tree, "proc/914/root/sys/fs/cgroup/cgroup.procs", "914\n");
        put(tree, "proc/914/root/sys/fs/cgroup/memory.current", "1\n");
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_true(t.has_cgroup);
        assert_string_equal(t.cgroup, "/../db-0");
        assert_string_equal(t.cgroup_via, "/proc/914/root/sys/fs/cgroup");
        assert_string_contains(t.description, "through /proc/914/root/sys/fs/cgroup");
        target_release(&t);

        /* The host hierarchy mounted here: our own cgroup found by our pid, the server's path
         * made absolute from it. */
        char own[64];
        snprintf(own, sizeof(own), "%d\n", (int) getpid());
        put(tree, "proc/self/cgroup", "0::/\n");
        put(tree, "cg/kubepods/pod1/sidecar/cgroup.procs", own);
        put(tree, "cg/kubepods/pod1/db-0/memory.current", "1\n");
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_string_equal(t.cgroup, "/kubepods/pod1/db-0");
        assert_string_equal(t.cgroup_via, "");
        target_release(&t);

        /* Nothing running. */
        TargetSpec none = { .kind = TARGET_PROCESS };
        snprintf(none.value, sizeof(none.value), "postgres");
        target_init(&t, &none);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -ESRCH);
        assert_string_equal(why, "no process named postgres is running");

        /* A unit needs systemd. */
        TargetSpec unit = { .kind = TARGET_UNIT };
        snprintf(unit.value, sizeof(unit.value), "mariadb.service");
        target_init(&t, &unit);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -ENOTCONN);

        roots_close(&roots);
        tree_free(tree);
}

/* A server that has just exited, seen while the processes are listed: a zombie not yet reaped, or
 * one whose files are gone by the time they are read. Neither is the server, and neither is an
 * impostor ignored (the message would send the operator looking for one). */
static void test_process_exited(void **state) {
        Tree *tree = tree_new();
        Roots roots;
        Target t;
        char why[512];
        open_roots(tree, &roots);

        put(tree, "proc/812/stat", "812 (mariadbd) Z 700 812 812 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 39 0 1620 0 0\n");
        put_process(tree, 815, "mariadbd", 1, 1700, "/system.slice/mariadb.service");
        char path[1024];
        snprintf(path, sizeof(path), "%s/proc/815/status", tree->root);
        assert_int_equal(unlink(path), 0);

        TargetSpec spec = { .kind = TARGET_PROCESS };
        target_init(&t, &spec);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -ESRCH);
        assert_string_equal(why, "no process named mariadbd,mysqld is running");

        /* An impostor beside them is still said. */
        put_process(tree, 816, "mysqld", 1, 1800, "/user.slice");
        put(tree, "proc/816/status", "Name:\tmysqld\nState:\tS (sleeping)\nTgid:\t816\nPPid:\t1\nUid:\t4242\t4242\t4242\t4242\n");
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), -ESRCH);
        assert_string_contains(why, "(1 ignored: process 816: ");

        roots_close(&roots);
        tree_free(tree);
}

/* A unit's server from its main process and its cgroup: the unit between runs (no main process)
 * with a helper of its own alone in its cgroup (ExecStopPost's sleep, a shell of ExecStartPre) has
 * no server yet; a wrapper or systemd's child before its command runs is not the server; the
 * process named as a server is, main or not. */
static void test_unit_server(void **state) {
        Tree *tree = tree_new();
        Roots roots;
        char path[600];
        const char *procs = "cg/system.slice/mariadb.service/cgroup.procs";
        open_roots(tree, &roots);
        snprintf(path, sizeof(path), "%s/system.slice/mariadb.service", tree->cg);
        int cg = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(cg >= 0);

        /* The server under mysqld_safe, main or not. */
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 812), 812);
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 700), 812);
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 0), 812);

        /* Between runs: only a helper in the cgroup; in a container's cgroup, the only process
         * is the server. */
        put_process(tree, 900, "sleep", 1, 2000, "/system.slice/mariadb.service");
        put(tree, procs, "900\n");
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 0), 0);
        assert_int_equal(target_server_in(TARGET_CGROUP, roots.proc_fd, cg, 0), 900);

        /* Starting: systemd's child before it runs its command, then a wrapper shell. */
        put_process(tree, 901, "(sh)", 1, 2100, "/system.slice/mariadb.service");
        put(tree, procs, "901\n");
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 901), 0);
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 0), 0);
        put_process(tree, 901, "sh", 1, 2100, "/system.slice/mariadb.service");
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 901), 0);

        /* The server, named otherwise (a build of its own), as the unit's main process. */
        put_process(tree, 902, "mysqld-custom", 1, 2200, "/system.slice/mariadb.service");
        put(tree, procs, "902\n");
        assert_int_equal(target_server_in(TARGET_UNIT, roots.proc_fd, cg, 902), 902);
        /* The same process alone in a cgroup that is not a unit's: the container's heuristic. */
        TargetSpec spec = { .kind = TARGET_CGROUP };
        snprintf(spec.value, sizeof(spec.value), "/system.slice/mariadb.service");
        Target t;
        char why[512];
        target_init(&t, &spec);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_int_equal(t.pid, 902);
        target_release(&t);

        close(cg);
        roots_close(&roots);
        tree_free(tree);
}

static void test_no_v2_memory(void **state) {
        Tree *tree = tree_new();
        Roots roots;
        char msg[1024];
        /* The v2 hierarchy without the memory controller, as on a hybrid host. */
        put(tree, "cg/cgroup.controllers", "cpu io pids\n");
        RootsOptions o = { .cgroup_root = tree->cg, .proc_root = tree->proc, .assume_unified = true };
        assert_int_equal(roots_open(&roots, &o, msg, sizeof(msg)), 0);
        assert_false(roots.memory_v2);
        assert_string_contains(msg, "watching the server process (RSS) instead");

        /* The process is still governed, without a cgroup. */
        Target t;
        char why[512];
        TargetSpec spec = { .kind = TARGET_PROCESS };
        target_init(&t, &spec);
        assert_int_equal(target_resolve(&t, &roots, NULL, why, sizeof(why)), 0);
        assert_false(t.has_cgroup);
        assert_int_equal(t.pid, 812);
        assert_string_equal(t.description, "mariadbd pid 812");
        roots_close(&roots);
        tree_free(tree);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cgroup_target),
                cmocka_unit_test(test_cgroup_vanishes),
                cmocka_unit_test(test_process_target),
                cmocka_unit_test(test_process_exited),
                cmocka_unit_test(test_unit_server),
                cmocka_unit_test(test_no_v2_memory),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
