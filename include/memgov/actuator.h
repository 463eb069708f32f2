/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>
#include <sys/types.h>

#include "memgov/engine.h"
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
} ActionContext;

typedef struct ActionResult {
        int error;        /* 0, or a negative errno */
        bool has_freed;   /* trim, reset: what it measured it freed */
        uint64_t freed;
        uint64_t value;   /* limits: the value read back after the write; pool: the size after */
        uint64_t value_before; /* pool: the size found before */
        uint64_t baseline;     /* pool: the size the server was configured with */
        usec_t held;      /* trim by ptrace: how long a thread of the server was stopped */
        char detail[512]; /* what was done (or would have been), for the log and status */
        bool explained;   /* on failure, detail says why in full: no errno text after it */
} ActionResult;

typedef int (*actuator_fn)(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);

typedef struct ActuatorOps {
        const char *name;
        actuator_fn trim, set_high, set_max, reset, restart;
} ActuatorOps;

extern const ActuatorOps actuator_ops_real;
extern const ActuatorOps actuator_ops_fake;

/* The fake: every call is recorded; call number fail_nth (1-based, 0 = never) of any kind fails
 * with fail_errno, and so does every call of the kinds in fail_mask. */
typedef struct FakeActuator {
        unsigned calls;
        unsigned calls_by_kind[_DECISION_KIND_MAX];
        unsigned fail_nth;
        unsigned fail_mask; /* bits 1 << DecisionKind */
        int fail_errno;
        uint64_t trim_freed; /* what a successful fake trim reports */
        Decision last[_DECISION_KIND_MAX];
} FakeActuator;

void action_target_from(ActionTarget *ret, const Target *t);
/* 0 when t's pid is still the server process it was (the same start time, not a reused
 * number), -ESRCH otherwise. */
int action_target_check(const ActionTarget *t);
/* Runs one action decision through ops: fills ret (ret->error on failure). */
void actuator_run(const ActuatorOps *ops, void *userdata, const ActionContext *c, const Decision *d,
                  ActionResult *ret);

/* What the next sample tells the engine about the actions finished since the previous one. */
typedef struct ActionFeedback {
        unsigned failed;
        unsigned reported;
        uint64_t trim_freed, reset_freed;
} ActionFeedback;

void action_feedback_add(ActionFeedback *f, const Decision *d, const ActionResult *r);
void action_feedback_apply(ActionFeedback *f, Sample *s);

/* ---- the families of the real table ---- */

/* memory.high / memory.max: SetUnitProperties(runtime) for a unit, a cgroupfs write otherwise;
 * read back and verified. */
int limits_set(const ActionContext *c, const char *file, uint64_t value, ActionResult *ret);

/* Connection reset: KILL CONNECTION the chosen sessions then trim (sql), a command (exec) or a
 * signal to a pooler (signal), as the policy says. */
int reset_run(const ActionContext *c, const Decision *d, ActionResult *ret);

/* Graceful restart: optional pre-flush and hooks; RestartUnit through systemd, followed to its
 * end, or SIGTERM through a pidfd. Never SIGKILL. */
int restart_run(const ActionContext *c, const Decision *d, ActionResult *ret);
