/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The engine's simulator for its tests (tests/unit/test-engine.c and test-rung-*.c): the engine
 * driven tick by tick as the daemon and replay drive it, its decisions logged, and the
 * invariants every run keeps. */
#pragma once

#include <errno.h>
#include <inttypes.h>

#include "test-util.h"

#include "memgov/engine.h"
#include "memgov/feedback.h"
#include "memgov/units.h"
#include "engine-internal.h"

/* The rungs' own state, as the rungs keep it. */
#define ADMIT(sim) ((AdmitState *) engine_rung_state((sim)->e, LEVEL_ADMIT))
#define POOL(sim) ((PoolState *) engine_rung_state((sim)->e, LEVEL_POOL))
#define RESTART(sim) ((RestartState *) engine_rung_state((sim)->e, LEVEL_RESTART))
#define THROTTLE(sim) ((ThrottleState *) engine_rung_state((sim)->e, LEVEL_THROTTLE))

#define MB (1ULL << 20)
#define GB (1ULL << 30)
#define SEC USEC_PER_SEC
#define BUDGET (10 * GB)
/* memory.high and memory.max are kept in pages. */
#define PAGE_DOWN(x) ((x) - (x) % 4096)
#define CALM PAGE_DOWN(BUDGET - apply_bp(BUDGET, 300))

/* The helpers below look for decisions by class (engine.h): an action, or another kind. */
#define T_TRIM     (DECISION_ACTION + ACTION_TRIM)
#define T_SET_HIGH (DECISION_ACTION + ACTION_SET_HIGH)
#define T_SET_MAX  (DECISION_ACTION + ACTION_SET_MAX)
#define T_RESET    (DECISION_ACTION + ACTION_RESET)
#define T_RESTART  (DECISION_ACTION + ACTION_RESTART)
#define T_POOL     (DECISION_ACTION + ACTION_POOL)
#define T_ADMIT    (DECISION_ACTION + ACTION_ADMIT)
#define T_LEVEL    decision_kind_class(DECISION_LEVEL)
#define T_EFFECT   decision_kind_class(DECISION_EFFECT)
#define T_HOLD     decision_kind_class(DECISION_HOLD)
#define T_EVENT    decision_kind_class(DECISION_EVENT)

/* Drives the engine the way the daemon and replay do: one sample per tick. */
typedef struct Sim {
        Policy p;
        Engine *e;
        ActionFeedback fb; /* what the next tick tells the engine of its actions */
        Sample s;
        usec_t now;
        EngineOutput out;
        Decision log[4096];
        usec_t at[4096];
        unsigned n;
} Sim;

/* For resets_free(): the resets find no session to end. */
#define FINDS_NONE UINT64_MAX
/* Where storm() starts the working set: 89.5 % of the budget. */
#define STORM_WS (9165 * MB)

#define expect(cond)                                   \
        do {                                           \
                if (!(cond)) {                         \
                        dump(sim);                     \
                        fail_msg("expected: %s", #cond); \
                }                                      \
        } while (0)

Sim *sim_new(bool simulate);
void sim_free(Sim *sim);
void sim_policy_changed(Sim *sim);
void sim_tick(Sim *sim, usec_t dt);
void sim_run(Sim *sim, usec_t duration, usec_t step);
void set_ws(Sim *sim, uint64_t ws);
unsigned count(const Sim *sim, unsigned k, unsigned from);
const Decision *find(const Sim *sim, unsigned k, unsigned from);
const Decision *find_text(const Sim *sim, unsigned k, const char *text, unsigned from);
const Decision *find_code(const Sim *sim, unsigned k, DecisionCode code, unsigned from);
const Decision *find_level(const Sim *sim, Level from_l, Level to_l, DecisionCode code, unsigned from);
usec_t last_at(const Sim *sim, unsigned k);
void dump(const Sim *sim);
void check_invariants(const Sim *sim);
void to_pool(Sim *sim);
void pool_result(Sim *sim, int error, uint64_t freed);
Sim *sim_throttled(uint64_t *ret_want);
void ramp_to_restart(Sim *sim);
void resets_fail(Sim *sim, int error);
void resets_free(Sim *sim, uint64_t freed);
void resets_free_nothing(Sim *sim);
void trims_free(Sim *sim, uint64_t freed);
void stall_at_limit(Sim *sim, uint32_t full);
void stalled_at_limit(Sim *sim, uint32_t full);
unsigned climb_into_high(Sim *sim, uint64_t per_sec, unsigned seconds, bool to_restart, uint64_t freed);
Sim *flicker(unsigned seconds, int reset_error);
void start_ramp(Sim *sim, bool known);
void storm(Sim *sim, unsigned from, unsigned per_s);
/* A reading of the buffer pool's pages in use and room, taken a little before the next sample
 * (as the shell reads it every 2 s while the pool fills). */
void pool_reading(Sim *sim, uint64_t in_use, uint64_t room);
Sim *young_server_to_reset(void);
