/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <cpuid.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject-layout.h"
#include "inject.h"
#include "memgov/clock.h"
#include "memgov/maps-reader.h"
#include "memgov/fileio.h"
#include "memgov/parse-proc.h"
#include "memgov/target.h"

extern const uint8_t memgov_inject_stub_start[], memgov_inject_stub_end[];

/* Kernel-internal return values of an interrupted system call that the kernel restarts. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

#define STACK_RED_ZONE 128
#define STACK_ROOM_NEEDED (64U << 10) /* below the block, for the call itself */
#define FUTEX_CMD_MASK 0x7f

const uint8_t *inject_stub(size_t *ret_size) {
        assert(ret_size);
        *ret_size = (size_t) (memgov_inject_stub_end - memgov_inject_stub_start);
        return memgov_inject_stub_start;
}

/* System calls a thread may be taken out of: malloc never makes them while holding one of its
 * locks, and the kernel restarts them after a ptrace stop (epoll_wait returns EINTR instead:
 * not here). Lower rank first. */
static const struct {
        long nr;
        const char *name;
        int rank;
} eligible[] = {
        { SYS_read, "read", 0 },
        { SYS_readv, "readv", 0 },
        { SYS_pread64, "pread64", 0 },
        { SYS_recvfrom, "recvfrom", 0 },
        { SYS_recvmsg, "recvmsg", 0 },
        { SYS_accept, "accept", 0 },
        { SYS_accept4, "accept4", 0 },
        { SYS_poll, "poll", 1 },
        { SYS_ppoll, "ppoll", 1 },
        { SYS_select, "select", 1 },
        { SYS_pselect6, "pselect6", 1 },
        { SYS_wait4, "wait4", 1 },
        { SYS_pause, "pause", 2 },
        { SYS_nanosleep, "nanosleep", 2 },
        { SYS_clock_nanosleep, "clock_nanosleep", 2 },
        { SYS_futex, "futex", 3 },
};

const char *syscall_name(long nr) {
        for (size_t i = 0; i < ELEMENTSOF(eligible); i++)
                if (eligible[i].nr == nr)
                        return eligible[i].name;
        return nr == SYS_restart_syscall ? "restart_syscall" : "syscall";
}

static int rank_of(long nr, uint64_t arg1) {
        for (size_t i = 0; i < ELEMENTSOF(eligible); i++)
                if (eligible[i].nr == nr) {
                        /* Only plain waits: FUTEX_WAIT, FUTEX_WAIT_BITSET; never PI locks. */
                        if (nr == SYS_futex && (arg1 & FUTEX_CMD_MASK) != 0 && (arg1 & FUTEX_CMD_MASK) != 9)
                                return -1;
                        return eligible[i].rank;
                }
        return -1;
}

/* /proc/PID/task/TID/syscall of a blocked thread: "NR ARG1 ... ARG6 SP PC". */
static int thread_syscall(pid_t pid, pid_t tid, long *ret_nr, uint64_t *ret_arg1, uint64_t *ret_sp) {
        char path[96], buf[512], state[1024];
        ProcStat st;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int) pid, (int) tid);
        ssize_t n = read_small_file_at(AT_FDCWD, path, state, sizeof(state));
        if (n < 0)
                return (int) n;
        if (parse_proc_stat(state, (size_t) n, &st) < 0)
                return -EBADMSG;
        if (st.state != 'S')
                return -EBUSY; /* running, or in an uninterruptible sleep */

        snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int) pid, (int) tid);
        n = read_small_file_at(AT_FDCWD, path, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        unsigned long long nr, a1, a2, a3, a4, a5, a6, sp;
        if (sscanf(buf, "%lld 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", (long long *) &nr, &a1, &a2, &a3,
                   &a4, &a5, &a6, &sp) != 8)
                return -EBUSY; /* "running" or "-1 sp pc": not in a system call */
        *ret_nr = (long) nr;
        *ret_arg1 = a2; /* the futex op is the second argument */
        *ret_sp = sp;
        return 0;
}

static bool skipped(pid_t t, const pid_t *skip, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                if (skip[i] == t)
                        return true;
        return false;
}

int inject_choose_thread(pid_t pid, pid_t tid, const pid_t *skip, unsigned n_skip, pid_t *ret_tid, long *ret_nr,
                         char *why, size_t why_size) {
        assert(ret_tid);
        assert(ret_nr);
        assert(why);
        char path[64];
        pid_t best = 0;
        long best_nr = -1;
        int best_rank = 100;
        unsigned seen = 0, denied = 0;

        if (tid > 0) {
                long nr;
                uint64_t a1, sp;
                int r = thread_syscall(pid, tid, &nr, &a1, &sp);
                if (r == -ENOENT) {
                        snprintf(why, why_size, "thread %d of %d does not exist", (int) tid, (int) pid);
                        return -ESRCH;
                }
                if (r < 0 || rank_of(nr, a1) < 0) {
                        snprintf(why, why_size, "thread %d is not blocked in a system call it can be taken out of", (int) tid);
                        return -EBUSY;
                }
                *ret_tid = tid;
                *ret_nr = nr;
                return 0;
        }

        snprintf(path, sizeof(path), "/proc/%d/task", (int) pid);
        DIR *d = opendir(path);
        if (!d) {
                snprintf(why, why_size, "cannot list the threads of %d: %m", (int) pid);
                return errno == ENOENT ? -ESRCH : negative_errno();
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                char *end;
                long t = strtol(de->d_name, &end, 10);
                long nr;
                uint64_t a1, sp;
                if (*end || t <= 0)
                        continue;
                seen++;
                if (skipped((pid_t) t, skip, n_skip))
                        continue;
                int r = thread_syscall(pid, (pid_t) t, &nr, &a1, &sp);
                if (r == -EACCES || r == -EPERM)
                        denied++;
                if (r < 0)
                        continue;
                int rank = rank_of(nr, a1);
                if (rank < 0 || rank >= best_rank)
                        continue;
                best = (pid_t) t;
                best_nr = nr;
                best_rank = rank;
        }
        closedir(d);
        if (!best && denied > 0) {
                snprintf(why, why_size, "cannot read what the threads of %d are doing (/proc/%d/task/TID/syscall: "
                                        "permission denied): a server of another user needs CAP_SYS_PTRACE and "
                                        "CAP_DAC_READ_SEARCH", (int) pid, (int) pid);
                return -EACCES;
        }
        if (!best) {
                snprintf(why, why_size, "none of the %u threads of %d is blocked in a system call it can be taken "
                                        "out of (read, poll, sleep, futex wait...)", seen, (int) pid);
                return seen ? -EAGAIN : -ESRCH;
        }
        *ret_tid = best;
        *ret_nr = best_nr;
        return 0;
}

static size_t xsave_size(void) {
        unsigned a, b, c, d;
        /* CPUID 0Dh, sub-leaf 0, EBX: the XSAVE area size for the features enabled in XCR0. */
        if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b == 0)
                return 4096;
        return (b + 63) & ~(size_t) 63;
}

static void phase(const InjectRequest *q, int p) {
        if (q->phase_fd >= 0) {
                uint8_t b = (uint8_t) p;
                (void) !write(q->phase_fd, &b, 1);
        }
}

/* How long a thread may take to reach a ptrace stop. A thread stops within microseconds, except
 * one that entered, between our check and the interrupt, a wait no stop can break (the parent
 * side of vfork(), until its child execs or exits). */
#define STOP_TIMEOUT (2 * USEC_PER_SEC)

/* Waits for tid's next stop until deadline: polled, so that a thread that never stops cannot
 * wedge memgov's worker. A few yields first: the stop usually comes within microseconds, and
 * the thread is held meanwhile. */
static int wait_stop(pid_t tid, usec_t deadline, int *ret_status) {
        usec_t start = now_clock(CLOCK_MONOTONIC);
        for (;;) {
                pid_t r = waitpid(tid, ret_status, __WALL | WNOHANG);
                if (r == tid)
                        return 0;
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return negative_errno();
                if (r != 0)
                        return -ECHILD;
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return -ETIMEDOUT;
                if (now - start < USEC_PER_MSEC)
                        sched_yield();
                else {
                        struct timespec ts = { .tv_nsec = 1000 * 1000 };
                        nanosleep(&ts, NULL);
                }
        }
}

/* Lets the thread go untouched, handing back a signal caught on the way. */
static void let_go(pid_t tid, int sig) {
        (void) ptrace(PTRACE_DETACH, tid, NULL, (void *) (long) sig);
}

/* The target's memory is read and written with process_vm_readv/writev, which need ptrace
 * access to the target and nothing else: /proc/PID/mem would also need write permission on a
 * file that belongs to the server's user. */
static int mem_read(pid_t pid, uint64_t addr, void *buf, size_t n) {
        struct iovec local = { buf, n }, remote = { (void *) (uintptr_t) addr, n };
        ssize_t k = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        return k == (ssize_t) n ? 0 : k < 0 ? negative_errno() : -EIO;
}

static int mem_write(pid_t pid, uint64_t addr, const void *buf, size_t n) {
        struct iovec local = { (void *) buf, n }, remote = { (void *) (uintptr_t) addr, n };
        ssize_t k = process_vm_writev(pid, &local, 1, &remote, 1, 0);
        return k == (ssize_t) n ? 0 : k < 0 ? negative_errno() : -EIO;
}

/* Whether the call stub is in place at addr; -ENOSPC when something else is there. A stub left
 * half written (its writer died) is all stub bytes and zeros, and is written again. */
static int check_stub(pid_t pid, uint64_t addr, bool *ret_present, char *why, size_t why_size) {
        size_t size;
        const uint8_t *stub = inject_stub(&size);
        uint8_t cur[256];

        /* Whole words: the stub goes in with word writes, padded with zeros. */
        size_t padded = (size + sizeof(long) - 1) / sizeof(long) * sizeof(long);
        if (padded > sizeof(cur))
                return -E2BIG;
        int r = mem_read(pid, addr, cur, padded);
        if (r < 0) {
                snprintf(why, why_size, "cannot read the target's memory at %#llx: %s", (unsigned long long) addr,
                         strerror(-r));
                return r;
        }
        *ret_present = memcmp(cur, stub, size) == 0;
        for (size_t i = 0; i < padded; i++)
                if (cur[i] != 0 && (i >= size || cur[i] != stub[i])) {
                        snprintf(why, why_size, "the tail of libc's executable segment at %#llx is not empty: "
                                                "no room for the call stub", (unsigned long long) addr);
                        return -ENOSPC;
                }
        return 0;
}

/* Before the thread is stopped, when /proc/PID/mem may be opened for writing (a server of the
 * same user, or one that changed its user and is no longer dumpable): the hold stays shortest.
 * Otherwise poke_stub() does it while the thread is held. */
static bool write_stub_early(pid_t pid, uint64_t addr) {
        size_t size;
        const uint8_t *stub = inject_stub(&size);
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/mem", (int) pid);
        _cleanup_close_ int mem = open(path, O_WRONLY | O_CLOEXEC);
        return mem >= 0 && pwrite(mem, stub, size, (off_t) addr) == (ssize_t) size;
}

/* Writes the stub into libc's read-only executable segment: only ptrace's forced writes can,
 * one word at a time, while tid is stopped by us. The segment's tail past the stub is zeros,
 * and stays so. */
static int poke_stub(pid_t tid, uint64_t addr, char *why, size_t why_size) {
        size_t size;
        const uint8_t *stub = inject_stub(&size);

        for (size_t off = 0; off < size; off += sizeof(long)) {
                long word = 0;
                memcpy(&word, stub + off, MIN(sizeof(long), size - off));
                if (ptrace(PTRACE_POKEDATA, tid, (void *) (uintptr_t) (addr + off), (void *) word) < 0) {
                        int r = negative_errno();
                        snprintf(why, why_size, "cannot write the call stub into the target: %s", strerror(-r));
                        return r;
                }
        }
        return 0;
}

/* The part of an injection done as the thread's tracer, from PTRACE_SEIZE to PTRACE_DETACH. It
 * runs in a short-lived thread of its own: ptrace ties a tracee to the tracer *thread*, and the
 * kernel detaches every tracee of a thread that exits, clearing a pending PTRACE_INTERRUPT. So
 * a thread that would not stop in time (PTRACE_DETACH needs a stopped tracee) is let go by
 * ending the tracer thread, not left traced with a stop to come that nobody would wait for. */
typedef struct Hold {
        const InjectRequest *q;
        pid_t tid;
        long nr;
        bool stub_present;
        InjectReport *ret;
        char *why;
        size_t why_size;

        usec_t t0;         /* when the thread was seized */
        bool stopped;      /* in a stop of ours: a failure detaches it, handing back signal */
        int signal;
        struct user_regs_struct entry; /* at the system call's entry */
        uint64_t base;     /* of the block on the thread's stack */

        uint64_t mailbox, seq; /* set once the thread runs the stub */
        usec_t detached;
        int r;
} Hold;

/* INJECT_PHASE_SEIZED. PTRACE_SEIZE, not PTRACE_ATTACH: no SIGSTOP that the process could see
 * or that another thread could take. No PTRACE_O_EXITKILL, ever: if we die, the thread must go
 * on. */
static int seize(Hold *h) {
        if (ptrace(PTRACE_SEIZE, h->tid, NULL, (void *) PTRACE_O_TRACESYSGOOD) < 0) {
                int r = negative_errno();
                snprintf(h->why, h->why_size, "cannot trace thread %d: %s", (int) h->tid, strerror(-r));
                return r;
        }
        phase(h->q, INJECT_PHASE_SEIZED);
        h->t0 = now_clock(CLOCK_MONOTONIC);
        return 0;
}

/* INJECT_PHASE_INTERRUPTED. Out of its system call into a ptrace stop the process does not
 * see; the kernel restarts the call once the thread goes on. A thread that does not stop within
 * STOP_TIMEOUT is left to the tracer thread's end. */
static int interrupt(Hold *h) {
        int status, r;

        if (ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL) < 0) {
                r = negative_errno();
                snprintf(h->why, h->why_size, "cannot stop thread %d: %s", (int) h->tid, strerror(-r));
                return r;
        }
        if ((r = wait_stop(h->tid, h->t0 + STOP_TIMEOUT, &status)) < 0) {
                if (r == -ETIMEDOUT)
                        snprintf(h->why, h->why_size,
                                 "thread %d did not stop within %llu s (it entered a wait no ptrace stop "
                                 "interrupts, e.g. the parent side of vfork()): let go",
                                 (int) h->tid, (unsigned long long) (STOP_TIMEOUT / USEC_PER_SEC));
                else
                        snprintf(h->why, h->why_size, "cannot stop thread %d: %s", (int) h->tid, strerror(-r));
                return r == -ETIMEDOUT ? r : -EAGAIN;
        }
        phase(h->q, INJECT_PHASE_INTERRUPTED);
        h->stopped = true;
        if (!WIFSTOPPED(status) || (status >> 16) != PTRACE_EVENT_STOP) {
                /* A signal got there first: hand it over and leave. */
                h->signal = WIFSTOPPED(status) ? WSTOPSIG(status) : 0;
                snprintf(h->why, h->why_size, "thread %d stopped for a signal instead", (int) h->tid);
                return -EAGAIN;
        }
        return 0;
}

/* What can only be checked once the thread is held: that the process is still the one the
 * plan (addresses in libc) was made for, the pid not reused since the thread was chosen; and
 * that the thread was stopped inside the system call it was chosen in, not anywhere else
 * (inside malloc, say) after it left it. */
static int check_held(Hold *h) {
        const InjectRequest *q = h->q;
        struct user_regs_struct regs;
        int r;

        if (q->starttime != 0) {
                char task[96];
                snprintf(task, sizeof(task), "/proc/%d/task/%d", (int) q->pid, (int) h->tid);
                r = proc_check_starttime(AT_FDCWD, q->pid, q->starttime);
                if (r == 0 && access(task, F_OK) < 0)
                        r = -ESRCH;
                if (r < 0) {
                        snprintf(h->why, h->why_size,
                                 "process %d is not the one the trim was planned for (%s): thread %d let go untouched",
                                 (int) q->pid,
                                 r != -ESRCH ? strerror(-r) : "its start time differs, the pid was reused",
                                 (int) h->tid);
                        return -ESRCH;
                }
        }
        if (ptrace(PTRACE_GETREGS, h->tid, NULL, &regs) < 0) {
                r = negative_errno();
                snprintf(h->why, h->why_size, "cannot read the registers of thread %d: %s", (int) h->tid, strerror(-r));
                return r;
        }
        long rax = (long) regs.rax;
        if ((long) regs.orig_rax != h->nr || (rax != -ERESTARTSYS && rax != -ERESTARTNOINTR && rax != -ERESTARTNOHAND &&
                                              rax != -ERESTART_RESTARTBLOCK)) {
                snprintf(h->why, h->why_size, "thread %d was no longer in %s when stopped", (int) h->tid,
                         syscall_name(h->nr));
                return -EAGAIN;
        }
        return 0;
}

/* INJECT_PHASE_AT_ENTRY. Back into the system call, which the kernel restarts, and stopped at
 * its entry: there the registers hold its arguments as they were and the number it runs again
 * (restart_syscall for a sleep), everything the stub needs to run it again after the call. */
static int stop_at_entry(Hold *h) {
        int status, r;

        if (ptrace(PTRACE_SYSCALL, h->tid, NULL, NULL) < 0) {
                r = negative_errno();
                snprintf(h->why, h->why_size, "cannot resume thread %d to its system call: %s", (int) h->tid,
                         strerror(-r));
                return r;
        }
        h->stopped = false;
        if ((r = wait_stop(h->tid, now_clock(CLOCK_MONOTONIC) + STOP_TIMEOUT, &status)) < 0) {
                snprintf(h->why, h->why_size, "thread %d did not come back to its system call's entry: %s",
                         (int) h->tid, strerror(-r));
                return r == -ETIMEDOUT ? r : -EAGAIN;
        }
        h->stopped = true;
        if (!WIFSTOPPED(status) || WSTOPSIG(status) != (SIGTRAP | 0x80)) {
                h->signal = WIFSTOPPED(status) && WSTOPSIG(status) != SIGTRAP && (status >> 16) == 0 ? WSTOPSIG(status)
                                                                                                     : 0;
                snprintf(h->why, h->why_size, "thread %d did not re-enter its system call", (int) h->tid);
                return -EAGAIN;
        }
        phase(h->q, INJECT_PHASE_AT_ENTRY);
        if (ptrace(PTRACE_GETREGS, h->tid, NULL, &h->entry) < 0) {
                r = negative_errno();
                snprintf(h->why, h->why_size, "cannot read the registers of thread %d: %s", (int) h->tid, strerror(-r));
                return r;
        }
        return 0;
}

/* INJECT_PHASE_BLOCK_WRITTEN. The call's data and the saved registers, in a block on the
 * thread's own stack below its red zone (where nothing of the thread's is), with room for the
 * call under it: -EMSGSIZE when there is not, for inject_call to try another thread. The stub
 * goes in too if it is not there yet (only ptrace's forced writes can, while the thread is
 * ours). The thread does not see any of it until its registers point there. */
static int write_block(Hold *h) {
        const InjectRequest *q = h->q;
        const struct user_regs_struct *entry = &h->entry;
        int r;

        /* The syscall instruction the thread will run again. */
        uint8_t insn[2];
        if (mem_read(q->pid, entry->rip - 2, insn, 2) < 0 || insn[0] != 0x0f || insn[1] != 0x05) {
                snprintf(h->why, h->why_size, "thread %d: no syscall instruction before %#llx", (int) h->tid,
                         (unsigned long long) entry->rip);
                return -EPROTO;
        }

        size_t xs = xsave_size();
        size_t data_off = INJECT_XSAVE + xs;
        size_t box_off = data_off + INJECT_DATA_SIZE;
        size_t regs_off = box_off + 16;
        size_t size = regs_off + INJECT_SAVED_COUNT * 8;
        uint64_t base = (entry->rsp - STACK_RED_ZONE - size) & ~(uint64_t) 63;
        {
                uint64_t start, end;
                char perms[5];
                /* Streamed: the whole file of a server with many mappings is large. */
                r = maps_read_find(AT_FDCWD, q->pid, entry->rsp, &start, &end, perms);
                if (r < 0 || base < start + STACK_ROOM_NEEDED || perms[0] != 'r' || perms[1] != 'w') {
                        snprintf(h->why, h->why_size, "thread %d has too little stack left for the call", (int) h->tid);
                        return -EMSGSIZE;
                }
        }
        _cleanup_free_ uint8_t *block = calloc(1, size);
        if (!block)
                return -ENOMEM;
        uint64_t *w = (uint64_t *) block;
        if (q->data_size)
                memcpy(block + data_off, q->data, q->data_size);
        /* Without a mailbox, the stub reports into a box of its own block (good while the thread
         * blocks again in its system call, which is the common case). */
        uint64_t seq = ((uint64_t) getpid() << 32) ^ now_clock(CLOCK_MONOTONIC);
        uint64_t mailbox = q->mailbox_addr ? q->mailbox_addr : base + box_off;
        w[INJECT_FN / 8] = q->fn;
        for (unsigned i = 0; i < INJECT_ARGS; i++) {
                uint64_t a = q->args[i];
                if (q->args_in_data & (1U << i))
                        a = a < q->data_size ? base + data_off + a : 0;
                else if (q->args_in_result & (1U << i))
                        a = a < q->result_size ? mailbox + 16 + a : 0;
                w[(i == 0 ? INJECT_ARG0 : INJECT_ARG1 + 8 * (i - 1)) / 8] = a;
        }
        w[INJECT_MAILBOX / 8] = mailbox;
        w[INJECT_SEQ / 8] = seq;
        w[INJECT_REGS_OFF / 8] = regs_off;
        memcpy(block + INJECT_MAGIC, "memgov\0", 8);
        uint64_t *saved = (uint64_t *) (block + regs_off);
        saved[INJECT_SAVED_RFLAGS] = entry->eflags;
        saved[INJECT_SAVED_R9] = entry->r9;
        saved[INJECT_SAVED_R8] = entry->r8;
        saved[INJECT_SAVED_R10] = entry->r10;
        saved[INJECT_SAVED_RDX] = entry->rdx;
        saved[INJECT_SAVED_RSI] = entry->rsi;
        saved[INJECT_SAVED_RDI] = entry->rdi;
        saved[INJECT_SAVED_RAX] = entry->orig_rax; /* the call, or restart_syscall for a sleep */
        saved[INJECT_SAVED_TARGET] = entry->rip - 2;
        saved[INJECT_SAVED_RSP] = entry->rsp;
        /* The first call into this process: the stub goes in now, while the thread is ours. */
        if (!h->stub_present && (r = poke_stub(h->tid, q->stub_addr, h->why, h->why_size)) < 0)
                return r;
        static const uint8_t zeros[INJECT_RESULT_SIZE];
        if (q->result_size && (r = mem_write(q->pid, mailbox + 16, zeros, q->result_size)) < 0) {
                snprintf(h->why, h->why_size, "cannot clear the result area in process %d: %s", (int) q->pid,
                         strerror(-r));
                return r;
        }
        if ((r = mem_write(q->pid, base, block, size)) < 0) {
                snprintf(h->why, h->why_size, "cannot write the call's data on the stack of thread %d: %s",
                         (int) h->tid, strerror(-r));
                return r;
        }
        phase(q, INJECT_PHASE_BLOCK_WRITTEN);
        h->base = base;
        h->mailbox = mailbox;
        h->seq = seq;
        return 0;
}

/* INJECT_PHASE_REGS_SET. The one change that sends the thread through the stub: from here on
 * it runs the call whether we are still around or not. getpid instead of the system call, not
 * -1: a seccomp filter sees the number too. */
static int redirect(Hold *h) {
        struct user_regs_struct regs = h->entry;

        regs.orig_rax = SYS_getpid;
        regs.rip = h->q->stub_addr;
        regs.rsp = h->base;
        if (ptrace(PTRACE_SETREGS, h->tid, NULL, &regs) < 0) {
                int r = negative_errno();
                snprintf(h->why, h->why_size, "cannot set the registers of thread %d: %s", (int) h->tid, strerror(-r));
                return r;
        }
        phase(h->q, INJECT_PHASE_REGS_SET);
        return 0;
}

/* INJECT_PHASE_DETACHED. Let go before the call starts: the tracer is not needed for it, and
 * a memgov that dies from here on leaves a thread that runs the stub to its end. */
static void detach(Hold *h) {
        (void) ptrace(PTRACE_DETACH, h->tid, NULL, NULL);
        h->detached = now_clock(CLOCK_MONOTONIC);
        h->ret->held = h->detached - h->t0;
        phase(h->q, INJECT_PHASE_DETACHED);
}

/* The one way out of a failed hold. Only a thread in a stop of ours is detached here (with a
 * signal caught on the way handed back); one that is not stopped (the interrupt or the stop at
 * the entry did not come in time) is let go by the end of the tracer thread. Nothing else is to
 * undo: the thread's registers change only in redirect(), the last step, and only when it
 * succeeds; the block lies below the thread's stack pointer and red zone, in memory the thread
 * does not use; the stub stays for the next call (check_stub() knows it). */
static void give_up(Hold *h) {
        if (h->stopped)
                let_go(h->tid, h->signal);
}

static int hold(Hold *h) {
        int r;

        if ((r = seize(h)) < 0 ||
            (r = interrupt(h)) < 0 ||
            (r = check_held(h)) < 0 ||
            (r = stop_at_entry(h)) < 0 ||
            (r = write_block(h)) < 0 ||
            (r = redirect(h)) < 0) {
                give_up(h);
                return r;
        }
        detach(h);
        return 0;
}

static void *hold_thread(void *userdata) {
        Hold *h = userdata;
        h->r = hold(h);
        return NULL;
}

/* Before any thread is held: whether the stub is in place at stub_addr (and nothing else is),
 * and if not, written now when /proc/PID/mem allows it, so that the hold stays shortest. */
static int prepare_stub(const InjectRequest *q, bool *ret_present, char *why, size_t why_size) {
        bool present;

        int r = check_stub(q->pid, q->stub_addr, &present, why, why_size);
        if (r < 0)
                return r;
        if (!present) {
                /* Written before any thread is held: the pid must still name the process the
                 * plan was made for, or the stub would go into another one. */
                if (q->starttime != 0 && proc_check_starttime(AT_FDCWD, q->pid, q->starttime) < 0) {
                        snprintf(why, why_size, "process %d is not the one the trim was planned for (its start time "
                                                "differs, the pid was reused): nothing written", (int) q->pid);
                        return -ESRCH;
                }
                present = write_stub_early(q->pid, q->stub_addr);
        }
        *ret_present = present;
        return 0;
}

/* SEIZED to DETACHED, in the tracer thread (see Hold). Once joined, the tracer thread is gone,
 * and with it any hold on the thread it left. */
static int run_hold(Hold *h) {
        pthread_t t;
        pthread_attr_t attr;

        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        int r = -pthread_create(&t, &attr, hold_thread, h);
        pthread_attr_destroy(&attr);
        if (r < 0) {
                snprintf(h->why, h->why_size, "cannot start the tracer thread: %s", strerror(-r));
                return r;
        }
        (void) pthread_join(t, NULL);
        return h->r;
}

/* INJECT_PHASE_DONE. The thread runs the call on its own now: the stub says it returned by
 * writing the sequence number and the return value to the mailbox. */
static int wait_done(const InjectRequest *q, const Hold *h, InjectReport *ret, char *why, size_t why_size) {
        usec_t t1 = h->detached;
        usec_t limit = q->timeout ? q->timeout : 30 * USEC_PER_SEC;

        for (unsigned spins = 0;; spins++) {
                uint64_t box[2];
                if (mem_read(q->pid, h->mailbox, box, sizeof(box)) < 0) {
                        snprintf(why, why_size, "process %d is gone while the call ran", (int) q->pid);
                        return -ESRCH;
                }
                if (box[0] == h->seq) {
                        ret->call = now_clock(CLOCK_MONOTONIC) - t1;
                        ret->ret = box[1];
                        ret->completed = true;
                        if (q->result_size && mem_read(q->pid, h->mailbox + 16, ret->result, q->result_size) < 0) {
                                snprintf(why, why_size, "process %d is gone after the call returned", (int) q->pid);
                                return -ESRCH;
                        }
                        break;
                }
                if (now_clock(CLOCK_MONOTONIC) - t1 > limit) {
                        snprintf(why, why_size, "the call did not return within %llus", (unsigned long long) (limit / USEC_PER_SEC));
                        return -ETIMEDOUT;
                }
                struct timespec ts = { .tv_nsec = spins < 100 ? 100000 : 2000000 };
                nanosleep(&ts, NULL);
        }
        phase(q, INJECT_PHASE_DONE);
        return 0;
}

/* One thread: chosen, the stub made ready, held from SEIZED to DETACHED, the call waited for. */
static int inject_once(const InjectRequest *q, const pid_t *skip, unsigned n_skip, InjectReport *ret, char *why,
                       size_t why_size) {
        long nr;
        pid_t tid;
        bool stub_present;
        int r;

        *ret = (InjectReport) {};
        why[0] = '\0';
        r = inject_choose_thread(q->pid, q->tid, skip, n_skip, &tid, &nr, why, why_size);
        if (r < 0)
                return r;
        ret->tid = tid;
        ret->syscall_nr = nr;
        ret->syscall_name = syscall_name(nr);
        if (q->dry_run)
                return 0;

        r = prepare_stub(q, &stub_present, why, why_size);
        if (r < 0)
                return r;
        Hold h = {
                .q = q,
                .tid = tid,
                .nr = nr,
                .stub_present = stub_present,
                .ret = ret,
                .why = why,
                .why_size = why_size,
        };
        r = run_hold(&h);
        if (r < 0)
                return r;
        return wait_done(q, &h, ret, why, why_size);
}

/* What the request asks that no thread could give: checked before any thread is chosen or
 * held, so that the answer does not depend on what the server's threads are doing. */
static int check_request(const InjectRequest *q, char *why, size_t why_size) {
        if (q->data_size > INJECT_DATA_SIZE || q->result_size > INJECT_RESULT_SIZE) {
                snprintf(why, why_size, "the call's data (%zu bytes) or result (%zu bytes) is larger than the block holds",
                         q->data_size, q->result_size);
                return -E2BIG;
        }
        /* The result area lies after the mailbox, never on the stack: once the thread's system
         * call returns, it may write over its stack before memgov read it. */
        if (q->result_size && (!q->mailbox_addr || q->mailbox_room < 16 + q->result_size)) {
                snprintf(why, why_size, "no room for the call's result in process %d", (int) q->pid);
                return -ENOSPC;
        }
        return 0;
}

int inject_call(const InjectRequest *q, InjectReport *ret, char *why, size_t why_size) {
        assert(q);
        assert(ret);
        assert(why);
        pid_t skip[INJECT_MAX_THREADS];
        unsigned n = 0;

        *ret = (InjectReport) {};
        int r = check_request(q, why, why_size);
        if (r < 0)
                return r;

        for (;;) {
                r = inject_once(q, skip, n, ret, why, why_size);
                ret->tried = n + 1;
                /* Let go untouched, having left its system call as it was stopped: a thread that
                 * goes in and out of one (a reader's pread64) would be chosen again each time;
                 * another one is tried. */
                if (r == -EAGAIN && ret->tid > 0 && q->tid <= 0 && n + 1 < INJECT_MAX_THREADS) {
                        skip[n++] = ret->tid;
                        continue;
                }
                if (r != -EMSGSIZE)
                        return r;
                /* Let go untouched: another thread may have the room. */
                if (q->tid > 0 || n + 1 == INJECT_MAX_THREADS)
                        return -ENOSPC;
                skip[n++] = ret->tid;
        }
}
