/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/explain.h"
#include "memgov/policy.h"

/* What is measured: the server process and its cgroup v2 (cgroup_fd -1: none). */
typedef struct ExplainTarget {
        pid_t pid;           /* 0 = none */
        uint64_t starttime;  /* of pid, as the caller found it */
        int cgroup_fd;
        const char *cgroup;  /* its path, for messages */
        int proc_fd;         /* procfs */
} ExplainTarget;

/* Measures what memgov explain splits, for a resolved target: its cgroup's memory files, the
 * server process's status and maps, the server over [sql] (its pool, the memory it counts, its
 * sessions and limits), and, with allocator, the allocator's own statistics by an injected call.
 * What cannot be measured is left out (its has_ flag false), with a line in notes saying why.
 * Fails only when nothing at all can be measured. */
int explain_gather(const ExplainTarget *t, const Policy *p, bool allocator, ExplainInput *ret, char *notes,
                   size_t notes_size);
