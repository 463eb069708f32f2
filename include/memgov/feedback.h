/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/engine.h"

/* The loop every driver of the engine runs (the daemon, replay, the engine tests, the fault
 * sweep): what the actuators reported since the previous sample goes into the next sample, so
 * that a recorded trace holds every input the engine saw; then the engine decides on it. */

/* How one action ended, as its actuator tells it. */
typedef struct ActionResult {
        int error;             /* 0, or a negative errno */
        bool has_freed;        /* it measured what it gave back */
        uint64_t freed;
        uint64_t value;        /* a limit: the value read back after the write; pool: the size after */
        uint64_t value_before; /* pool: the size found before */
        uint64_t baseline;     /* pool: the size the server was configured with (0: not known) */
        usec_t held;           /* trim by ptrace: how long a thread of the server was stopped */
        char detail[512];      /* what was done (or would have been), for the log and status */
        bool explained;        /* on failure, detail says why in full: no errno text after it */
        bool not_done;         /* with no error: nothing was carried out, through no fault of its own */
        bool found_nothing;    /* with an error: it found nothing to act on (a reset: no session at its
                                * threshold), and so changed nothing */
        bool found_fewer;      /* with no error: it acted on all it found, fewer than it was allowed
                                * (a reset: every session at its threshold, fewer than its max) */
} ActionResult;

/* What the next sample tells the engine about the actions finished since the previous one. */
typedef struct ActionFeedback {
        unsigned failed;   /* bits 1 << ActionKind */
        unsigned reported; /* bits 1 << ActionKind: freed[] holds what it measured */
        unsigned not_done; /* bits 1 << ActionKind: not carried out (ActionResult.not_done) */
        unsigned found_nothing; /* bits 1 << ActionKind: failed finding nothing (ActionResult.found_nothing) */
        unsigned found_fewer;   /* bits 1 << ActionKind: done on fewer than allowed (ActionResult.found_fewer) */
        uint64_t freed[_ACTION_KIND_MAX];
        unsigned based; /* bits 1 << ActionKind: baseline[] holds what it worked from */
        uint64_t baseline[_ACTION_KIND_MAX];
} ActionFeedback;

/* An action decision finished with this result. */
void action_feedback_add(ActionFeedback *f, const Decision *d, const ActionResult *r);
/* An action that will not finish in time or could not be started: it failed. */
void action_feedback_fail(ActionFeedback *f, ActionKind a);
/* Moves the feedback into s (added to what s already holds: a recorded trace's own), with the
 * actions still being carried out (bits 1 << ActionKind), and clears it. */
void action_feedback_apply(ActionFeedback *f, Sample *s, unsigned pending);

/* One tick: the feedback into s, then the engine's step on it, at the sample's own time. */
void engine_tick(Engine *e, ActionFeedback *f, const Policy *p, Sample *s, unsigned pending, EngineOutput *out);
