/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "memgov/feedback.h"

void action_feedback_add(ActionFeedback *f, const Decision *d, const ActionResult *r) {
        if (!decision_is_action(d))
                return;
        if (r->error < 0) {
                action_feedback_fail(f, d->action);
                if (r->found_nothing)
                        f->found_nothing |= 1u << d->action;
                return;
        }
        if (r->not_done) {
                f->not_done |= 1u << d->action;
                return;
        }
        if (r->found_fewer)
                f->found_fewer |= 1u << d->action;
        /* Only what a trace can hold (its "<name>_freed" and baseline columns): replay must see what
         * the daemon saw. */
        if (r->baseline > 0 && action_info(d->action)->baseline_column) {
                f->based |= 1u << d->action;
                f->baseline[d->action] = r->baseline;
        }
        if (!r->has_freed || !action_info(d->action)->freed_column)
                return;
        f->reported |= 1u << d->action;
        f->freed[d->action] += r->freed;
}

void action_feedback_fail(ActionFeedback *f, ActionKind a) {
        (void) action_info(a); /* a kind outside the registry is a bug */
        f->failed |= 1u << a;
}

void action_feedback_apply(ActionFeedback *f, Sample *s, unsigned pending) {
        s->failed |= f->failed;
        s->pending |= pending;
        s->reported |= f->reported;
        s->not_done |= f->not_done;
        s->found_nothing |= f->found_nothing;
        s->found_fewer |= f->found_fewer;
        s->based |= f->based;
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                s->freed[a] += f->freed[a];
                if (f->based & (1u << a))
                        s->baseline[a] = f->baseline[a];
        }
        *f = (ActionFeedback) {};
}

void engine_tick(Engine *e, ActionFeedback *f, const Policy *p, Sample *s, unsigned pending, EngineOutput *out) {
        action_feedback_apply(f, s, pending);
        engine_step(e, p, s, s->mono, out);
}
