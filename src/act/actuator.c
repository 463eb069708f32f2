/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "memgov/actuator.h"
#include "memgov/units.h"

static ActionKind action_of(DecisionKind k) {
        switch (k) {
        case DECISION_TRIM:
                return ACTION_TRIM;
        case DECISION_SET_HIGH:
                return ACTION_SET_HIGH;
        case DECISION_SET_MAX:
                return ACTION_SET_MAX;
        case DECISION_RESET:
                return ACTION_RESET;
        default:
                return ACTION_RESTART;
        }
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
                snprintf(ret->detail, sizeof(ret->detail), "%s: not available with the %s actuators",
                         decision_kind_to_string(d->kind), ops->name);
                return;
        }
        int r = fn(userdata, c, d, ret);
        if (r < 0 && ret->error == 0)
                ret->error = r;
}

void action_feedback_add(ActionFeedback *f, const Decision *d, const ActionResult *r) {
        ActionKind a = action_of(d->kind);
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

/* ---- dry run: say exactly what would be done, do nothing ---- */

static int dry_trim(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        snprintf(ret->detail, sizeof(ret->detail), "would trim the allocator of %s (method %s)",
                 c->target->description, trim_method_to_string(d->trim_method));
        return 0;
}

static int dry_limit(const char *file, const ActionContext *c, const Decision *d, ActionResult *ret) {
        char v[FORMAT_BYTES_MAX];
        if (c->target->spec.kind == TARGET_UNIT)
                snprintf(ret->detail, sizeof(ret->detail), "would set %s=%s on %s (runtime, through systemd)",
                         streq(file, "memory.high") ? "MemoryHigh" : "MemoryMax", format_bytes(v, d->value),
                         c->target->spec.value);
        else
                snprintf(ret->detail, sizeof(ret->detail), "would write %s to %s of cgroup %s", format_bytes(v, d->value),
                         file, c->target->cgroup);
        return 0;
}

static int dry_high(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        return dry_limit("memory.high", c, d, ret);
}

static int dry_max(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        return dry_limit("memory.max", c, d, ret);
}

static int dry_reset(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        char m[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];
        snprintf(ret->detail, sizeof(ret->detail),
                 "would reset up to %u session(s) of %s holding at least %s, idle at least %s first%s",
                 d->reset_max, c->target->description, format_bytes(m, d->reset_min_memory),
                 format_timespan(t, d->reset_min_idle), d->reset_in_trx ? ", sessions in transactions included" : "");
        return 0;
}

static int dry_restart(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        if (c->target->spec.kind == TARGET_UNIT)
                snprintf(ret->detail, sizeof(ret->detail), "would restart %s through systemd (RestartUnit)%s",
                         c->target->spec.value, d->preflush ? ", flushing dirty pages first" : "");
        else
                snprintf(ret->detail, sizeof(ret->detail), "would send SIGTERM to %s through a pidfd%s",
                         c->target->description, d->preflush ? ", flushing dirty pages first" : "");
        return 0;
}

const ActuatorOps actuator_ops_dry_run = {
        .name = "dry-run",
        .trim = dry_trim,
        .set_high = dry_high,
        .set_max = dry_max,
        .reset = dry_reset,
        .restart = dry_restart,
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
