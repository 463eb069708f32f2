/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>
#include <sys/types.h>

#include "memgov/engine.h"
#include "memgov/feedback.h"
#include "memgov/state-file.h"
#include "memgov/target.h"

/* Actuators carry out what the engine decided. Each family is a function in an ops table;
 * there are two tables: real and fake (records calls and fails the Nth one, for fault-injection
 * tests). Dry run sits at the lowest layer of the real table: every step runs (files opened,
 * threads chosen, sessions selected) and only the side effect becomes a "would ..." line. */

/* What an actuator needs to know of the target: a copy, since actions run off the event loop. */
typedef struct ActionTarget {
        TargetKind kind;
        char unit[256];        /* TARGET_UNIT */
        char cgroup[PATH_MAX]; /* "" = no cgroup v2 */
        int cgroup_fd;         /* owned by the job */
        pid_t pid;
        uint64_t starttime;
        char description[768];
} ActionTarget;

typedef struct ActionContext {
        const ActionTarget *target;
        const Policy *policy;
        bool dry_run;
        /* Where a change to the server or its cgroup is recorded before it is made, and forgotten
         * once put back (state-file.h); NULL: not kept (a command run once, no state directory). */
        StateFile *state;
} ActionContext;


/* An action refused with why in full: ret's detail, marked explained (no errno text after it);
 * returns error. */
_printf_(3, 4) int action_refuse(ActionResult *ret, int error, const char *fmt, ...);
/* The same for a failure whose system error says the rest: the log adds its text after the
 * sentence (": Connection refused"). Returns error. */
_printf_(3, 4) int action_fail(ActionResult *ret, int error, const char *fmt, ...);
/* An action not carried out through no fault of its own (ret->not_done: not judged, no
 * backoff): detail says why. Returns 0. */
_printf_(2, 3) int action_not_done(ActionResult *ret, const char *fmt, ...);
/* sql_connect()'s failure r, with why: -EBUSY (the kept session still awaits the reply to its
 * last statement: the server answers nothing) is action_not_done(), the rest action_fail().
 * what: the action's name for the sentence ("reset"). */
int action_sql_connect_failed(ActionResult *ret, int r, const char *what, const char *why);

typedef int (*actuator_fn)(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);

/* A table of actuators, indexed by the action they carry out. The action thread calls
 * thread_begin and thread_end on itself, and idle between jobs with the server it governs (at
 * once for a new server process, then again after the time idle returns: 0 for
 * ACTION_IDLE_EVERY): the real table keeps its SQL session there. Each may be NULL. */
typedef struct ActuatorOps {
        const char *name;
        actuator_fn run[_ACTION_KIND_MAX];
        actuator_fn run_any; /* for an action with no run[] of its own (a table that records) */
        void (*thread_begin)(void *userdata);
        void (*thread_end)(void *userdata);
        usec_t (*idle)(void *userdata, const ActionContext *c);
} ActuatorOps;

#define ACTION_IDLE_EVERY (10 * USEC_PER_SEC)
/* How often the real idle hook looks again at a server that is starting (it listens on no socket
 * yet): the clients of a connection storm come back within a second of it listening, and the
 * carried admission needs the session.
 * Seen: 137 storm clients on a new server in the 10 s between two looks. */
#define ACTION_IDLE_STARTING USEC_PER_SEC
#define ACTION_IDLE_STARTING_FOR (5 * USEC_PER_MINUTE)

extern const ActuatorOps actuator_ops_real;
extern const ActuatorOps actuator_ops_fake;

/* The fake: every call is recorded; call number fail_nth (1-based, 0 = never) of any kind fails
 * with fail_errno, and so does every call of the kinds in fail_mask. */
typedef struct FakeActuator {
        unsigned calls;
        unsigned calls_by_kind[_ACTION_KIND_MAX];
        unsigned fail_nth;
        unsigned fail_mask; /* bits 1 << ActionKind */
        int fail_errno;
        uint64_t trim_freed; /* what a successful fake trim reports */
        Decision last[_ACTION_KIND_MAX];
} FakeActuator;

void action_target_from(ActionTarget *ret, const Target *t);
/* 0 when t's pid is still the server process it was (the same start time, not a reused
 * number), -ESRCH otherwise. */
int action_target_check(const ActionTarget *t);
/* Runs one action decision through ops: fills ret (ret->error on failure). */
void actuator_run(const ActuatorOps *ops, void *userdata, const ActionContext *c, const Decision *d,
                  ActionResult *ret);

