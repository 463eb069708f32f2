/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The engine from the inside: the ladder (engine.c) over a table of rungs (rungs.c), each rung one
 * file (rung-*.c) behind the interface below; what they share is here: the tick's situation
 * (situation.c), the decisions and holds they emit (decisions.c), the bookkeeping of the actions'
 * results (effects.c), and memory.high and memory.max, which only limits.c moves. Private to
 * src/core and to the tests of the rungs. */

#include <stdarg.h>

#include "memgov/engine.h"
#include "memgov/pool-fill.h"
#include "memgov/trend.h"
#include "memgov/units.h"

/* The engine's state: the ladder's, the situation's and the actions' bookkeeping; the limits'
 * (limits.c alone writes it); and each rung's own, allocated from the table (Rung.state_size). */
typedef struct Limits {
        /* memory.high ("max" is SIZE_UNLIMITED, a value like any other here) */
        bool high_known, initial_known, ceiling_known;
        uint64_t high_set;     /* last value decided or adopted */
        uint64_t high_before;  /* the value memgov's last write replaced: what a read before it landed shows */
        uint64_t high_initial; /* value found before the first write, restored when calm is off */
        uint64_t high_ceiling; /* set by someone else and adopted as the calm value */
        usec_t high_changed;
        unsigned high_mismatch;

        /* memory.max */
        bool max_raised;
        bool max_restoring; /* the last memory.max decided is the restore (a failure leaves it raised) */
        uint64_t max_original;
        uint64_t max_raised_to;   /* the value of memgov's last raise */
        uint64_t max_raised_prev; /* the raise before it, when the last is a raise again in a stop */
        bool max_by_admit;        /* raised for admission (put back after admit.raise-for) */
        usec_t max_raised_at;
} Limits;

/* A PSI line's share over the last second or more, from its cumulative stall time: avg10
 * trails a stall that has just begun by many seconds. */
typedef struct PsiRecent {
        bool ref_known;
        usec_t ref_mono;
        uint64_t ref_total;
        uint32_t share; /* basis points, over span up to the last update */
        usec_t span;
} PsiRecent;

struct Engine {
        EngineOptions opts;

        Level level;
        usec_t level_since;
        usec_t last_action; /* any ladder action, for settle */
        usec_t calm_since;  /* when the ladder last came down below throttle */
        uint64_t climb_peak; /* the highest working set since the ladder last moved up */

        ActionState act[_ACTION_KIND_MAX];
        uint32_t hold_shown[_ACTION_KIND_MAX]; /* last hold reason code shown, not to repeat it */
        uint32_t notice_shown;

        Limits limits;

        /* PSI full and some over the last second or more (see PsiRecent). */
        PsiRecent full_recent, some_recent;

        usec_t process_since; /* when the server process now governed was first seen; 0: the first */

        /* the previous sample's facts */
        bool have_prev;
        usec_t prev_mono;
        pid_t prev_pid;
        usec_t prev_uptime;
        usec_t prev_uptime_mono; /* the sample prev_uptime came with */
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
        /* The buffer pool's readings: its filling is taken out of the ETA (pool-fill.h). */
        PoolFill pool_fill;

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

        void *rung_state[_LEVEL_MAX]; /* each rung's, Rung.state_size bytes (NULL: none) */
};

/* The situation of one tick, computed once (engine_step), and what the rungs tell one another
 * within it. */
typedef struct Tick {
        Engine *e;
        const Policy *p;
        const Sample *s;
        usec_t now;
        EngineOutput *out;
        uint64_t ws, budget;
        uint32_t ws_bp;
        usec_t eta;
        usec_t eta_too_far; /* the short trend's ETA, not believed (see short_trend_eta()); 0: none */
        double pool_rate;   /* of the trend's slope, the buffer pool filling (bytes per second); 0: none */
        uint64_t pool_room; /* ... and what it has left to fill */
        bool rising;
        bool emergency;
        bool stalled; /* the emergency is a stall at restart.at (see engine_step), not an ETA */
        /* PSI full and some, basis points: the higher of avg10 and the last second's */
        uint32_t full_now, some_now;
        bool starting; /* the server does not accept clients yet (SAMPLE_HAS_ACCEPTING) */
        bool described;
        char ctx[192]; /* "working set 51.2G = 85% of 60G budget, rising 0.9G/h, OOM in 9h40m" */

        /* Told by the restart rung's prepare: the ladder calls for the restart (whether or not
         * its guard rails allow it now), it may go ahead now, it is called for and does not come. */
        bool restart_wanted, restart_due, restart_held;
        /* Told by the reset rung's prepare: an emergency reset is ready, a reset's result is not
         * in yet, and so the emergency reset waits for it (the rungs that would queue ahead of
         * it wait too). */
        bool emergency_reset, reset_outstanding, wait_for_reset;
} Tick;

/* A rung of the ladder: its level, and what it does at each point of a tick. Every hook may be
 * NULL (it has nothing to do there). The engine calls them in the ladder's order (trim up to
 * restart) unless said otherwise; a rung reads and writes its own state, and another rung's only
 * through the few functions below. */
typedef struct Rung {
        Level level;
        /* Its state between ticks (engine_rung_state), zeroed at the start. */
        size_t state_size;
        /* Besides being enabled and the server accepting clients: whether it can act on this
         * sample at all (the admit rung: a connection storm; the throttle: a cgroup to write and
         * PSI to watch). */
        bool (*available)(const Tick *k);
        /* Its action did not help or failed, for now: the ladder may climb past it. */
        bool (*exhausted)(const Tick *k);
        /* Climbed onto past a rung that is not helping only when this says so (a destructive
         * rung only on its own thresholds); NULL: always. */
        bool (*climbed_to)(const Tick *k);
        /* Whether the ladder may stay on it once a reloaded policy is in (NULL: while enabled). */
        bool (*holds_level)(const Engine *e);

        /* Each tick, first of all (also one without a working set): what the actuators reported
         * of its actions besides success or failure (the buffer pool's configured size). */
        void (*results)(Tick *k);
        /* Each tick, once the working set is known: signals of its own (the connections). */
        void (*sample)(Tick *k);
        /* A new server process: what of its state was the old process's. Before the bookkeeping
         * of the actions is reset for it. */
        void (*new_process)(Tick *k);
        /* Each tick, after the server's events, before the results of the actions. */
        void (*observe)(Tick *k);
        /* One of its actions failed: what of its state the failure undoes. true: handled whole
         * (no backoff, no failure decision); else *but is said after the backoff. */
        bool (*failed)(Tick *k, ActionKind a, bool was_pending, usec_t backoff, const char **but);
        /* One of its actions was not carried out through no fault of its own (not judged, no
         * backoff): what of its state the decision assumed done. */
        void (*not_done)(Tick *k, ActionKind a);
        /* One of its actions judged by its effect: keep a backoff running, what to say after the
         * backoff of one that freed too little (but), and after the line whatever it freed (after). */
        void (*judged)(const Tick *k, ActionKind a, bool *keep_backoff, const char **but, const char **after);
        /* Each tick, after the limits, before the ladder moves. */
        void (*before_ladder)(Tick *k);

        /* An action under way that every rung waits for (the restart): nothing is planned. */
        bool (*busy)(const Tick *k);
        /* Ahead of governor.settle, from the top rung down (admission carried to a new process):
         * true when it decided. */
        bool (*early)(Tick *k);
        /* Before the plans, from the top rung down: what it tells the others (Tick). */
        void (*prepare)(Tick *k);
        /* Ahead of the ladder's order, from the top rung down (the emergency reset): true when it
         * decided. */
        bool (*urgent)(Tick *k);
        /* Its action, the ladder at or above it, from the top rung down: true when the rungs
         * below wait (it decided, or holds them back this tick). */
        bool (*plan)(Tick *k);
        /* Nothing decided on the ladder, from the top rung down: what it does when calm (grow
         * back, put back): true when it decided. */
        bool (*calm)(Tick *k);
        /* Every tick, after the rest (the throttle's memory.high). */
        void (*after)(Tick *k);

        /* A dry run begins or ends: forget what was only assumed. */
        void (*simulate)(Engine *e);
        /* memgov stops: the decisions that put back what it changed. Returns how many of max. */
        unsigned (*leave)(const Engine *e, const char *why, Decision *ret, unsigned max);
} Rung;

/* The ladder's rungs, in its order, each at its level (rungs.c). */
extern const Rung *const engine_rungs[_LEVEL_MAX];
/* The rung at level l (NULL for LEVEL_NORMAL). */
const Rung *engine_rung(Level l);
/* The state of the rung at level l (Rung.state_size bytes): its own file's to read and write. */
void *engine_rung_state(const Engine *e, Level l);
/* Each rung of the table, from the bottom of the ladder up, or from the top down (a return
 * inside leaves the loop; a break does not). */
#define FOREACH_RUNG_UP(r)                                                                           \
        for (Level r##_level = LEVEL_NORMAL + 1; r##_level < _LEVEL_MAX; r##_level++)              \
                for (const Rung *r = engine_rung(r##_level); r; r = NULL)
#define FOREACH_RUNG_DOWN(r)                                                                         \
        for (Level r##_level = _LEVEL_MAX - 1; r##_level > LEVEL_NORMAL; r##_level--)              \
                for (const Rung *r = engine_rung(r##_level); r; r = NULL)

/* ---- decisions.c: what a rung emits ---- */
_printf_(3, 0) Decision *emitv(Tick *k, DecisionKind kind, const char *fmt, va_list ap);
_printf_(3, 4) Decision *emit(Tick *k, DecisionKind kind, const char *fmt, ...);
_printf_(4, 5) Decision *emit_code(Tick *k, DecisionKind kind, DecisionCode code, const char *fmt, ...);
/* A decision for an actuator. */
_printf_(3, 4) Decision *emit_action(Tick *k, ActionKind a, const char *fmt, ...);
/* A hold is shown when its reason changes, not on every tick it lasts. action < 0: a notice
 * about the sample itself rather than about one action. */
_printf_(4, 5) void hold(Tick *k, int action, uint32_t code, const char *fmt, ...);
/* The tick's context for reasons, formatted on first use. */
const char *ctx(Tick *k);
/* An action of this kind among this tick's decisions so far. */
bool decided_this_tick(const Tick *k, ActionKind a);

/* ---- situation.c: what the tick knows ---- */
void trends_init(Engine *e, const Policy *p);
const Trend *trend_in_use(const Engine *e);
usec_t short_trend_eta(Tick *k, const Trend *tr, usec_t eta);
/* The ETA with the buffer pool's filling counted only up to the pool's size (pool-fill.h). */
usec_t pool_filling_eta(Tick *k, const Trend *tr, usec_t eta);
uint64_t resolve_budget(const Tick *k, const char **ret_source);
void recent_add(Engine *e, usec_t t, uint64_t ws);
/* The working set of the sample before the latest one added, and its time. */
bool recent_previous(const Engine *e, usec_t *ret_t, uint64_t *ret_ws);
/* Median of the (at most max_n <= 5) latest working-set figures taken after `since`. */
uint64_t recent_median(const Engine *e, usec_t since, bool inclusive, unsigned max_n);
void observe_startup(Tick *k);
void observe_events(Tick *k);
void hold_starting(Tick *k);
/* Sets k->full_now and k->some_now. */
void observe_stall(Tick *k);
void remember(Engine *e, const Sample *s);
/* How long the server process now governed has taken clients. */
usec_t taking_clients_for(const Tick *k);
/* Host RAM minus budget.host-reserve: 0 when there is no room on this host. */
uint64_t host_top(const Policy *p, const Sample *s);
/* The wall clock when the sample has one, else the monotonic. */
usec_t sample_clock(const Sample *s);

/* ---- engine.c: the ladder's questions ---- */
bool step_available(const Tick *k, Level l);
bool step_enters(const Tick *k, Level l);
bool step_stays(const Tick *k, Level l);
/* Destructive steps look at this very sample once more: is the step still called for? */
bool recheck(const Tick *k, Level l);
bool cooldown_over(const Tick *k, ActionKind a, Level l);

/* ---- effects.c: the actions' results ---- */
void note_action(Tick *k, ActionKind a, bool measure);
/* The action was decided for a server process that is gone by now: its end is that process's. */
bool for_gone_process(const Engine *e, ActionKind a);
void observe_failures(Tick *k);
void observe_not_done(Tick *k);
void measure_effects(Tick *k);
void expire_backoffs(Tick *k);

/* ---- limits.c: memory.high and memory.max, moved by no one else ---- */
uint64_t page_round(const Engine *e, uint64_t v);
/* memory.high and memory.max can be written: a cgroup, not mounted read-only. */
bool limits_writable(const Sample *s);
/* The budget when memgov's own raise of memory.max is in the sample: the value it raised from. */
bool limits_budget(const Tick *k, uint64_t *ret);
/* Each tick, after the results of the actions: a restore still due, admission's raise over,
 * the stop's raise again, someone else's memory.high. */
void limits_observe(Tick *k);
void limits_failed(Tick *k, ActionKind a);
void limits_new_process(Tick *k);
/* The restart is over without a new server process (its timeout, or a dry run's assumption): a
 * raise of memory.max for it put back. */
void limits_restart_ended(Tick *k);
/* engine_action_ready_at for memory.high: the throttle's cooldown since it last changed (0: now). */
usec_t limits_high_ready_at(const Engine *e, const Policy *p);
void limits_simulate(Engine *e);
unsigned limits_leave(const Engine *e, const char *why, Decision *ret, unsigned max);
/* memory.high as memgov last set it, else as the sample shows it; the highest it throttles from. */
uint64_t high_now(const Tick *k);
uint64_t high_top(const Tick *k);
/* memory.high not to be throttled now: a value unlike memgov's own was seen. */
bool high_held(const Tick *k);
/* A memory.high decided: its values and what memgov now knows it to be. */
void high_set(Tick *k, uint64_t cur, uint64_t next, const char *fmt, ...) _printf_(4, 5);
/* memory.high out of the way of a step down of the buffer pool. */
void high_out_of_the_way_of_pool(Tick *k);
/* The server pressing on a memory.high below the budget. */
bool pressing_on_high(const Tick *k);
/* A write of memory.max under way, or decided in this tick. */
bool max_write_outstanding(const Tick *k);
/* Before a restart: memory.max raised while the server stops, memory.high out of the way.
 * false: a write of memory.max is under way, the restart waits for it (said). *ret_note: what
 * to add to the restart's reason. */
bool limits_before_stop(Tick *k, const char **ret_note);
/* While admission takes effect: memory.max raised by admit.max-raise for admit.raise-for. */
void limits_raise_for_admission(Tick *k);

/* ---- what a rung asks of another ---- */
bool restart_pending(const Engine *e);
/* The emergency reset was decided in this emergency. */
bool reset_emergency_done(const Engine *e);
/* A reset is out (decided, its result not in) that the ladder waits for: not an emergency reset
 * tried again on the growth after one that found no session (rung-reset.c). */
bool reset_awaited_out(const Tick *k);
/* A step down of the buffer pool decided and not judged yet. */
bool pool_shrinking(const Engine *e);
/* Admission judges the growth a connection storm on this server process: now (whether or not
 * admit.at is reached), or a lowering of max_connections decided (through or not), no calm since. */
bool admit_storm_judged(const Tick *k);
/* Of the clients connected, how many came with the storm (rung-admit.c). */
unsigned admit_newcomers(const Tick *k);
