/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/macro.h"

/* Calls a function inside a running process, in one of its threads, without stopping the
 * others and without the tracer being needed once the call started.
 *
 * One thread blocked in a system call that malloc never makes while holding a lock (read, poll,
 * nanosleep, a futex wait...) is seized and interrupted; it is let go into its system call
 * again and stopped at the entry; the call is swapped for getpid, its registers and vector
 * state are saved in a block on its own stack, and it is pointed at a small stub (in the unused
 * tail of libc's executable segment) that calls the function, restores everything and runs the
 * interrupted system call again from its start, with its arguments as they were: a read still
 * gets its data, a relative sleep (restarted through restart_syscall) its remaining time. The
 * thread is detached before the call starts: if memgov dies at any moment, the thread either
 * resumes its system call untouched or runs the stub to its end. The thread is stopped for the
 * few hundred microseconds this takes. */

#define INJECT_ARGS 6
#define INJECT_DATA_SIZE 256
#define INJECT_RESULT_SIZE 128

typedef struct InjectRequest {
        pid_t pid;
        pid_t tid;               /* 0 = choose one */
        uint64_t starttime;      /* of pid when planned: checked again once the thread is stopped (0 = not) */
        uint64_t fn;             /* the function's address in the target */
        uint64_t args[INJECT_ARGS];  /* its arguments: values, or offsets as the two masks say */
        const void *data;        /* copied into the block (strings, values the call reads)... */
        size_t data_size;        /* ...up to INJECT_DATA_SIZE bytes */
        uint8_t args_in_data;    /* bit i: args[i] is an offset into data; the call gets its address */
        uint8_t args_in_result;  /* bit i: args[i] is an offset into the result area */
        size_t result_size;      /* bytes the call may write in the result area, read back (at most
                                  * INJECT_RESULT_SIZE) */
        uint64_t stub_addr;      /* where the stub lives in the target (executable, unused) */
        uint64_t mailbox_addr;   /* unused writable bytes the stub reports to: 16, then the result
                                  * area; 0 = none (both on the thread's stack) */
        size_t mailbox_room;     /* bytes unused there, from mailbox_addr */
        usec_t timeout;          /* how long to wait for the call to return (0 = 30 s) */
        bool dry_run;            /* choose, check, do not touch the process */
        int phase_fd;            /* test hook: one byte per step written here; -1 = none */
} InjectRequest;

typedef struct InjectReport {
        pid_t tid;
        long syscall_nr;
        const char *syscall_name;
        usec_t held;     /* how long the thread was stopped */
        usec_t call;     /* from letting it go until the call had returned */
        uint64_t ret;    /* what the function returned */
        uint8_t result[INJECT_RESULT_SIZE]; /* the result area as the call left it */
        bool completed;  /* the stub said the call returned */
        unsigned tried;  /* threads tried: one, unless one had too little stack or had left its call */
} InjectReport;

/* The stub's bytes, for copying into a target. */
const uint8_t *inject_stub(size_t *ret_size);

/* Picks the thread to use: state S, blocked in an eligible system call, with stack room.
 * -ESRCH with why when no thread qualifies. With tid given, checks that one. */
int inject_choose_thread(pid_t pid, pid_t tid, const pid_t *skip, unsigned n_skip, pid_t *ret_tid, long *ret_nr,
                         char *why, size_t why_size);

const char *syscall_name(long nr);

/* Calls the function in one thread; a thread found with too little stack for the call, or gone
 * out of its system call as it was stopped, is let go and another one tried (up to
 * INJECT_MAX_THREADS). */
#define INJECT_MAX_THREADS 4
int inject_call(const InjectRequest *q, InjectReport *ret, char *why, size_t why_size);

/* Test hook: the phases inject_call reports on phase_fd. */
enum {
        INJECT_PHASE_SEIZED = 1,
        INJECT_PHASE_INTERRUPTED,
        INJECT_PHASE_AT_ENTRY,
        INJECT_PHASE_BLOCK_WRITTEN,
        INJECT_PHASE_REGS_SET,
        INJECT_PHASE_DETACHED,
        INJECT_PHASE_DONE,
};
