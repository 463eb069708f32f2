/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The injection against a child of the test: a request whose start time is not the process's
 * (a pid reused between the plan and the seize) is refused once the thread is held, and the
 * thread is let go untouched; /proc/PID/maps streamed reads as the whole file parsed. */
#include "test-util.h"

#include "memgov/fileio.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/act/inject.h"
#include "../../src/act/inject-site.h"
#include "memgov/maps-reader.h"
#include "../../src/act/trim.h"
#include "memgov/target.h"

typedef struct Child {
        pid_t pid;
        int to, from; /* its pipes: what it reads, what it answers */
} Child;

/* Until pid sits in read(2) (the only thread a trim may take out of its system call). */
static void wait_in_read(pid_t pid) {
        for (int i = 0; i < 200; i++) {
                char path[64], buf[256];
                snprintf(path, sizeof(path), "/proc/%d/syscall", (int) pid);
                ssize_t n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
                if (n > 2 && buf[0] == '0' && buf[1] == ' ')
                        return;
                struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
}

/* A child blocked in read(2) on a pipe, answering every byte with the same byte. */
static Child spawn(void) {
        int in[2], out[2];
        assert_int_equal(pipe(in), 0);
        assert_int_equal(pipe(out), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                char c;
                close(in[1]);
                close(out[0]);
                while (read(in[0], &c, 1) == 1)
                        if (write(out[1], &c, 1) != 1)
                                _exit(1);
                _exit(0);
        }
        close(in[0]);
        close(out[1]);
        wait_in_read(pid);
        return (Child) { pid, in[1], out[0] };
}

static void finish(Child *c) {
        int status;
        close(c->to);
        assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(c->from);
}

/* The child still answers, and nobody traces it. */
static void assert_untouched(const Child *c) {
        char path[64], buf[4096], x = 'x';
        ProcStatus st;
        snprintf(path, sizeof(path), "/proc/%d/status", (int) c->pid);
        ssize_t n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
        assert_true(n > 0);
        assert_int_equal(parse_proc_status(buf, (size_t) n, &st), 0);
        assert_int_equal(st.tracer_pid, 0);
        assert_true(st.state != 't' && st.state != 'T');
        assert_int_equal(write(c->to, &x, 1), 1);
        struct pollfd p = { .fd = c->from, .events = POLLIN };
        assert_int_equal(poll(&p, 1, 5000), 1);
        assert_int_equal(read(c->from, &x, 1), 1);
        assert_int_equal(x, 'x');
        /* Back in read before anything else is asked of it. */
        wait_in_read(c->pid);
}

static unsigned phases_seen(int fd) {
        uint8_t b[64];
        unsigned seen = 0;
        ssize_t n;
        while ((n = read(fd, b, sizeof(b))) > 0)
                for (ssize_t i = 0; i < n; i++)
                        seen |= 1u << b[i];
        return seen;
}

static void test_starttime_checked_after_seize(void **state) {
        Child c = spawn();
        TrimPlan plan;
        ProcStat st;
        InjectReport rep;
        char why[1024];
        int ph[2];

        assert_int_equal(trim_plan(c.pid, &plan, why, sizeof(why)), 0);
        assert_int_equal(proc_read_stat(AT_FDCWD, c.pid, &st), 0);
        assert_int_equal(pipe2(ph, O_NONBLOCK | O_CLOEXEC), 0);
        InjectRequest q = {
                .pid = c.pid,
                .tid = c.pid,
                .starttime = st.starttime + 1, /* another process, started a tick later */
                .fn = plan.fn_addr,
                .stub_addr = plan.stub_addr,
                .mailbox_addr = plan.mailbox_addr,
                .phase_fd = ph[1],
        };
        /* Before the stub is in: refused before anything is written or held. */
        uint64_t word = 1;
        struct iovec local = { &word, sizeof(word) }, remote = { (void *) (uintptr_t) plan.stub_addr, sizeof(word) };
        assert_int_equal(inject_call(&q, &rep, why, sizeof(why)), -ESRCH);
        assert_non_null(strstr(why, "nothing written"));
        assert_int_equal(phases_seen(ph[0]), 0);
        assert_int_equal(process_vm_readv(c.pid, &local, 1, &remote, 1, 0), (ssize_t) sizeof(word));
        assert_int_equal(word, 0);
        assert_untouched(&c);

        /* Once the stub is in (an earlier trim), the check comes once the thread is held. */
        q.starttime = st.starttime;
        assert_int_equal(inject_call(&q, &rep, why, sizeof(why)), 0);
        (void) phases_seen(ph[0]);
        q.starttime = st.starttime + 1;
        assert_int_equal(inject_call(&q, &rep, why, sizeof(why)), -ESRCH);
        assert_non_null(strstr(why, "start time"));
        /* Refused once held: seized and stopped, never taken to its system call's entry. */
        unsigned seen = phases_seen(ph[0]);
        assert_true(seen & (1u << INJECT_PHASE_SEIZED));
        assert_true(seen & (1u << INJECT_PHASE_INTERRUPTED));
        assert_false(seen & (1u << INJECT_PHASE_AT_ENTRY));
        assert_false(rep.completed);
        assert_untouched(&c);

        /* The right start time: the call is made. */
        q.starttime = st.starttime;
        assert_int_equal(inject_call(&q, &rep, why, sizeof(why)), 0);
        assert_true(rep.completed);
        assert_true(phases_seen(ph[0]) & (1u << INJECT_PHASE_DONE));
        assert_untouched(&c);
        close(ph[0]);
        close(ph[1]);
        finish(&c);
}

/* The daemon's own view of the server (its start time when it was found) goes down to the trim:
 * a pid that names another process by then is refused before anything is planned. */
static void test_trim_checks_the_callers_start_time(void **state) {
        Child c = spawn();
        ProcStat st;
        TrimReport rep;
        char why[1024];
        assert_int_equal(proc_read_stat(AT_FDCWD, c.pid, &st), 0);
        assert_int_equal(trim_by_ptrace(c.pid, st.starttime + 1, 0, true, -1, &rep, why, sizeof(why)), -ESRCH);
        assert_non_null(strstr(why, "not the server any more"));
        assert_int_equal(trim_by_ptrace(c.pid, st.starttime, 0, true, -1, &rep, why, sizeof(why)), 0);
        assert_untouched(&c);
        finish(&c);
}

/* Called in the child (a fork: the same address): every argument in its register, a string
 * from the block, a result written after the mailbox. */
static uint64_t six_arguments(char *out, const char *in, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
        snprintf(out, 64, "%s %llu %llu %llu %llu", in, (unsigned long long) a, (unsigned long long) b,
                 (unsigned long long) c, (unsigned long long) d);
        return a + b + c + d;
}

static void test_call_arguments_and_result(void **state) {
        Child c = spawn();
        _cleanup_(inject_site_done) InjectSite site = {};
        InjectReport rep;
        char why[1024];

        assert_int_equal(inject_site_open(c.pid, &site, why, sizeof(why)), 0);
        assert_true(site.mailbox_addr != 0);
        assert_true(site.mailbox_room >= 16 + 64);
        static const char in[] = "memgov";
        InjectRequest q = {
                .pid = c.pid,
                .fn = (uint64_t) (uintptr_t) six_arguments,
                .args = { 0, 0, 3, 5, 7, 11 },
                .data = in,
                .data_size = sizeof(in),
                .args_in_data = 1U << 1,
                .args_in_result = 1U << 0,
                .result_size = 64,
                .stub_addr = site.stub_addr,
                .mailbox_addr = site.mailbox_addr,
                .mailbox_room = site.mailbox_room,
        };
        assert_int_equal(inject_call_retrying(&q, &rep, why, sizeof(why)), 0);
        assert_true(rep.completed);
        assert_int_equal(rep.ret, 26);
        assert_string_equal((const char *) rep.result, "memgov 3 5 7 11");
        assert_untouched(&c);

        /* The result area is cleared before each call: what a call leaves unwritten reads 0. */
        q.args[2] = 1;
        q.args_in_result = 0;
        q.args[0] = 0;
        q.fn = (uint64_t) (uintptr_t) strlen;
        q.args_in_data = 1U << 0;
        assert_int_equal(inject_call_retrying(&q, &rep, why, sizeof(why)), 0);
        assert_int_equal(rep.ret, strlen(in));
        assert_int_equal(rep.result[0], 0);

        /* More data or result than the block and the area hold: refused before any thread is
         * chosen, so whatever the child's thread is doing at that moment. */
        q.result_size = INJECT_RESULT_SIZE + 1;
        assert_int_equal(inject_call(&q, &rep, why, sizeof(why)), -E2BIG);
        assert_int_equal(rep.tid, 0);
        q.result_size = 64;
        q.mailbox_room = 16 + 63;
        assert_int_equal(inject_call(&q, &rep, why, sizeof(why)), -ENOSPC);
        assert_non_null(strstr(why, "no room for the call's result"));
        assert_int_equal(rep.tid, 0);
        assert_untouched(&c);
        finish(&c);
}

/* Without a mailbox, the stub reports into its own block, in a box of its own: the saved
 * registers it returns through are left as they were. */
static void test_call_without_mailbox(void **state) {
        Child c = spawn();
        _cleanup_(inject_site_done) InjectSite site = {};
        InjectReport rep;
        char why[1024];

        assert_int_equal(inject_site_open(c.pid, &site, why, sizeof(why)), 0);
        static const char in[] = "without a mailbox";
        InjectRequest q = {
                .pid = c.pid,
                .fn = (uint64_t) (uintptr_t) strlen,
                .data = in,
                .data_size = sizeof(in),
                .args_in_data = 1U << 0,
                .stub_addr = site.stub_addr,
        };
        for (int i = 0; i < 3; i++) {
                assert_int_equal(inject_call_retrying(&q, &rep, why, sizeof(why)), 0);
                assert_true(rep.completed);
                assert_int_equal(rep.ret, strlen(in));
                assert_untouched(&c);
        }
        /* A result needs the mailbox: the stack is the thread's again once the call returned. */
        q.result_size = 8;
        assert_int_equal(inject_call(&q, &rep, why, sizeof(why)), -ENOSPC);
        finish(&c);
}

static void test_maps_stream_equals_whole(void **state) {
        _cleanup_free_ char *whole = NULL;
        size_t len;
        ProcMaps a, b;
        uint64_t s1, e1, s2, e2;
        char p1[5], p2[5];
        int local;

        assert_int_equal(read_full_file_at(AT_FDCWD, "/proc/self/maps", 64U << 20, &whole, &len), 0);
        assert_int_equal(parse_proc_maps(whole, len, &a), 0);
        assert_int_equal(maps_read_summary(AT_FDCWD, getpid(), &b), 0);
        assert_true(a.libc.found && b.libc.found);
        assert_string_equal(a.libc.path, b.libc.path);
        assert_true(a.libc.base == b.libc.base && a.libc.inode == b.libc.inode);
        assert_int_equal(a.allocator, b.allocator);
        assert_int_equal(proc_maps_find(whole, len, (uintptr_t) &local, &s1, &e1, p1), 0);
        assert_int_equal(maps_read_find(AT_FDCWD, getpid(), (uintptr_t) &local, &s2, &e2, p2), 0);
        assert_true(s1 == s2 && e1 == e2);
        assert_string_equal(p1, p2);
        assert_int_equal(maps_read_find(AT_FDCWD, getpid(), 8, &s2, &e2, p2), -ENOENT);
        assert_int_equal(maps_read_summary(AT_FDCWD, 0x7ffffff0, &b), -ESRCH);
}

/* A mapping whose path is longer than a line memgov reads: refused, not read into a larger buffer. */
static void test_maps_long_line_refused(void **state) {
        char dir[] = "/tmp/memgov-test-inject-XXXXXX", name[256], path[8192];
        ProcMaps m;

        assert_non_null(mkdtemp(dir));
        memset(name, 'd', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        /* Twenty directories of 255 characters: the path is over 5000 bytes long. */
        for (int i = 0; i < 20; i++) {
                assert_int_equal(mkdirat(fd, name, 0700), 0);
                int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(sub >= 0);
                close(fd);
                fd = sub;
        }
        int file = openat(fd, "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(file >= 0);
        assert_int_equal(ftruncate(file, 4096), 0);
        void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, file, 0);
        assert_true(p != MAP_FAILED);
        assert_int_equal(maps_read_summary(AT_FDCWD, getpid(), &m), -E2BIG);
        munmap(p, 4096);
        close(file);
        assert_int_equal(maps_read_summary(AT_FDCWD, getpid(), &m), 0);

        /* Clean up, from the innermost directory out. */
        assert_int_equal(unlinkat(fd, "f", 0), 0);
        for (int i = 0; i < 20; i++) {
                int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(up >= 0);
                close(fd);
                fd = up;
                assert_int_equal(unlinkat(fd, name, AT_REMOVEDIR), 0);
        }
        snprintf(path, sizeof(path), "%s", dir);
        assert_int_equal(rmdir(path), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_starttime_checked_after_seize),
                cmocka_unit_test(test_trim_checks_the_callers_start_time),
                cmocka_unit_test(test_call_arguments_and_result),
                cmocka_unit_test(test_call_without_mailbox),
                cmocka_unit_test(test_maps_stream_equals_whole),
                cmocka_unit_test(test_maps_long_line_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
