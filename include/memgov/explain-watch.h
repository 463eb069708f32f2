/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"
#include "memgov/explain.h"

/* memgov explain's measures, taken by the running memgov every explain.every from the action
 * thread's idle hook (on the SQL session kept there; the allocator by an injected call unless
 * explain.allocator = no or in a dry run), for memgov status and the metrics. */
typedef struct ExplainWatchInfo {
        bool known;         /* measured for this process */
        pid_t pid;
        uint64_t starttime;
        usec_t when;        /* CLOCK_MONOTONIC */
        usec_t took;
        ExplainInput input;
        char notes[1024];   /* what was not measured, one line each */
} ExplainWatchInfo;

/* From the idle hook: measures when explain.every has passed for this process. */
void explain_watch(const ActionContext *c);

void explain_watch_info(ExplainWatchInfo *ret);

/* The last measure's figures of the server pid (started at starttime) into a sample
 * (SAMPLE_HAS_SERVER_MEMORY, SAMPLE_HAS_ALLOCATOR), for the trace; nothing for another process
 * or before the first measure. */
void explain_watch_sample(pid_t pid, uint64_t starttime, Sample *s);
