/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "../act/trim.h"
#include "memgov/actuator.h"
#include "memgov/parse-proc.h"
#include "memgov/units.h"

int action_target_check(const ActionTarget *t) {
        return proc_check_starttime(AT_FDCWD, t->pid, t->starttime) < 0 ? -ESRCH : 0;
}

void action_target_from(ActionTarget *ret, const Target *t) {
        *ret = (ActionTarget) {
                .kind = t->spec.kind,
                .cgroup_fd = -1,
                .pid = t->pid,
                .starttime = t->starttime,
        };
        if (t->spec.kind == TARGET_UNIT)
                snprintf(ret->unit, sizeof(ret->unit), "%s", t->spec.value);
        if (t->has_cgroup)
                snprintf(ret->cgroup, sizeof(ret->cgroup), "%s", t->cgroup);
        snprintf(ret->description, sizeof(ret->description), "%s", t->description);
}

void actuator_run(const ActuatorOps *ops, void *userdata, const ActionContext *c, const Decision *d,
                  ActionResult *ret) {
        int (*fn)(void *, const ActionContext *, const Decision *, ActionResult *) = NULL;

        *ret = (ActionResult) {};
        switch (d->kind) {
        case DECISION_TRIM:
                fn = ops->trim;
                break;
        case DECISION_SET_HIGH:
                fn = ops->set_high;
                break;
        case DECISION_SET_MAX:
                fn = ops->set_max;
                break;
        case DECISION_RESET:
                fn = ops->reset;
                break;
        case DECISION_RESTART:
                fn = ops->restart;
                break;
        default:
                return; /* not an action */
        }
        if (!fn) {
                ret->error = -EOPNOTSUPP;
                snprintf(ret->detail, sizeof(ret->detail), "%s is not available", decision_kind_to_string(d->kind));
                return;
        }
        int r = fn(userdata, c, d, ret);
        if (r < 0 && ret->error == 0)
                ret->error = r;
}

void action_feedback_add(ActionFeedback *f, const Decision *d, const ActionResult *r) {
        ActionKind a = decision_action_kind(d->kind);
        if (!decision_is_action(d->kind))
                return;
        if (r->error < 0) {
                f->failed |= 1u << a;
                return;
        }
        if (!r->has_freed)
                return;
        f->reported |= 1u << a;
        if (a == ACTION_TRIM)
                f->trim_freed += r->freed;
        else if (a == ACTION_RESET)
                f->reset_freed += r->freed;
}

void action_feedback_apply(ActionFeedback *f, Sample *s) {
        s->failed = f->failed;
        s->reported = f->reported;
        s->trim_freed = f->trim_freed;
        s->reset_freed = f->reset_freed;
        *f = (ActionFeedback) {};
}

/* ---- real ---- */

static int real_trim(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        const ActionTarget *t = c->target;
        char why[512];
        TrimReport rep;

        if (t->pid <= 0) {
                snprintf(ret->detail, sizeof(ret->detail), "trim: no server process in %s", t->description);
                return -ESRCH;
        }
        if (action_target_check(t) < 0) {
                snprintf(ret->detail, sizeof(ret->detail), "trim: process %d is not the server any more", (int) t->pid);
                return -ESRCH;
        }
        int r = trim_run(c->policy, t->pid, t->starttime, 0, d->trim_method, c->dry_run, -1, &rep, why, sizeof(why));
        trim_report_text(t->pid, &rep, r, why, c->dry_run, ret->detail, sizeof(ret->detail));
        if (r < 0)
                return r;
        if (rep.has_freed && !c->dry_run) {
                ret->has_freed = true;
                ret->freed = rep.freed;
        }
        if (!c->dry_run && rep.method == TRIM_PTRACE)
                ret->held = rep.inject.held;
        return 0;
}

static int real_high(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        return limits_set(c, "memory.high", d->value, ret);
}

static int real_max(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        return limits_set(c, "memory.max", d->value, ret);
}

static int real_reset(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        return reset_run(c, d, ret);
}

static int real_restart(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        return restart_run(c, d, ret);
}

const ActuatorOps actuator_ops_real = {
        .name = "real",
        .trim = real_trim,
        .reset = real_reset,
        .restart = real_restart,
        .set_high = real_high,
        .set_max = real_max,
};

/* ---- fake: record, fail on demand ---- */

static int fake_call(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        FakeActuator *f = u;

        f->calls++;
        f->calls_by_kind[d->kind]++;
        f->last[d->kind] = *d;
        if ((f->fail_nth && f->calls == f->fail_nth) || (f->fail_mask & (1u << d->kind))) {
                snprintf(ret->detail, sizeof(ret->detail), "fake %s call %u failed", decision_kind_to_string(d->kind),
                         f->calls);
                return f->fail_errno ? -abs(f->fail_errno) : -EIO;
        }
        if (d->kind == DECISION_TRIM && f->trim_freed > 0) {
                ret->has_freed = true;
                ret->freed = f->trim_freed;
        }
        snprintf(ret->detail, sizeof(ret->detail), "fake %s call %u", decision_kind_to_string(d->kind), f->calls);
        return 0;
}

const ActuatorOps actuator_ops_fake = {
        .name = "fake",
        .trim = fake_call,
        .set_high = fake_call,
        .set_max = fake_call,
        .reset = fake_call,
        .restart = fake_call,
};
