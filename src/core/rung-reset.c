/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The reset rung: the sessions holding the most memory ended (idle ones first), their memory given
 * back by a trim; in an emergency, the emergency reset, ahead of the ladder's order, ends the
 * largest sessions down to reset.emergency-min-memory. It decides; src/act/reset.c carries it
 * out. */
#include <stdio.h>
#include <string.h>

#include "engine-internal.h"

static ResetState *state(const Engine *e) {
        return engine_rung_state(e, LEVEL_RESET);
}

/* In an emergency the reset rung ends the largest sessions down to reset.emergency-min-memory
 * (see emergency_reset_ready()): a choice only a reset by SQL can make. */
static bool emergency_reset_enabled(const Policy *p) {
        return p->reset_emergency_max > 0 && p->reset_method == RESET_SQL;
}

/* Said of a reset's backoff that does not hold the emergency reset back. */
#define EMERGENCY_EXCEPTED " (an emergency reset excepted)"

/* What the emergency is, for the reasons. */
static void emergency_why(Tick *k, char *buf, size_t n) {
        char a[FORMAT_PERCENT_MAX], b[FORMAT_PERCENT_MAX], t[FORMAT_TIMESPAN_MAX];
        if (k->stalled)
                snprintf(buf, n, "stalled at restart.at: PSI full avg10 %s >= throttle.full-guard %s",
                         format_bp(a, k->s->psi.full.avg10), format_bp(b, k->p->full_guard));
        else
                snprintf(buf, n, "OOM under restart.emergency-eta %s", format_timespan(t, k->p->emergency_eta));
}

/* The last emergency reset found no session at reset.emergency-min-memory: it ended nothing, so
 * there is no effect to wait for, and a session can reach that size only as the working set grows
 * by as much. It comes again then, in this emergency or in one that follows it, whatever
 * reset.cooldown says; the growth it waits for doubles with each one in a row that found none, up
 * to a sixteenth of the budget, and is never under reset.emergency-min-memory (a storm of many
 * small sessions grows the server without any of them reaching the floor: a few tries over the
 * budget's range, not one listing of the sessions ahead of the restart in the queue at every few
 * megabytes; and sessions that do grow are found at most a sixteenth of the budget late).
 * Seen otherwise: 13 sessions under 200K when it found none, held back by the cooldown and the
 * backoff while each grew to some 19M, and the server killed by the OOM killer.
 * So does one that ended every session at the floor, fewer than reset.emergency-max-per-step:
 * the others were smaller, and reach it only as the server grows (its growth not doubled: it
 * found some). Seen held by the cooldown: 10 of 66 sessions ended, the rest growing at 23 G/h,
 * the restart at 96% 18 s later. */
#define EMERGENCY_NONE_DOUBLINGS 16
#define EMERGENCY_REGROWTH_BUDGET_DIVISOR 16

static uint64_t emergency_regrowth(const Tick *k) {
        unsigned n = state(k->e)->emergency_none;
        uint64_t g = k->p->reset_emergency_min_memory << (n > 0 ? MIN(n - 1, EMERGENCY_NONE_DOUBLINGS) : 0);
        return MAX(MIN(g, k->budget / EMERGENCY_REGROWTH_BUDGET_DIVISOR), k->p->reset_emergency_min_memory);
}

/* Not with reset.emergency-min-memory 0: every session holds that much, and one that found none
 * found none that may be reset at all (exempt, in a write transaction): growth changes nothing. */
static bool emergency_regrown(const Tick *k) {
        const ResetState *rs = state(k->e);
        return (rs->emergency_found_nothing || rs->emergency_found_fewer) && k->p->reset_emergency_min_memory > 0 &&
               k->ws >= rs->emergency_low + emergency_regrowth(k);
}

/* In an emergency (the OOM under restart.emergency-eta, or a server stalled at restart.at), the
 * reset rung ends the largest sessions down to reset.emergency-min-memory, up to
 * reset.emergency-max-per-step of them, whatever the backoff of a reset that found none at
 * reset.min-memory: a storm of many small sessions grows the server as much as one large
 * session, and no session of it reaches min-memory. It comes before the pool step (whose own
 * connection and resize would hold it up in the action queue) and before a restart that would
 * end every session, and again once reset.cooldown is over while the emergency lasts, when the
 * last one ended sessions: sessions that grow back are ended again rather than all of them by
 * the restart.
 * Seen at the top of the ladder: decided at 90% of the budget, against 64% at the reset rung.
 * These rules; after one that found no session, also emergency_regrown(). */
static bool emergency_reset_due(const Tick *k) {
        const Engine *e = k->e;
        const Policy *p = k->p;
        const ActionState *st = &e->act[ACTION_RESET];
        /* Again only after one that ended sessions, each holding reset.emergency-min-memory or
         * more by the server's own count: the reset reports what it measured only when it ended
         * one. Not the RSS around it: the server's other sessions grow meanwhile, and what the
         * ended ones held goes back to the allocator, whose next requests reuse it (seen: four
         * sessions of 11-17M ended while the RSS went 205M -> 213M). One that failed otherwise, or
         * was not carried out (a dry run; a replay of a trace that does not hold the reset's
         * measurement) comes once an emergency. Never within reset.cooldown of the last, even
         * across two emergencies (an ETA or a stall that dips out for one sample), nor within the
         * backoff of the last one's failure; one that found no session excepted
         * (emergency_regrown()). */
        bool ended = state(e)->last_emergency && !st->pending && st->gain_measured;
        bool rested = !state(e)->emergency_any || (k->now - state(e)->emergency_last >= p->step[LEVEL_RESET].cooldown &&
                                                  k->now >= state(e)->emergency_backoff_until);
        return rested && (!state(e)->emergency_done || ended);
}

static bool emergency_reset_ready(Tick *k) {
        return k->emergency && k->e->level >= LEVEL_RESET && emergency_reset_enabled(k->p) && step_available(k, LEVEL_RESET) &&
               (emergency_reset_due(k) || emergency_regrown(k));
}

/* Decided once emergency_reset_ready(), with no reset pending, ahead of the ladder's order; the
 * reason says whether the restart is held back (by its guard rails: then the OOM killer is what
 * comes) or the server presses on the throttle's memory.high. */
static bool reset_urgent(Tick *k) {
        if (!k->emergency_reset || k->wait_for_reset)
                return false;
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX];
        char where[64] = "";
        char h[FORMAT_BYTES_MAX];
        if (k->restart_wanted && !k->restart_due)
                snprintf(where, sizeof(where), "; the restart held back");
        else if (!k->restart_wanted && pressing_on_high(k))
                snprintf(where, sizeof(where), "; pressing on memory.high %s", format_bytes(h, k->s->memory_high));

        bool in_trx = p->reset_in_trx == IN_TRX_EMERGENCY;
        char why[192];
        emergency_why(k, why, sizeof(why));
        /* The growth it waits for doubles from its first in a row that found none. */
        bool again = !emergency_reset_due(k);
        state(e)->last_regrowth = again;
        if (!again)
                state(e)->emergency_none = 0;
        else {
                char g[FORMAT_BYTES_MAX];
                size_t n = strlen(why);
                snprintf(why + n, sizeof(why) - n, "; again: %s of growth since the last found %s",
                         format_bytes(g, k->ws - state(e)->emergency_low),
                         state(e)->emergency_found_nothing ? "none" : "fewer than its max");
        }
        /* In a storm admission judges one (the growth came with the new connections), its
         * newcomers go first, also before admit.at is reached: the sessions there before it did
         * not bring the server here, and an application's long-lived sessions often hold more
         * than a newcomer (prepared statements, caches). Largest first, one of them went and its
         * client's reconnect met the lowered max_connections. Measured: MySQL 9.7, sysbench's
         * sessions 32.6M, a storm's 16.3M; at 67%, under admit.at, sysbench's alone (32.7M). */
        bool newest = admit_storm_judged(k);
        unsigned newcomers = newest ? admit_newcomers(k) : 0;
        char order[224];
        if (newest)
                snprintf(order, sizeof(order), "the newest session(s) holding at least %s, idle or not (a connection "
                         "storm, as admission judges one: its newcomers before the sessions there before it)",
                         format_bytes(a, p->reset_emergency_min_memory));
        else
                snprintf(order, sizeof(order), "the largest session(s) holding at least %s, idle sessions first "
                         "(idle at least %s)", format_bytes(a, p->reset_emergency_min_memory),
                         format_timespan((char[FORMAT_TIMESPAN_MAX]) {}, p->reset_min_idle));
        /* On its ETA, what grows: a session that holds what it held at the last listing is passed
         * over unless what it holds is more than the growth over restart.emergency-eta (ending it
         * ends the emergency); stalled at restart.at, where nothing need grow, any session. In a
         * storm, not its newcomers still in the statement they ran then (session_not_growing()). */
        bool growing = !k->stalled && k->out->slope > 0;
        uint64_t still = growing ? (uint64_t) (k->out->slope * (double) p->emergency_eta / USEC_PER_SEC) : 0;
        char still_why[128] = "";
        if (growing) {
                int n = snprintf(still_why, sizeof(still_why), "; those that do not grow only at %s or more",
                                 format_bytes(h, MAX(still, p->reset_emergency_min_memory)));
                if (newcomers > 0 && n > 0 && (size_t) n < sizeof(still_why))
                        snprintf(still_why + n, sizeof(still_why) - n, ", or of the storm's %u newcomers, in the "
                                 "statement they ran then", newcomers);
        }
        Decision *d = emit_action(k, ACTION_RESET, "%s: emergency reset (%s%s): up to %u of %s%s%s", ctx(k), why,
                                  where, p->reset_emergency_max, order, still_why,
                                  in_trx ? "; sessions in transactions too" : "");
        if (d) {
                d->code = ACTION_EMERGENCY_RESET;
                d->reset.max = p->reset_emergency_max;
                d->reset.min_memory = p->reset_emergency_min_memory;
                d->reset.min_idle = p->reset_min_idle;
                d->reset.in_trx = in_trx;
                d->reset.newest_first = newest;
                d->reset.growing_only = growing;
                d->reset.still_enough = still;
                d->reset.newcomers = newcomers;
        }
        state(e)->emergency_done = state(e)->emergency_any = state(e)->last_emergency = true;
        state(e)->emergency_found_nothing = state(e)->emergency_found_fewer = false;
        state(e)->emergency_last = k->now;
        /* The backoff of a reset at reset.min-memory runs on: announced, and kept. */
        note_action(k, ACTION_RESET, true);
        return true;
}

/* In an emergency, the emergency reset first (reset_urgent). A reset whose result is not in yet
 * (one at reset.min-memory, decided before the emergency) is waited for: neither a pool step, a
 * restart, another reset nor a trim is queued ahead of the emergency reset that follows it (the
 * restart excepted once the OOM is nearer than sql.query-timeout, or on a stalled server once the
 * reset is out for that long: see the restart rung). Admission, one statement that stops the
 * inflow of a storm, still goes. No reset is decided while another one's result is not in: a
 * failure is that of the last reset decided. */
static void reset_prepare(Tick *k) {
        Engine *e = k->e;
        if (!k->emergency)
                state(e)->emergency_done = false;
        if (state(e)->emergency_found_nothing || state(e)->emergency_found_fewer)
                state(e)->emergency_low = MIN(state(e)->emergency_low, k->ws);
        k->emergency_reset = emergency_reset_ready(k);
        k->reset_outstanding = (k->s->pending & (1u << ACTION_RESET)) || e->act[ACTION_RESET].pending;
        k->wait_for_reset = k->emergency_reset && k->reset_outstanding;
}

static bool reset_plan(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (e->level >= LEVEL_RESET && !k->reset_outstanding && step_available(k, LEVEL_RESET) && !e->act[ACTION_RESET].spent &&
            cooldown_over(k, ACTION_RESET, LEVEL_RESET) && recheck(k, LEVEL_RESET)) {
                bool in_trx = p->reset_in_trx == IN_TRX_EMERGENCY && k->emergency;
                Decision *d = emit_action(k, ACTION_RESET,
                                   "%s: reset up to %u session(s) holding at least %s, idle sessions first "
                                   "(idle at least %s)%s",
                                   ctx(k), p->reset_max, format_bytes(a, p->reset_min_memory),
                                   format_timespan(t, p->reset_min_idle),
                                   in_trx ? "; emergency: sessions in transactions too" : "");
                if (d) {
                        d->reset.max = p->reset_max;
                        d->reset.min_memory = p->reset_min_memory;
                        d->reset.min_idle = p->reset_min_idle;
                        d->reset.in_trx = in_trx;
                }
                state(e)->last_emergency = state(e)->last_regrowth = false;
                note_action(k, ACTION_RESET, true);
                return true;
        }
        return false;
}

static bool reset_exhausted(const Tick *k) {
        return k->e->act[ACTION_RESET].spent;
}

/* It ends sessions: entered on its own thresholds only, never climbed onto. */
static bool reset_climbed_to(const Tick *k) {
        return false;
}

/* The emergency reset chooses among other sessions than a reset at reset.min-memory (in a storm,
 * that one finds none): only its own failure holds it back, and one that found no session only
 * until the working set has grown (emergency_regrown()). The one that failed is the last
 * decided: no reset is decided while another is pending (reset_prepare). */
static bool reset_failed(Tick *k, ActionKind a, bool was_pending, usec_t backoff, const char **but) {
        Engine *e = k->e;
        if (was_pending && state(e)->last_emergency && (k->s->found_nothing & (1u << a))) {
                state(e)->emergency_found_nothing = true;
                state(e)->emergency_low = k->ws;
                state(e)->emergency_none = MIN(state(e)->emergency_none + 1, EMERGENCY_NONE_DOUBLINGS + 1);
                *but = " (the emergency reset again once the working set has grown by reset.emergency-min-memory, "
                       "doubled for each one in a row that found none)";
        } else if (was_pending && state(e)->last_emergency)
                state(e)->emergency_backoff_until = k->now + backoff;
        else if (emergency_reset_enabled(k->p))
                *but = EMERGENCY_EXCEPTED;
        return false;
}

/* An emergency reset that ended every session at its floor, fewer than its max, comes again on
 * growth (emergency_regrown()): from the working set when its result came. Said on the sample
 * that brings the result, whenever its effect is judged. */
static void reset_observe(Tick *k) {
        ResetState *rs = state(k->e);
        if ((k->s->found_fewer & (1u << ACTION_RESET)) && rs->last_emergency && !for_gone_process(k->e, ACTION_RESET)) {
                rs->emergency_found_fewer = true;
                rs->emergency_low = k->ws;
                rs->emergency_none = 0;
        }
}

/* An emergency reset not carried out (the server answered nothing to the session kept for the
 * actions within sql.query-timeout) ended nothing: it comes again once reset.cooldown is over
 * while the emergency lasts, as after one that ended sessions, not once an emergency as after a
 * dry run. */
static void reset_not_done(Tick *k, ActionKind a) {
        if (state(k->e)->last_emergency && !for_gone_process(k->e, a))
                state(k->e)->emergency_done = false;
}

/* The emergency reset is held back by its own rules (emergency_reset_ready()), not by the backoff
 * of a reset at reset.min-memory; and its result does not end that backoff when that one failed
 * or found too little before it. */
static void reset_judged(const Tick *k, ActionKind a, bool *keep_backoff, const char **but, const char **after) {
        *keep_backoff = state(k->e)->last_emergency;
        if (state(k->e)->last_emergency)
                state(k->e)->emergency_none = 0;
        if (emergency_reset_enabled(k->p))
                *but = EMERGENCY_EXCEPTED;
        if (state(k->e)->last_emergency && state(k->e)->emergency_found_fewer)
                *after = "; it ended every session at reset.emergency-min-memory, fewer than its max: the emergency "
                         "reset again once the working set has grown by as much";
}

/* A new server process: what failed against the old one's sessions says nothing of the new
 * one's (the generic bookkeeping lifts the backoff of a failure), and the emergency reset (once
 * an emergency, not within reset.cooldown of the last) ended sessions of the process that is
 * gone: the new one's are its own, also in an emergency that began before it.
 * Seen otherwise: a new server's storm sessions back, rising 33G/h, no emergency reset, killed. */
static void reset_new_process(Tick *k) {
        Engine *e = k->e;
        const ActionState *st = &e->act[ACTION_RESET];
        if (!st->pending && st->failed)
                state(e)->emergency_backoff_until = 0;
        state(e)->emergency_done = state(e)->emergency_any = state(e)->emergency_found_nothing = false;
        state(e)->emergency_found_fewer = false;
        state(e)->emergency_none = 0;
}

const Rung rung_reset = {
        .level = LEVEL_RESET,
        .state_size = sizeof(ResetState),
        .exhausted = reset_exhausted,
        .climbed_to = reset_climbed_to,
        .new_process = reset_new_process,
        .failed = reset_failed,
        .not_done = reset_not_done,
        .observe = reset_observe,
        .judged = reset_judged,
        .prepare = reset_prepare,
        .urgent = reset_urgent,
        .plan = reset_plan,
};

bool reset_emergency_done(const Engine *e) {
        return state(e)->emergency_done;
}

/* A retry on growth is a long shot (the one before it found no session, most often a storm of
 * small ones): neither the restart nor memory.high making way for it waits for it.
 * Seen otherwise: a restart due at restart.at passed such a retry, out for 13.5 s on a swamped
 * server, only because the OOM was then nearer than sql.query-timeout (9.6 s). */
bool reset_awaited_out(const Tick *k) {
        return (k->s->pending & (1u << ACTION_RESET)) && !state(k->e)->last_regrowth;
}
