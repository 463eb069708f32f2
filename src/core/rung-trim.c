/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The trim rung: give the allocator's free memory back to the kernel, inside the running server
 * (src/act/trim.c carries it out). The cheapest rung: it stops nothing and ends nothing. */
#include "engine-internal.h"

static bool trim_exhausted(const Tick *k) {
        return k->e->act[ACTION_TRIM].spent;
}

static bool trim_plan(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;

        if (e->level >= LEVEL_TRIM && !k->wait_for_reset && step_available(k, LEVEL_TRIM) && !e->act[ACTION_TRIM].spent &&
            cooldown_over(k, ACTION_TRIM, LEVEL_TRIM)) {
                Decision *d = emit_action(k, ACTION_TRIM, "%s: trim (method %s)", ctx(k),
                                   trim_method_to_string(p->trim_method));
                if (d)
                        d->trim.method = p->trim_method;
                note_action(k, ACTION_TRIM, true);
                return true;
        }
        return false;
}

const Rung rung_trim = {
        .level = LEVEL_TRIM,
        .exhausted = trim_exhausted,
        .plan = trim_plan,
};
