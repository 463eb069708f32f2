/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "memgov/engine.h"
#include "memgov/target.h"

/* Actuators carry out what the engine decided. Each family is an ops table with three
 * implementations: real, dry-run (every step up to the side effect runs; the side effect is a
 * log line) and fake (records calls and can fail the Nth one, for fault-injection tests). */

typedef struct ActionContext {
        const Target *target;
        const Policy *policy;
        sd_bus *bus;
        bool dry_run;
} ActionContext;

typedef struct ActionResult {
        int error;        /* 0, or a negative errno */
        bool has_freed;   /* trim, reset: what it measured it freed */
        uint64_t freed;
        char detail[512]; /* what was done (or would have been), for the log and status */
} ActionResult;

typedef struct ActuatorOps {
        const char *name;
        int (*trim)(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
        int (*set_high)(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
        int (*set_max)(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
        int (*reset)(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
        int (*restart)(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
} ActuatorOps;

extern const ActuatorOps actuator_ops_dry_run;
extern const ActuatorOps actuator_ops_fake;

/* The fake: every call is recorded; call number fail_nth (1-based, 0 = never) of any kind fails
 * with fail_errno, or every call of the kinds in fail_mask does. */
typedef struct FakeActuator {
        unsigned calls;
        unsigned calls_by_kind[_DECISION_KIND_MAX];
        unsigned fail_nth;
        unsigned fail_mask; /* bits 1 << DecisionKind */
        int fail_errno;
        uint64_t trim_freed; /* what a successful fake trim reports */
        Decision last[_DECISION_KIND_MAX];
} FakeActuator;

/* Runs one action decision through ops: fills ret (ret->error on failure). */
void actuator_run(const ActuatorOps *ops, void *userdata, const ActionContext *c, const Decision *d,
                  ActionResult *ret);

/* What the next sample tells the engine about the actions run since the previous one. */
typedef struct ActionFeedback {
        unsigned failed;
        unsigned reported;
        uint64_t trim_freed, reset_freed;
} ActionFeedback;

void action_feedback_add(ActionFeedback *f, const Decision *d, const ActionResult *r);
void action_feedback_apply(ActionFeedback *f, Sample *s);
