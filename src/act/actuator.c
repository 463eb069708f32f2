/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "cgroup-limits.h"
#include "memgov/actuator.h"
#include "memgov/parse-proc.h"
#include "memgov/units.h"
#include "pool.h"
#include "reset.h"
#include "restart.h"
#include "sql-keep.h"
#include "memgov/explain-watch.h"
#include "trim.h"

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
        *ret = (ActionResult) {};
        if (!decision_is_action(d))
                return;
        (void) action_info(d->action); /* a kind outside the registry is a bug, never another action */
        actuator_fn fn = ops->run[d->action] ? ops->run[d->action] : ops->run_any;
        if (!fn) {
                ret->error = -EOPNOTSUPP;
                snprintf(ret->detail, sizeof(ret->detail), "%s is not available", decision_name(d));
                return;
        }
        int r = fn(userdata, c, d, ret);
        if (r < 0 && ret->error == 0)
                ret->error = r;
}

/* ---- real: each actuator in its own file ---- */

/* The kept session first: the explain watch measures on it. */
static usec_t real_idle(void *userdata, const ActionContext *c) {
        usec_t again = sql_keep_idle(userdata, c);
        explain_watch(c);
        return again;
}

const ActuatorOps actuator_ops_real = {
        .name = "real",
        .run = {
                [ACTION_TRIM] = trim_action,
                [ACTION_SET_HIGH] = limits_action,
                [ACTION_SET_MAX] = limits_action,
                [ACTION_RESET] = reset_action,
                [ACTION_RESTART] = restart_action,
                [ACTION_POOL] = pool_action,
                [ACTION_ADMIT] = admit_action,
        },
        .thread_begin = sql_keep_thread_begin,
        .thread_end = sql_keep_thread_end,
        .idle = real_idle,
};

/* ---- fake: record, fail on demand ---- */

static int fake_call(void *u, const ActionContext *c, const Decision *d, ActionResult *ret) {
        FakeActuator *f = u;

        f->calls++;
        f->calls_by_kind[d->action]++;
        f->last[d->action] = *d;
        if ((f->fail_nth && f->calls == f->fail_nth) || (f->fail_mask & (1u << d->action)))
                return action_fail(ret, f->fail_errno ? -abs(f->fail_errno) : -EIO, "fake %s call %u failed",
                                   decision_name(d), f->calls);
        if (d->action == ACTION_TRIM && f->trim_freed > 0) {
                ret->has_freed = true;
                ret->freed = f->trim_freed;
        }
        snprintf(ret->detail, sizeof(ret->detail), "fake %s call %u", decision_name(d), f->calls);
        return 0;
}

const ActuatorOps actuator_ops_fake = {
        .name = "fake",
        .run_any = fake_call,
};

_printf_(4, 0) static int action_failv(ActionResult *ret, int error, bool explained, const char *fmt, va_list ap) {
        assert(ret);
        assert(fmt);
        vsnprintf(ret->detail, sizeof(ret->detail), fmt, ap);
        ret->explained = explained;
        return error;
}

int action_fail(ActionResult *ret, int error, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = action_failv(ret, error, false, fmt, ap);
        va_end(ap);
        return r;
}

int action_not_done(ActionResult *ret, const char *fmt, ...) {
        assert(ret);
        assert(fmt);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ret->detail, sizeof(ret->detail), fmt, ap);
        va_end(ap);
        ret->not_done = true;
        return 0;
}

/* A server that answered nothing to the last statement within sql.query-timeout is not the
 * action's failure: backed off as one (reset.backoff 10m), the emergency reset would not come
 * again in that time; not done, it comes again once its cooldown is over. */
int action_sql_connect_failed(ActionResult *ret, int r, const char *what, const char *why) {
        assert(r < 0);
        if (r == -EBUSY)
                return action_not_done(ret, "%s not carried out: %s", what, why);
        return action_fail(ret, r, "%s: %s", what, why);
}

int action_refuse(ActionResult *ret, int error, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = action_failv(ret, error, true, fmt, ap);
        va_end(ap);
        return r;
}
