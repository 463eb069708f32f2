/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/policy.h"
#include "memgov/rung-admit.h"
#include "memgov/rung-pool.h"
#include "memgov/rung-reset.h"
#include "memgov/rung-restart.h"
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

#define DECISION_REASON_MAX 384

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

#define ENGINE_RESTART_HISTORY 128
#define ENGINE_CONN_BUCKETS 16

typedef struct Engine {
        EngineOptions opts;

        Level level;
        usec_t level_since;
        usec_t last_action; /* any ladder action, for settle */

        ActionState act[_ACTION_KIND_MAX];
        uint32_t hold_shown[_ACTION_KIND_MAX]; /* last hold reason code shown, not to repeat it */
        uint32_t notice_shown;

        /* memory.high ("max" is SIZE_UNLIMITED, a value like any other here) */
        bool high_known, initial_known, ceiling_known;
        uint64_t high_set;     /* last value decided or adopted */
        uint64_t high_before;  /* the value memgov's last write replaced: what a read before it landed shows */
        uint64_t high_initial; /* value found before the first write, restored when calm is off */
        uint64_t high_ceiling; /* set by someone else and adopted as the calm value */
        usec_t high_changed;
        unsigned high_mismatch;
        bool high_at_floor;
        bool psi_guard;
        bool high_yields; /* memory.high makes way in this emergency (see plan_high) */
        bool high_gone;   /* memory.high is out of the way (max) for this emergency (see plan_high) */
        /* PSI full over the last second or more, from the cumulative stall time: avg10 trails a
         * stall that has just begun by many seconds. */
        bool full_ref_known;
        usec_t full_ref_mono;
        uint64_t full_ref_total;
        uint32_t full_recent; /* basis points, over full_recent_span up to the last update */
        usec_t full_recent_span;

        /* memory.max */
        bool max_raised;
        bool max_restoring; /* the last memory.max decided is the restore (a failure leaves it raised) */
        uint64_t max_original;
        uint64_t max_raised_to;   /* the value of memgov's last raise */
        uint64_t max_raised_prev; /* the raise before it, when the last is a raise again in a stop */

        /* the buffer pool: steps taken down and not grown back yet */
        unsigned pool_steps;
        bool pool_growing; /* the last pool decision was a step back up */
        usec_t calm_since; /* when the ladder last came down below throttle */

        /* admission: max_connections lowered by memgov and not put back yet */
        bool admit_lowered;
        bool reset_emergency_done; /* this emergency had its reset (cleared when it is over) */
        bool reset_emergency_any;    /* an emergency reset was ever decided... */
        usec_t reset_emergency_last; /* ...last at this time (none again within reset.cooldown) */
        usec_t reset_emergency_backoff_until; /* the last emergency reset failed: none before this */
        bool reset_last_emergency;  /* the last reset decided is an emergency reset */
        bool admit_restoring; /* the last admission decision puts max_connections back */
        bool max_by_admit;    /* memory.max is raised for admission (put back after admit.raise-for) */
        unsigned admit_before; /* the connections the last lowering saw before the storm (the fewest) */
        bool admit_carry;      /* admission was in place when the server process went: lower the new one's */
        bool admit_tried;      /* a lowering was decided on this process, through or not, and no calm since */
        bool admit_carried;    /* the last admission decided is that lowering... */
        unsigned admit_carry_failed; /* ...which failed this many times on this process */
        usec_t max_raised_at;
        usec_t process_since; /* when the server process now governed was first seen; 0: the first */
        /* The server's connection count, the fewest in each of the buckets of admit.rise-window
         * (a ring, oldest first from conn_head): what a storm rose from. */
        unsigned conn_min[ENGINE_CONN_BUCKETS + 1];
        uint64_t conn_ws[ENGINE_CONN_BUCKETS + 1]; /* the working set when that fewest was first seen */
        usec_t conn_t[ENGINE_CONN_BUCKETS + 1];
        unsigned conn_n, conn_head;

        /* restart */
        bool restart_pending;
        usec_t restart_at;     /* monotonic */
        usec_t restart_clock[ENGINE_RESTART_HISTORY]; /* wall clock when known, else monotonic */
        unsigned n_restarts;

        /* the previous sample's facts */
        bool have_prev;
        usec_t prev_mono;
        pid_t prev_pid;
        usec_t prev_uptime;
        unsigned prev_has;
        MemoryEvents prev_events;

        /* the last few working-set figures, for effects measured on medians rather than on one
         * sample that may be a spike */
        uint64_t recent_ws[8];
        usec_t recent_t[8];
        unsigned recent_n, recent_head;

        /* The working set's trend over trend.window, and over the last of its points (window /
         * points, at a resolution as much finer): the second stands in until the first is known
         * (the first minutes of a run), so that a fast event has an ETA too. */
        Trend trend, trend_short;
        uint64_t last_budget;

        /* The server was seen starting (listening on nothing yet, SAMPLE_HAS_ACCEPTING), at this
         * working set; whether the hold was said for this startup. A new server process, where
         * the signal exists (accepting_known), is taken as starting from its first sample on,
         * before the signal has caught up with it (starting_assumed, since starting_since). */
        bool starting;
        uint64_t starting_ws;
        bool starting_said;
        bool accepting_known;
        bool starting_assumed;
        usec_t starting_since;
        usec_t ready_at; /* when the server last began to accept clients (EVENT_SERVER_READY) */
} Engine;

void engine_init(Engine *e, const Policy *p, const EngineOptions *opts);
/* A reloaded policy: the state is kept; the trend restarts only if its shape changed. */
void engine_set_policy(Engine *e, const Policy *old, const Policy *p);
/* When memgov stops (or a reload starts a dry run): the writes that put memory.high, memory.max
 * and max_connections back as memgov found them (or as someone else set them since), their
 * reasons starting with WHY. Returns how many of max it filled. */
unsigned engine_leave(const Engine *e, const char *why, Decision *ret, unsigned max);
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
