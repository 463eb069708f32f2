/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/macro.h"

/* Commands from the policy (reset.exec, restart.pre-hook, restart.post-hook): split into argv
 * (no shell), run with a clean environment that carries the decision, bounded by a timeout
 * (SIGTERM, then SIGKILL through a pidfd), their output kept for the log. */

typedef struct HookContext {
        const char *event;  /* "reset", "pre-restart", "post-restart" */
        const char *reason; /* the decision's reason */
        const char *target; /* unit, cgroup or pid */
        const char *level;
        uint64_t working_set, budget;
        unsigned max_sessions;
        uint64_t min_memory;
        usec_t min_idle;
} HookContext;

/* Runs command; 0 when it exited 0. -EPROTO when it exited otherwise, -ETIMEDOUT when it had
 * to be ended. output receives its last line of output. */
int hook_run(const char *command, const HookContext *ctx, usec_t timeout, bool dry_run, char *output,
             size_t output_size, char *why, size_t why_size);

/* Waits at most timeout for the process behind pidfd to exit; whether it did. */
bool pidfd_wait_exit(int pidfd, usec_t timeout);

/* Sends sig to every process named name, through pidfds. Returns how many were signalled. */
int signal_processes(const char *name, int sig, bool dry_run, char *why, size_t why_size);
