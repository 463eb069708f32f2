/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process whose threads sit in the system calls an injection may interrupt, and check, after
 * every return, that the call behaved exactly as if nothing had happened.
 *
 *   inject-target PERIOD_MS [SLACK_MS [MODE]]
 *
 * Threads (their tids are printed first, one line each: "tid NAME TID"):
 *   read       read() on a pipe: every message must arrive whole and in order
 *   poll       poll() on an empty pipe with a PERIOD timeout: returns 0 after PERIOD
 *   futex      FUTEX_WAIT without timeout: woken by "feed", sees the new value
 *   futex-timed FUTEX_WAIT with a PERIOD timeout: ETIMEDOUT after PERIOD
 *   nanosleep  relative nanosleep(PERIOD): returns 0 after PERIOD
 *   epoll      epoll_wait with a PERIOD timeout: 0 events after PERIOD
 *   regs       a raw read system call with every register loaded with a pattern, vector
 *              registers included: after it, all hold their pattern (rax, rcx, r11 aside)
 *
 * Commands on standard input: "feed" (a message to read and regs, a wake-up to futex), "stop"
 * (ends every thread, prints "summary ..." and exits 0 when nothing went wrong, 1 otherwise).
 * A timed call that comes back early, with EINTR, or later than PERIOD plus the slack is a
 * failure ("FAIL ..." lines on standard output, at once).
 *
 * Modes:
 *   maps=N  first maps N pages with alternating protections: N mappings in /proc/PID/maps
 *   vfork   instead of the threads above, a single thread "vfork" that sleeps briefly and calls
 *           vfork() in a loop; a child that finds its parent thread traced within 1 ms sleeps
 *           10 s before it exits, so that a tracer's interrupt cannot stop the parent for that long. The main
 *           thread waits in epoll_wait (never chosen). After such a long wait the thread prints
 *           "vfork-returned N". */
#include <errno.h>
#include <stdbool.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long period_ms;
static long slack_ms;
static atomic_int stop;
static atomic_int failures;
static atomic_long rounds;
static int read_pipe[2], regs_pipe[2], empty_pipe[2];
static atomic_int futex_word;
static int expected_futex;

static long now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define FAIL(...)                                           \
        do {                                                \
                atomic_fetch_add(&failures, 1);             \
                printf("FAIL " __VA_ARGS__);                \
                printf("\n");                               \
                fflush(stdout);                             \
        } while (0)

static void check_timed(const char *name, long start, long ret, int err, long expect_ret, int expect_err) {
        long took = now_ms() - start;
        if (atomic_load(&stop))
                return;
        if (ret != expect_ret || (expect_err && err != expect_err))
                FAIL("%s: returned %ld errno %d after %ld ms (expected %ld%s)", name, ret, err, took, expect_ret,
                     expect_err ? " with its errno" : "");
        else if (took < period_ms)
                FAIL("%s: came back after %ld ms, before its %ld ms", name, took, period_ms);
        else if (took > period_ms + slack_ms)
                FAIL("%s: came back after %ld ms, more than %ld + %ld ms", name, took, period_ms, slack_ms);
        atomic_fetch_add(&rounds, 1);
}

static void *t_read(void *arg) {
        unsigned expect = 0;
        char buf[64];
        while (!atomic_load(&stop)) {
                ssize_t n = read(read_pipe[0], buf, sizeof(buf) - 1);
                if (atomic_load(&stop))
                        break;
                if (n < 0) {
                        FAIL("read: errno %d", errno);
                        continue;
                }
                buf[n] = '\0';
                char want[32];
                snprintf(want, sizeof(want), "message %u\n", expect++);
                if (strcmp(buf, want) != 0)
                        FAIL("read: got '%s', expected '%s'", buf, want);
                atomic_fetch_add(&rounds, 1);
        }
        return NULL;
}

static void *t_poll(void *arg) {
        while (!atomic_load(&stop)) {
                struct pollfd p = { .fd = empty_pipe[0], .events = POLLIN };
                long t = now_ms();
                int r = poll(&p, 1, (int) period_ms);
                check_timed("poll", t, r, r < 0 ? errno : 0, 0, 0);
        }
        return NULL;
}

static void *t_futex(void *arg) {
        while (!atomic_load(&stop)) {
                int seen = atomic_load(&futex_word);
                long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
                if (atomic_load(&stop))
                        break;
                if (r < 0 && errno != EAGAIN)
                        FAIL("futex: errno %d", errno);
                else if (r == 0 && atomic_load(&futex_word) == seen)
                        FAIL("futex: woke without a change");
                atomic_fetch_add(&rounds, 1);
        }
        return NULL;
}

static void *t_futex_timed(void *arg) {
        int word = 0;
        while (!atomic_load(&stop)) {
                struct timespec ts = { .tv_sec = period_ms / 1000, .tv_nsec = (period_ms % 1000) * 1000000 };
                long t = now_ms();
                long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
                check_timed("futex-timed", t, r, r < 0 ? errno : 0, -1, ETIMEDOUT);
        }
        return NULL;
}

static void *t_nanosleep(void *arg) {
        while (!atomic_load(&stop)) {
                struct timespec ts = { .tv_sec = period_ms / 1000, .tv_nsec = (period_ms % 1000) * 1000000 }, rem;
                long t = now_ms();
                int r = nanosleep(&ts, &rem);
                check_timed("nanosleep", t, r, r < 0 ? errno : 0, 0, 0);
        }
        return NULL;
}

static void *t_epoll(void *arg) {
        int ep = epoll_create1(0);
        struct epoll_event ev = { .events = EPOLLIN }, out;
        epoll_ctl(ep, EPOLL_CTL_ADD, empty_pipe[0], &ev);
        while (!atomic_load(&stop)) {
                long t = now_ms();
                int r = epoll_wait(ep, &out, 1, (int) period_ms);
                check_timed("epoll", t, r, r < 0 ? errno : 0, 0, 0);
        }
        return NULL;
}

/* One raw read(2) with known values in every register, checked afterwards. The values live in
 * static memory addressed relative to %rip, so that no register is needed to reach them. */
__attribute__((used)) uint64_t g_in[9] = { 0x1111111111111111, 0x2222222222222222, 0x3333333333333333,
                            0x4444444444444444, 0x5555555555555555, 0x6666666666666666,
                            0x7777777777777777, 0x8888888888888888, 0x9999999999999999 };
__attribute__((used)) uint64_t g_out[12];
__attribute__((used)) double g_xin = 3.25, g_xout;
__attribute__((used)) uint8_t g_yin[32], g_yout[32];

static void *t_regs(void *arg) {
        char buf[16];
        bool avx = __builtin_cpu_supports("avx");
        for (int i = 0; i < 32; i++)
                g_yin[i] = (uint8_t) (0xa0 + i);
        while (!atomic_load(&stop)) {
                long ret;
                memset(g_out, 0, sizeof(g_out));
                g_xout = 0;
                memset(g_yout, 0, sizeof(g_yout));
                if (avx)
                        __asm__ volatile("vmovdqu g_yin(%%rip), %%ymm9" ::: "xmm9");
                __asm__ volatile(
                        "push %%rbp\n\t"
                        "movsd g_xin(%%rip), %%xmm8\n\t"
                        "movsd g_xin(%%rip), %%xmm15\n\t"
                        "mov g_in+0x00(%%rip), %%rbx\n\t"
                        "mov g_in+0x08(%%rip), %%rbp\n\t"
                        "mov g_in+0x10(%%rip), %%r12\n\t"
                        "mov g_in+0x18(%%rip), %%r13\n\t"
                        "mov g_in+0x20(%%rip), %%r14\n\t"
                        "mov g_in+0x28(%%rip), %%r15\n\t"
                        "mov g_in+0x30(%%rip), %%r8\n\t"
                        "mov g_in+0x38(%%rip), %%r9\n\t"
                        "mov g_in+0x40(%%rip), %%r10\n\t"
                        "mov $0, %%eax\n\t" /* read */
                        "syscall\n\t"
                        "mov %%rbx, g_out+0x00(%%rip)\n\t"
                        "mov %%rbp, g_out+0x08(%%rip)\n\t"
                        "mov %%r12, g_out+0x10(%%rip)\n\t"
                        "mov %%r13, g_out+0x18(%%rip)\n\t"
                        "mov %%r14, g_out+0x20(%%rip)\n\t"
                        "mov %%r15, g_out+0x28(%%rip)\n\t"
                        "mov %%r8, g_out+0x30(%%rip)\n\t"
                        "mov %%r9, g_out+0x38(%%rip)\n\t"
                        "mov %%r10, g_out+0x40(%%rip)\n\t"
                        "mov %%rdi, g_out+0x48(%%rip)\n\t"
                        "mov %%rsi, g_out+0x50(%%rip)\n\t"
                        "mov %%rdx, g_out+0x58(%%rip)\n\t"
                        "movsd %%xmm8, g_xout(%%rip)\n\t"
                        "pop %%rbp\n\t"
                        : "=a"(ret)
                        : "D"((uint64_t) regs_pipe[0]), "S"(buf), "d"(sizeof(buf) - 1)
                        : "rbx", "rcx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "xmm8", "xmm15",
                          "memory", "cc");
                if (avx)
                        __asm__ volatile("vmovdqu %%ymm9, g_yout(%%rip)" ::: "memory");
                if (atomic_load(&stop))
                        break;
                if (ret != 5 || memcmp(buf, "regs\n", 5) != 0)
                        FAIL("regs: read returned %ld", ret);
                for (int i = 0; i < 9; i++)
                        if (g_out[i] != g_in[i])
                                FAIL("regs: register %d is %#lx, was %#lx", i, (unsigned long) g_out[i], (unsigned long) g_in[i]);
                if (g_out[9] != (uint64_t) regs_pipe[0] || g_out[10] != (uint64_t) buf || g_out[11] != sizeof(buf) - 1)
                        FAIL("regs: the system call's argument registers changed");
                if (g_xout != g_xin)
                        FAIL("regs: xmm8 is %g, was %g", g_xout, g_xin);
                if (avx && memcmp(g_yin, g_yout, 32) != 0)
                        FAIL("regs: ymm9 changed");
                atomic_fetch_add(&rounds, 1);
        }
        return NULL;
}

static const struct {
        const char *name;
        void *(*fn)(void *);
} threads[] = {
        { "read", t_read },           { "poll", t_poll },           { "futex", t_futex },     { "futex-timed", t_futex_timed },
        { "nanosleep", t_nanosleep }, { "epoll", t_epoll },         { "regs", t_regs },
};

static pid_t tids[sizeof(threads) / sizeof(threads[0])];

/* Maps n pages with alternating protections: the kernel cannot merge them, n mappings. */
static int many_mappings(long n) {
        long page = sysconf(_SC_PAGESIZE);
        uint8_t *p = mmap(NULL, (size_t) (n * page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -1;
        for (long i = 1; i < n; i += 2)
                if (mprotect(p + i * page, (size_t) page, PROT_READ | PROT_WRITE) < 0)
                        return -1;
        return 0;
}

static pid_t vfork_tid;
static unsigned long long vfork_returned; /* static: a vfork() child shares the stack frame */

/* In the vfork child, which shares the parent's memory: system calls and the stack only. */
static bool parent_thread_traced(void) {
        char path[96], buf[2048];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int) getppid(), (int) vfork_tid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        const char *t = strstr(buf, "TracerPid:");
        return t && atoi(t + strlen("TracerPid:")) != 0;
}

static void *t_vfork(void *arg) {
        vfork_tid = (pid_t) syscall(SYS_gettid);
        /* Sleeps of ~10 us: a tracer that chose the thread in one finds it in vfork() when it
         * seizes it, even on a loaded machine. */
        prctl(PR_SET_TIMERSLACK, 1UL);
        while (!atomic_load(&stop)) {
                struct timespec ts = { .tv_nsec = 10 * 1000 };
                nanosleep(&ts, NULL);
                static long t;
                t = now_ms();
                pid_t c = vfork();
                if (c == 0) {
                        /* Dies with its parent thread, whatever happens. */
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        /* A tracer that chose the parent in its sleep seizes it a little later. */
                        for (int i = 0; i < 20; i++) {
                                struct timespec s = { .tv_nsec = 50 * 1000 };
                                if (parent_thread_traced()) {
                                        s = (struct timespec) { .tv_sec = 10 };
                                        nanosleep(&s, NULL);
                                        break;
                                }
                                nanosleep(&s, NULL);
                        }
                        _exit(0);
                }
                if (c < 0) {
                        FAIL("vfork: errno %d", errno);
                        break;
                }
                (void) waitpid(c, NULL, 0);
                if (now_ms() - t > 1000)
                        printf("vfork-returned %llu\n", ++vfork_returned);
        }
        return NULL;
}

static int vfork_mode(void) {
        pthread_t pt;
        pthread_create(&pt, NULL, t_vfork, NULL);
        usleep(100000);
        printf("tid vfork %d\n", (int) vfork_tid);
        printf("ready\n");

        int ep = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = { .events = EPOLLIN }, out;
        epoll_ctl(ep, EPOLL_CTL_ADD, STDIN_FILENO, &ev);
        char line[64];
        for (;;) {
                /* Only ever read once there is input: a thread blocked in read could be chosen. */
                int k = epoll_wait(ep, &out, 1, -1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        break;
                ssize_t n = read(STDIN_FILENO, line, sizeof(line) - 1);
                if (n <= 0 || strncmp(line, "stop", 4) == 0)
                        break;
        }
        printf("summary vfork, %d failures\n", atomic_load(&failures));
        fflush(stdout);
        /* The thread may sit in vfork() for a while: exit_group ends it, its child dies with it. */
        _exit(atomic_load(&failures) ? 1 : 0);
}

static void *start(void *arg) {
        size_t i = (size_t) arg;
        tids[i] = (pid_t) syscall(SYS_gettid);
        return threads[i].fn(NULL);
}

int main(int argc, char **argv) {
        period_ms = argc > 1 ? atol(argv[1]) : 500;
        slack_ms = argc > 2 ? atol(argv[2]) : 300;
        pthread_t pt[sizeof(threads) / sizeof(threads[0])];
        unsigned message = 0;

        const char *mode = argc > 3 ? argv[3] : "";

        setvbuf(stdout, NULL, _IOLBF, 0);
        if (strcmp(mode, "vfork") == 0)
                return vfork_mode();
        if (strncmp(mode, "maps=", 5) == 0 && many_mappings(atol(mode + 5)) < 0) {
                printf("FAIL maps: cannot map %s pages: errno %d\n", mode + 5, errno);
                return 2;
        }
        if (pipe(read_pipe) || pipe(regs_pipe) || pipe(empty_pipe))
                return 2;
        /* Some heap to trim. */
        for (int i = 0; i < 20000; i++)
                free(malloc(1000 + i % 3000));

        for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++)
                pthread_create(&pt[i], NULL, start, (void *) i);
        usleep(100000);
        for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++)
                printf("tid %s %d\n", threads[i].name, (int) tids[i]);
        printf("ready\n");

        char line[64];
        while (fgets(line, sizeof(line), stdin)) {
                if (strncmp(line, "feed", 4) == 0) {
                        char msg[32];
                        int n = snprintf(msg, sizeof(msg), "message %u\n", message++);
                        if (write(read_pipe[1], msg, (size_t) n) != n || write(regs_pipe[1], "regs\n", 5) != 5)
                                FAIL("main: write");
                        atomic_fetch_add(&futex_word, 1);
                        expected_futex++;
                        syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
                        usleep(20000); /* let the readers take their message one at a time */
                        printf("fed %u\n", message);
                } else if (strncmp(line, "stop", 4) == 0)
                        break;
        }
        atomic_store(&stop, 1);
        /* Wake the blocked ones so they see stop. */
        (void) !write(read_pipe[1], "x", 1);
        (void) !write(regs_pipe[1], "regs\n", 5);
        atomic_fetch_add(&futex_word, 1);
        syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++)
                pthread_join(pt[i], NULL);
        printf("summary %ld checks, %d failures\n", atomic_load(&rounds), atomic_load(&failures));
        return atomic_load(&failures) ? 1 : 0;
}
