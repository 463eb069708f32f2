/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>

#include "inject.h"
#include "memgov/actuator.h"
#include "memgov/parse-proc.h"
#include "memgov/policy.h"

/* Allocator trim: give back to the kernel the memory the allocator of a running server keeps
 * after the server freed it: glibc malloc_trim(0), jemalloc arena.<all>.purge, tcmalloc
 * ReleaseFreeMemory, called inside the server by injection (ptrace) or through SQL. */

typedef struct TrimPlan {
        pid_t pid;
        Allocator allocator;
        const char *function;    /* what is called */
        const char *arg_string;  /* its first argument, when a string (jemalloc's mallctl name) */
        uint64_t fn_addr;        /* in the target */
        uint64_t stub_addr;      /* where the injection stub goes */
        uint64_t mailbox_addr;   /* where it reports; 0 = on the stack */
        size_t mailbox_room;
        char library[PATH_MAX];  /* the file the function comes from */
} TrimPlan;

typedef struct TrimReport {
        TrimMethod method; /* the method that ran: ptrace or sql */
        Allocator allocator;
        const char *function;
        InjectReport inject;  /* ptrace */
        usec_t duration;      /* of the call */
        /* ptrace: how long the trim took in all, and of that finding the allocator and its
         * function in the process (the rest: choosing, holding and letting go threads, the
         * call, the RSS) */
        usec_t took, planning;
        uint64_t rss_before, rss_after, freed;
        bool has_freed;
        /* sql: memgov_trim() answered NULL: another trim ran in the server within its last 10 s
         * (any account may call it), and this call trimmed nothing */
        bool not_done;
} TrimReport;

/* Whether this process may be traced by us, and if not, why (Yama, capabilities, another
 * tracer, a CET shadow stack). */
int trim_ptrace_preflight(pid_t pid, char *why, size_t why_size);

/* Finds the allocator and resolves its release function in the target's own copy of the library
 * (through /proc/PID/root, or map_files for a library replaced on disk). */
int trim_plan(pid_t pid, TrimPlan *ret, char *why, size_t why_size);

/* The ptrace method: plan, inject, measure. tid 0 chooses the thread. starttime: the process's
 * start time as the caller found it (-ESRCH when pid names another process now), 0 = now. */
int trim_by_ptrace(pid_t pid, uint64_t starttime, pid_t tid, bool dry_run, int phase_fd, TrimReport *ret, char *why,
                   size_t why_size);

/* RSS of a process, from /proc/PID/status. */
int process_rss(pid_t pid, uint64_t *ret);

/* The sql method: SELECT memgov_trim() in a connection of the server's own (the loadable
 * function of src/udf/), with the policy's [sql] settings. */
int trim_by_sql(const Policy *p, pid_t pid, bool dry_run, TrimReport *ret, char *why, size_t why_size);

/* A trim by the given method; auto tries ptrace, then sql when ptrace is refused. */
int trim_run(const Policy *p, pid_t pid, uint64_t starttime, pid_t tid, TrimMethod method, bool dry_run, int phase_fd,
             TrimReport *ret, char *why, size_t why_size);

/* One line, as `memgov trim` and the daemon's logs print it. */
void trim_report_text(pid_t pid, const TrimReport *r, int error, const char *why, bool dry_run, char *buf, size_t size);
struct json_object *trim_report_json(pid_t pid, const TrimReport *r, int error, const char *why, bool dry_run);

/* The trim rung's actuator (actuator_fn): trim_run on the target, its report as the result. */
int trim_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
