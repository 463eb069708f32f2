/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The restart rung: the server restarted gracefully, the last resort, within its guard rails
 * (restart.min-uptime, restart.windows, restart.max-per-day) unless the OOM killer is due first;
 * memory.max raised while it stops (limits.c). Every other rung waits while it is under way. It
 * decides; src/act/restart.c carries it out. */
#include <stdio.h>
#include <string.h>

#include "engine-internal.h"

static RestartState *state(const Engine *e) {
        return engine_rung_state(e, LEVEL_RESTART);
}


static unsigned restarts_within(const Engine *e, usec_t clock, usec_t span) {
        unsigned n = 0;
        for (unsigned i = 0; i < state(e)->n; i++)
                if (state(e)->clock[i] <= clock && clock - state(e)->clock[i] < span)
                        n++;
        return n;
}

/* Guard rails and re-check for a graceful restart; true when it may go ahead now. */
static bool restart_allowed(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char t1[FORMAT_TIMESPAN_MAX], t2[FORMAT_TIMESPAN_MAX];

        unsigned recent = restarts_within(e, sample_clock(s), USEC_PER_DAY);
        if (recent >= p->restart_max_per_day) {
                hold(k, ACTION_RESTART, HOLD_MAX_PER_DAY,
                     "%s: restart held: %u restart(s) in the last 24h (restart.max-per-day %u)", ctx(k), recent,
                     p->restart_max_per_day);
                return false;
        }

        /* Without the process in this sample (unreadable for a moment, or gone), no older than
         * when it was last seen, nor than memgov's last restart: not "unknown, so old enough".
         * Seen in fault injection on a real trace: one sample without the process, and a server
         * up 3m32s restarted at 88%. */
        usec_t uptime = USEC_INFINITY;
        if (s->has & SAMPLE_HAS_UPTIME)
                uptime = s->uptime;
        else {
                if (e->prev_uptime > 0 && s->mono >= e->prev_uptime_mono)
                        uptime = e->prev_uptime + (s->mono - e->prev_uptime_mono);
                if (e->act[ACTION_RESTART].count > 0)
                        uptime = MIN(uptime, k->now - e->act[ACTION_RESTART].last);
        }
        /* min-uptime keeps a server warming up (its buffer pool filling, a steep rise that ends)
         * from being restarted. A young server already at restart.at with the OOM killer due
         * within restart.emergency-eta is not warming up: the kernel would restart it anyway,
         * by SIGKILL and crash recovery (a server just back from an OOM kill, growing again). */
        bool due = k->emergency && p->step[LEVEL_RESTART].at > 0 && k->ws_bp >= p->step[LEVEL_RESTART].at;
        if (uptime < p->restart_min_uptime && !due) {
                hold(k, ACTION_RESTART, HOLD_MIN_UPTIME,
                     "%s: restart held: the server is up for %s only (restart.min-uptime %s)", ctx(k),
                     format_timespan(t1, uptime), format_timespan(t2, p->restart_min_uptime));
                return false;
        }

        if (p->n_windows > 0 && !k->emergency) {
                if (!(s->has & SAMPLE_HAS_WALL)) {
                        hold(k, ACTION_RESTART, HOLD_NO_WALL,
                             "%s: restart held: no wall clock to check restart.windows", ctx(k));
                        return false;
                }
                if (!windows_contain(p->windows, p->n_windows, minute_of_week(s->wall, s->utc_offset))) {
                        hold(k, ACTION_RESTART, HOLD_WINDOW,
                             "%s: restart held: outside restart.windows until the ETA is under "
                             "restart.emergency-eta %s", ctx(k), format_timespan(t1, p->emergency_eta));
                        return false;
                }
        }
        return true;
}

/* The restart taken as done (a dry run) or given up (restart.stop-timeout) without a new server
 * process. */
static void restart_observe(Tick *k) {
        Engine *e = k->e;
        char t[FORMAT_TIMESPAN_MAX];

        if (!state(e)->pending)
                return;
        if (e->opts.simulate) {
                if (k->now - state(e)->at < k->p->settle)
                        return;
                emit_code(k, DECISION_EVENT, EVENT_RESTART_ASSUMED, "restart taken as done (simulated: no server was restarted)");
        } else {
                if (k->now - state(e)->at < k->p->stop_timeout)
                        return;
                emit_code(k, DECISION_EVENT, EVENT_RESTART_TIMEOUT, "no new server process within restart.stop-timeout %s",
                     format_timespan(t, k->p->stop_timeout));
        }
        state(e)->pending = false;
        limits_restart_ended(k);
}
static bool restart_busy(const Tick *k) {
        return state(k->e)->pending;
}

/* Called for, whether or not its guard rails (min-uptime, the windows, max-per-day) allow it now:
 * the emergency reset's reason says which. */
static void restart_prepare(Tick *k) {
        Engine *e = k->e;
        k->restart_wanted = e->level >= LEVEL_RESTART && step_available(k, LEVEL_RESTART) &&
                            !e->act[ACTION_RESTART].spent && cooldown_over(k, ACTION_RESTART, LEVEL_RESTART) &&
                            recheck(k, LEVEL_RESTART);
        k->restart_due = k->restart_wanted && restart_allowed(k);
        k->restart_held = e->level >= LEVEL_RESTART && step_available(k, LEVEL_RESTART) && !k->restart_due;
}

static bool restart_plan(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;

        if (!k->restart_due)
                return false;
        /* The emergency reset's sessions are still ending: its result first, unless the
         * OOM is nearer than one of its statements may take (sql.query-timeout): then the
         * reset would answer after the kernel's kill. A server stalled at restart.at has
         * no OOM coming, and answers no one meanwhile: the reset is given
         * sql.query-timeout there, as long as one of its statements.
         * Seen: a session list 6.7 s in coming from a swamped server, the OOM 2-4 s away. */
        bool reset_out = k->wait_for_reset || (reset_emergency_done(e) && reset_awaited_out(k));
        usec_t reset_out_for = reset_out ? k->now - e->act[ACTION_RESET].last : 0;
        bool oom_first = reset_out && k->eta < p->sql_query_timeout;
        bool stall_first = reset_out && !oom_first && k->stalled && reset_out_for >= p->sql_query_timeout;
        if (reset_out && !oom_first && !stall_first)
                return true;
        const char *no_room;
        if (!limits_before_stop(k, &no_room))
                return true;
        unsigned recent = restarts_within(e, sample_clock(k->s), USEC_PER_DAY);
        char t1[FORMAT_TIMESPAN_MAX], t2[FORMAT_TIMESPAN_MAX];
        char reset_note[192] = "";
        if (oom_first)
                snprintf(reset_note, sizeof(reset_note),
                         ", the reset under way not waited for%s: the OOM in %s is nearer than sql.query-timeout %s",
                         p->preflush ? ", nor a pre-flush" : "", format_timespan(t1, k->eta),
                         format_timespan(t2, p->sql_query_timeout));
        else if (stall_first)
                snprintf(reset_note, sizeof(reset_note),
                         ", the reset under way for %s not waited for longer%s: stalled, the server answers "
                         "no one (sql.query-timeout %s)",
                         format_timespan(t1, reset_out_for), p->preflush ? ", nor a pre-flush" : "",
                         format_timespan(t2, p->sql_query_timeout));
        Decision *d = emit_action(k, ACTION_RESTART, "%s: graceful restart (%u of at most %u in 24h%s%s%s)", ctx(k),
                           recent + 1, p->restart_max_per_day,
                           k->stalled            ? ", emergency: stalled at restart.at (PSI full)"
                           : k->emergency && p->n_windows > 0 ? ", emergency: outside the windows"
                                                              : "",
                           reset_note, no_room);
        /* Not past the OOM either: a pre-flush talks to the same swamped server. */
        if (d)
                d->restart.preflush = p->preflush && !oom_first && !stall_first;
        note_action(k, ACTION_RESTART, false);
        state(e)->pending = true;
        state(e)->at = k->now;
        if (state(e)->n == RESTART_HISTORY) {
                memmove(state(e)->clock, state(e)->clock + 1, (RESTART_HISTORY - 1) * sizeof(usec_t));
                state(e)->n--;
        }
        state(e)->clock[state(e)->n++] = sample_clock(k->s);
        return true;
}

/* It stops the server: entered on its own thresholds only, never climbed onto. */
static bool restart_climbed_to(const Tick *k) {
        return false;
}

static bool restart_failed(Tick *k, ActionKind a, bool was_pending, usec_t backoff, const char **but) {
        state(k->e)->pending = false;
        return false;
}

/* A new server process: the restart memgov waited for, or one it did not make. */
static void restart_new_process(Tick *k) {
        Engine *e = k->e;
        if (state(e)->pending) {
                state(e)->pending = false;
                emit_code(k, DECISION_EVENT, EVENT_RESTART_DONE, "graceful restart done (server pid %d -> %d)", (int) e->prev_pid,
                     (int) k->s->pid);
        } else
                emit_code(k, DECISION_EVENT, EVENT_RESTART_FOREIGN, "the server restarted (pid %d -> %d), not by memgov",
                     (int) e->prev_pid, (int) k->s->pid);
}

/* A restart that only was assumed. */
static void restart_simulate(Engine *e) {
        state(e)->pending = false;
}

const Rung rung_restart = {
        .level = LEVEL_RESTART,
        .state_size = sizeof(RestartState),
        .climbed_to = restart_climbed_to,
        .new_process = restart_new_process,
        .observe = restart_observe,
        .failed = restart_failed,
        .busy = restart_busy,
        .prepare = restart_prepare,
        .plan = restart_plan,
        .simulate = restart_simulate,
};

bool restart_pending(const Engine *e) {
        return state(e)->pending;
}

bool engine_restart_pending(const Engine *e) {
        return restart_pending(e);
}

unsigned engine_restarts(const Engine *e, const usec_t **ret_clock) {
        *ret_clock = state(e)->clock;
        return state(e)->n;
}

void engine_restore_restarts(Engine *e, const usec_t *clock, unsigned n) {
        state(e)->n = MIN(n, (unsigned) RESTART_HISTORY);
        memcpy(state(e)->clock, clock + (n - state(e)->n), state(e)->n * sizeof(usec_t));
}