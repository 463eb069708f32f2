/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/actuator.h"
#include "memgov/macro.h"

/* Commands from the policy (reset.exec, restart.pre-hook, restart.post-hook): split into argv
 * (no shell); when memgov is root, the executable and every directory above it must be root's
 * and writable by nobody else (a sticky directory of root's may be); the file checked is the
 * file executed (execveat of its descriptor). Run as the leader of a session of its own, with a
 * clean environment that carries the decision, bounded by a timeout (SIGTERM to its whole
 * process group, SIGKILL to it after a grace), their output kept for the log. */

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
 * to be ended, -EPERM when it is not trusted. output receives its last line of output. Never
 * waits much longer than timeout: what the hook started is not waited for. */
int hook_run(const char *command, const HookContext *ctx, usec_t timeout, bool dry_run, char *output,
             size_t output_size, char *why, size_t why_size);

/* Waits at most timeout for the process behind pidfd to exit; whether it did. */
bool pidfd_wait_exit(int pidfd, usec_t timeout);

/* Sends sig to every process named name in the target's cgroup (and the cgroups below it), or
 * without a cgroup to its server process if so named, through pidfds opened before the checks.
 * Returns how many were signalled, -ESRCH when none. */
int signal_processes(const char *name, int sig, const ActionTarget *t, bool dry_run, char *why, size_t why_size);
