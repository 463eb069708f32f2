/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"

/* Actions run on threads of their own, one per lane (ActionInfo.lane), one job at a time and in
 * order within a lane: a memory.high write can block while the kernel reclaims, a trim stops a
 * thread of the server, a reset waits for SQL, and a limit or a restart must not wait behind a
 * buffer-pool resize on a swamped server. The event loop hands jobs over, is woken through an
 * eventfd when results are ready (of any lane), and notices a job that overruns its time. */

#define ACTION_QUEUE 8
/* How long past its timeout a job may still run before the thread counts as wedged: the
 * timeouts already hold the slack of a slow action, this only covers the loop's own pace. */
#define ACTION_WEDGED_MARGIN (10 * USEC_PER_SEC)

typedef struct ActionJob {
        uint64_t id;
        /* Its place among the jobs submitted: a limit's newer value takes the place, and the order,
         * of the one still queued that it replaces. */
        uint64_t order;
        Decision decision;
        ActionTarget target; /* cgroup_fd is the job's own descriptor, closed when it is done */
        Policy policy;
        bool dry_run;
        usec_t submitted, started, finished; /* CLOCK_MONOTONIC */
        /* What its lane was doing when it was submitted: the idle hook (the upkeep of the
         * server: its kept SQL session, the buffer pool's fill, explain's figures), and how many
         * jobs were under way or waiting ahead of it. */
        bool behind_idle;
        unsigned behind_jobs;
        ActionResult result;
} ActionJob;

/* The thread, its queue and its lock: private to action-worker.c. */
typedef struct ActionWorker ActionWorker;

/* Starts the thread. timeout: how long a job may run (the engine hears it failed then, and
 * past it the thread counts as wedged), NULL = no limit. */
int action_worker_new(ActionWorker **ret, const ActuatorOps *ops, void *userdata,
                      usec_t (*timeout)(const Policy *p, ActionKind k));
/* Stops the thread once it finished its job; a job stuck in the kernel is left behind, with the
 * worker's memory (it is still in use). NULL is fine. Returns NULL. */
ActionWorker *action_worker_free(ActionWorker *w);
/* The eventfd that becomes readable when finished jobs wait to be collected. */
int action_worker_fd(const ActionWorker *w);

/* Queues a job on its action's lane (the worker takes ownership of job->target.cgroup_fd). A job
 * that sets a limit (memory.high, memory.max) replaces one of its kind still waiting, dry run
 * for dry run (a dry run's never takes the place of a real write): only the latest value
 * matters. An emergency reset (ACTION_EMERGENCY_RESET) goes ahead of the jobs waiting on its lane,
 * not of the one under way. -EBUSY when the lane's queue is full. Job ids are the worker's, across lanes. */
int action_worker_submit(ActionWorker *w, ActionJob *job);
/* The server the worker's idle hook (ActuatorOps.idle) works for, between the jobs of the server's
 * lane (its thread alone has the thread hooks): called after each sample; a new process (or the
 * first) wakes the thread. target->cgroup_fd is not used. */
void action_worker_keep(ActionWorker *w, const ActionTarget *target, const Policy *policy, bool dry_run);
/* The state file every job and the idle hook record their changes in (ActionContext.state):
 * set once, before the first job. */
void action_worker_set_state(ActionWorker *w, StateFile *state);
/* Into buf: "" when a finished job began within ACTION_WAITED_SAY of its submission, else how
 * long it waited and behind what ("; begun 7s after it was decided, behind ..."). */
#define ACTION_WAITED_SAY USEC_PER_SEC
void action_job_waited(const ActionJob *j, char *buf, size_t size);
/* Takes the finished jobs, up to max; clears the eventfd. */
unsigned action_worker_collect(ActionWorker *w, ActionJob *out, unsigned max);
/* The actions waiting, being carried out, or finished with their result not collected yet:
 * bits (1 << ActionKind), as Sample.pending. */
unsigned action_worker_pending(ActionWorker *w);
/* The job being carried out for the longest, of all lanes, if any: its id, decision and start
 * time. */
bool action_worker_current(const ActionWorker *w, uint64_t *ret_id, Decision *ret_decision, usec_t *ret_started);
/* The same, of one lane. */
bool action_worker_current_in(const ActionWorker *w, ActionLane lane, uint64_t *ret_id, Decision *ret_decision,
                              usec_t *ret_started);
/* Whether a job being carried out (of any lane) has run past its timeout (the worker's, under
 * the policy it runs with) and ACTION_WEDGED_MARGIN: its thread is wedged (a write stuck in the
 * kernel, a call that does not come back) and nothing queued after it on its lane will run. Its
 * decision and how long it has run, when it is. */
bool action_worker_wedged(const ActionWorker *w, usec_t now, Decision *ret_decision, usec_t *ret_running);
