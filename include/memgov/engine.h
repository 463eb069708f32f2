/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/policy.h"
#include "memgov/rung-admit.h"
#include "memgov/rung-pool.h"
#include "memgov/rung-reset.h"
#include "memgov/rung-restart.h"
#include "memgov/rung-throttle.h"
#include "memgov/rung-trim.h"
#include "memgov/sample.h"
#include "memgov/trend.h"

/* The decision engine: a pure function of (policy, state, sample, now). It reads no clock,
 * does no I/O and keeps no globals; the daemon, dry-run, replay and the tests all drive it the
 * same way, so what replay shows is what the daemon would do. */

typedef enum DecisionKind {
        DECISION_LEVEL,  /* the ladder moved */
        DECISION_ACTION, /* something for an actuator to do: Decision.action says what (the registry, action.h) */
        DECISION_EFFECT, /* the measured effect of an earlier action */
        DECISION_HOLD,   /* a step is due but held back (guard rail, backoff, missing signal) */
        DECISION_EVENT,  /* something observed: an OOM kill, a server restart, a foreign write */
        _DECISION_KIND_MAX,
} DecisionKind;

/* Room for the longest reason with its context: an emergency reset in a storm, again on growth,
 * the pool filling in its context, 535 bytes (the longest of 62 benchmark traces replayed; cut
 * mid-word at 384, then at 512). */
#define DECISION_REASON_MAX 768

/* Why a decision was taken, for programs and tests; Decision.reason says it for people. */
typedef enum DecisionCode {
        CODE_NONE,
        /* DECISION_HOLD */
        HOLD_NO_BUDGET,
        HOLD_NO_WS,
        HOLD_THROTTLE_NO_CGROUP,
        HOLD_THROTTLE_NO_PSI,
        HOLD_THROTTLE_READONLY,
        HOLD_MAX_PER_DAY,
        HOLD_MIN_UPTIME,
        HOLD_WINDOW,
        HOLD_NO_WALL,
        HOLD_STARTING, /* the server is still starting: the ladder waits until it accepts clients */
        HOLD_MAX_WRITE, /* the restart waits for a write of memory.max under way, to raise it from there */
        HOLD_ADMIT_NOT_STORM, /* the connections rose, but the growth came while their count stood still */
        /* DECISION_LEVEL */
        LEVEL_UP_AT,          /* at or above the rung's at */
        LEVEL_UP_ETA,         /* the ETA under the rung's eta */
        LEVEL_UP_NOT_HELPING, /* the rung below is not helping and the working set still rises */
        LEVEL_DOWN_CALM,      /* the rung is no longer called for */
        LEVEL_DOWN_RETRY,     /* back to a rung whose backoff is over */
        /* DECISION_EFFECT */
        EFFECT_FREED,
        EFFECT_TOO_LITTLE, /* under min-gain: backoff */
        EFFECT_FAILED,
        EFFECT_FAILED_GONE, /* failed against a server process that is gone: no backoff */
        EFFECT_FAILED_CARRY, /* the lowering carried to a new server process failed: tried again at once */
        EFFECT_DONE_GONE,    /* done against a server process that is gone: not measured for the new one */
        EFFECT_NOT_DONE,     /* not carried out, through no fault of its own: not judged, no backoff */
        /* DECISION_EVENT */
        EVENT_OOM_KILL,
        EVENT_RESTART_DONE,
        EVENT_RESTART_FOREIGN, /* the server restarted, not by memgov */
        EVENT_HIGH_ADOPTED,    /* memory.high set by someone else */
        EVENT_RESTART_TIMEOUT, /* no new server process within stop-timeout */
        EVENT_RESTART_ASSUMED, /* dry run: taken as done */
        EVENT_SERVER_READY,    /* the server accepts clients after its startup: the trend starts over */
        /* DECISION_ACTION */
        ACTION_EMERGENCY_RESET, /* the reset rung in an emergency: again after reset.cooldown, past the backoff */
        _DECISION_CODE_MAX,
} DecisionCode;

typedef struct Decision {
        DecisionKind kind;
        Level level;       /* the level once this decision is taken */
        Level from;        /* DECISION_LEVEL: the level left */
        ActionKind action; /* DECISION_ACTION: what to do; DECISION_EFFECT / DECISION_HOLD: the action concerned */
        DecisionCode code; /* holds, levels, effects, events: why */
        uint64_t value;    /* a limit's action: the new value; EFFECT: bytes freed */
        uint64_t old_value;
        bool emergency;
        bool oom_kill; /* DECISION_EVENT: the kernel OOM killer fired in the cgroup */
        uint64_t working_set, budget; /* when it was decided (SIZE_UNKNOWN when not known) */

        /* The action's own parameters, each declared by its rung (include/memgov/rung-*.h). */
        union {
                TrimParams trim;
                ResetParams reset;
                RestartParams restart;
                PoolParams pool;
                AdmitParams admit;
        };

        char reason[DECISION_REASON_MAX];
} Decision;

static inline bool decision_is_action(const Decision *d) {
        return d->kind == DECISION_ACTION;
}

/* Decisions by class, for counts and names: each kind, and each action a class of its own, in
 * the order level, the actions (registry order), effect, hold, event. */
#define _DECISION_CLASS_MAX (_DECISION_KIND_MAX - 1 + _ACTION_KIND_MAX)
unsigned decision_class(const Decision *d);
/* The class of a kind other than DECISION_ACTION. */
static inline unsigned decision_kind_class(DecisionKind k) {
        return k < DECISION_ACTION ? (unsigned) k : (unsigned) k - 1 + _ACTION_KIND_MAX;
}
/* "level", "trim", "memory.high", ..., "effect", "hold", "event". */
const char *decision_class_to_string(unsigned c);
const char *decision_name(const Decision *d);

#define ENGINE_MAX_DECISIONS 8

/* What one tick saw and decided. */
typedef struct EngineOutput {
        usec_t now;
        usec_t wall; /* 0 when the sample had no wall clock */
        int32_t utc_offset;
        uint64_t ws;     /* SIZE_UNKNOWN when the sample had none */
        uint64_t budget; /* SIZE_UNKNOWN when it could not be resolved */
        uint32_t ws_bp;  /* working set as a share of the budget */
        bool trend_valid;
        double slope; /* bytes per second */
        usec_t eta;   /* to the budget; USEC_INFINITY = not rising */
        Level level;
        usec_t next_sample; /* how long the caller should wait before the next sample */
        Decision decisions[ENGINE_MAX_DECISIONS];
        unsigned n_decisions;
} EngineOutput;

typedef struct EngineOptions {
        /* Dry-run and replay: assume every action took place as decided, since the samples will
         * not show it (memory.high is never re-read as someone else's change, a restart is taken
         * as done after settle). */
        bool simulate;
        /* Nothing was carried out (a dry run, a replay of a trace whose recorder did not act):
         * what the working set did after an action is no measurement of it, and its effect line
         * says so. */
        bool effects_assumed;
        /* The kernel keeps memory.high and memory.max in pages: planned values are rounded down
         * to this, so that reading them back matches. 0 = 4096. */
        uint64_t page_size;
} EngineOptions;

typedef struct ActionState {
        usec_t last;          /* when it was last decided, 0 = never */
        usec_t backoff_until; /* it did not help or failed: not again before this */
        bool spent;           /* it did not help or failed, and the backoff is running */
        bool failed;          /* spent by a failure (not by too little gain) */
        bool pending;         /* effect not measured yet */
        uint64_t ws_before;
        double slope_before;
        int64_t last_gain;
        bool gain_measured;   /* last_gain is the actuator's measurement of the last one decided */
        unsigned count;
} ActionState;

/* The engine's state: opaque (src/core/engine-internal.h). */
typedef struct Engine Engine;

/* A new engine for policy p, or -ENOMEM. */
int engine_new(const Policy *p, const EngineOptions *opts, Engine **ret);
Engine *engine_free(Engine *e);
/* A reloaded policy: the state is kept; the trend restarts only if its shape changed. */
void engine_set_policy(Engine *e, const Policy *old, const Policy *p);
/* When memgov stops (or a reload starts a dry run): the writes that put memory.high, memory.max
 * and max_connections back as memgov found them (or as someone else set them since), their
 * reasons starting with WHY. Returns how many of max it filled. */
unsigned engine_leave(const Engine *e, const char *why, Decision *ret, unsigned max);
/* Room for all of engine_leave's decisions: at most one of each action. */
#define ENGINE_LEAVE_MAX _ACTION_KIND_MAX
/* A reload starts or ends a dry run. */
/* A dry run begins or ends (its effects are assumed from then on, or measured). */
void engine_set_simulate(Engine *e, bool simulate);
/* Whether the samples from now on show the effects of the actions (see EngineOptions). */
void engine_set_effects_assumed(Engine *e, bool assumed);
void engine_step(Engine *e, const Policy *p, const Sample *s, usec_t now, EngineOutput *out);

/* The earliest time (on engine_step's clock) the engine's own pacing of this kind allows it again:
 * its cooldown after the last one, the backoff after a failure or a gain too small, and for
 * memory.high the cooldown since memory.high last changed (by memgov or adopted). 0 = now. The
 * level, the settle time after any action and the restart guard rails come on top. */
usec_t engine_action_ready_at(const Engine *e, const Policy *p, ActionKind a);

/* Restarts remembered across governor restarts: clock values as engine_step records them. */
void engine_restore_restarts(Engine *e, const usec_t *clock, unsigned n);
/* The restarts remembered (at most RESTART_HISTORY), oldest first: how many, and their clock. */
unsigned engine_restarts(const Engine *e, const usec_t **ret_clock);

/* What the daemon and its status show of the engine. */
Level engine_level(const Engine *e);
const ActionState *engine_action(const Engine *e, ActionKind a);
bool engine_restart_pending(const Engine *e);
/* memory.high as memgov last set or adopted it: false when not known. */
bool engine_memory_high(const Engine *e, uint64_t *ret);
