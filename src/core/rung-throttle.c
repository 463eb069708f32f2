/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The throttle rung: a dynamic memory.high that slows the growth and buys time, backed off at
 * once when the server stalls on it (PSI full, or PSI some while it presses on it) and not
 * lowered again until calm; calm, the value someone else set, else the budget less
 * throttle.calm-headroom. It decides the value; limits.c writes it. */
#include <stdio.h>

#include "engine-internal.h"

static ThrottleState *state(const Engine *e) {
        return engine_rung_state(e, LEVEL_THROTTLE);
}

/* memory.high needs a cgroup to write, and PSI to tell a throttled server from a stalled one. */
static bool throttle_available(const Tick *k) {
        return limits_writable(k->s) && (k->s->has & SAMPLE_HAS_PSI) && k->s->psi.has_full;
}

static bool throttle_exhausted(const Tick *k) {
        const Engine *e = k->e;
        return state(e)->psi_guard || state(e)->at_floor || e->act[ACTION_SET_HIGH].spent;
}

/* The server's threads wait on memory most of the time while it presses on memory.high: a
 * delay every client feels, where PSI full, which counts only the moments all of its threads
 * wait at once, stays low while any of them can run. Read as full is (k->some_now): the last
 * second's share too, not only avg10, which trails the stall.
 * Seen: 100 s not answering at memory.high, PSI some avg10 96-99%, full 7-10%; and the last
 * second's share at 72% while avg10 stood at 25%, 5 s before it reached the guard. */
static bool some_stalled(const Tick *k) {
        const Policy *p = k->p;
        return p->some_guard > 0 && k->some_now >= p->some_guard && pressing_on_high(k);
}

/* "PSI full avg10 35%" or, where the last second's share is the higher, "PSI full 90% over
 * the last 1s": the reading a guard went by (k->full_now, k->some_now). */
static const char *psi_reading(char *buf, size_t size, const char *line, uint32_t now, uint32_t avg10,
                               const PsiRecent *recent) {
        char v[FORMAT_PERCENT_MAX], t[FORMAT_TIMESPAN_MAX];
        if (now == avg10)
                snprintf(buf, size, "PSI %s avg10 %s", line, format_bp(v, now));
        else
                snprintf(buf, size, "PSI %s %s over the last %s", line, format_bp(v, now),
                         format_timespan(t, recent->span));
        return buf;
}

/* memory.high raised by the margin, up to the calm value; from max there is nothing to raise.
 * The last step goes the rest of the way: one that would stop less than half a margin short of
 * the calm value is the calm value (seen: 973M -> 1017108K, then 1017108K -> 1017116K a tick
 * later, a write for 8K, the rounding to pages the only difference). */
static uint64_t made_way(uint64_t cur, uint64_t margin, uint64_t top) {
        if (cur == SIZE_UNLIMITED)
                return cur;
        return MAX(cur, cur + margin + margin / 2 >= top ? top : cur + margin);
}

/* Called for on its own threshold and not possible here: said once, with why. */
static void throttle_before_ladder(Tick *k) {
        const Policy *p = k->p;
        const Sample *s = k->s;

        if (!k->starting && !step_available(k, LEVEL_THROTTLE) && p->step[LEVEL_THROTTLE].enabled &&
            k->ws_bp >= p->step[LEVEL_THROTTLE].at && p->step[LEVEL_THROTTLE].at > 0) {
                bool no_cgroup = !(s->has & SAMPLE_HAS_CGROUP);
                if (no_cgroup || !s->limits_readonly)
                        hold(k, ACTION_SET_HIGH, no_cgroup ? HOLD_THROTTLE_NO_CGROUP : HOLD_THROTTLE_NO_PSI,
                             no_cgroup ? "%s: throttle skipped: no cgroup v2 memory controller to set memory.high on"
                                       : "%s: throttle skipped: no PSI memory.pressure to guard memory.high against "
                                         "a stall",
                             ctx(k));
                else
                        hold(k, ACTION_SET_HIGH, HOLD_THROTTLE_READONLY,
                             "%s: throttle skipped: the cgroup file system is read-only here, memory.high cannot "
                             "be set", ctx(k));
        }
}

/* A new server process: what stalled the old one at memory.high is gone with it. */
static void throttle_new_process(Tick *k) {
        state(k->e)->psi_guard = false;
}

static void throttle_after(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_PERCENT_MAX], d2[FORMAT_PERCENT_MAX];
        uint64_t budget = k->budget;

        state(e)->at_floor = false;
        if (!k->emergency)
                state(e)->yields = state(e)->gone = false;
        if (!limits_writable(s) || !p->step[LEVEL_THROTTLE].enabled)
                return;
        /* Out of the way while the server stops (high_out_of_the_way_of_stop). */
        if (restart_pending(e))
                return;
        /* A write that failed is not tried again before its backoff is over. */
        if (e->act[ACTION_SET_HIGH].spent || high_held(k))
                return;

        uint64_t cur = high_now(k);
        /* The calm value: what someone else set (adopted), else the budget minus the headroom,
         * else (calm-headroom = off) nothing of ours. */
        bool have_ceiling = e->limits.ceiling_known || p->calm_headroom > 0;
        uint64_t ceiling = e->limits.ceiling_known ? e->limits.high_ceiling : budget - apply_bp(budget, p->calm_headroom);
        uint64_t next = cur;
        const char *why = NULL;
        char whybuf[160];

        if (e->level >= LEVEL_THROTTLE && step_available(k, LEVEL_THROTTLE)) {
                uint64_t top = high_top(k);
                uint64_t floor_b = apply_bp(budget, p->throttle_floor);
                uint64_t margin = apply_bp(budget, p->throttle_margin);
                uint64_t want = CLAMP(k->ws + margin, floor_b, top);
                uint32_t full = k->full_now;

                /* In an emergency whose reset is over, the restart held back (by its guard rails, its
                 * cooldown, or max-per-day: not a restart that is disabled): a server pressing on
                 * memory.high is only stalled there, and restart.at (where min-uptime no longer
                 * holds the restart) is out of its reach. memory.high makes way until the
                 * emergency is over.
                 * Seen: 29 s stalled at memory.high 334M, PSI full under the guard, no session to end. */
                if (k->emergency && k->restart_held && reset_emergency_done(e) && !reset_awaited_out(k) &&
                    !decided_this_tick(k, ACTION_RESET) && pressing_on_high(k))
                        state(e)->yields = true;

                /* Stalled at restart.at on a memory.high already at the calm value, in an emergency
                 * with the restart held back by its cooldown or max-per-day (what restart.at does
                 * not lift): there is nothing under memory.max left to make way to, and no restart
                 * coming. A memory.high below memory.max then only turns the kernel's kill into a
                 * stall. Out of the way until the emergency is over: the server's growth ends
                 * under memory.max, or the kernel decides there.
                 * Seen: 220 s not answering between memory.high 373M and memory.max 384M. */
                uint32_t restart_at = p->step[LEVEL_RESTART].at;
                bool give_way = k->emergency && k->restart_held && full >= p->full_guard && cur != SIZE_UNLIMITED &&
                                cur >= page_round(e, top) && restart_at > 0 && k->ws_bp >= restart_at;
                if (give_way || (state(e)->gone && cur == SIZE_UNLIMITED)) {
                        state(e)->psi_guard = state(e)->gone = true;
                        next = SIZE_UNLIMITED;
                        snprintf(whybuf, sizeof(whybuf), "stalled at restart.at, the restart held back and nothing "
                                 "left to make way to: out of the way while the emergency lasts");
                        why = whybuf;
                } else if (full >= p->full_guard || some_stalled(k) || state(e)->yields ||
                           (state(e)->psi_guard && pressing_on_high(k))) {
                        /* The server spends its time stalled on memory.high: back off at once.
                         * Once backed off, memory.high makes way whenever the server presses on it
                         * again, until calm: with nothing left to reclaim under it, lowered toward
                         * the working set again it stalls the server again where it did. */
                        state(e)->psi_guard = true;
                        next = made_way(cur, margin, top);
                        char reading[96];
                        if (full >= p->full_guard)
                                snprintf(whybuf, sizeof(whybuf), "%s >= throttle.full-guard %s: backing off",
                                         psi_reading(reading, sizeof(reading), "full", full, s->psi.full.avg10,
                                                     &e->full_recent),
                                         format_bp(d2, p->full_guard));
                        else if (some_stalled(k))
                                snprintf(whybuf, sizeof(whybuf), "%s >= throttle.some-guard %s, pressing on "
                                         "memory.high: backing off",
                                         psi_reading(reading, sizeof(reading), "some", k->some_now, s->psi.some.avg10,
                                                     &e->some_recent),
                                         format_bp(d2, p->some_guard));
                        else if (state(e)->yields)
                                snprintf(whybuf, sizeof(whybuf), "in an emergency, its reset done and the restart "
                                         "held back: making way up to restart.at");
                        else
                                snprintf(whybuf, sizeof(whybuf), "backed off from a stall until calm: making way "
                                         "as the server presses on it");
                        why = whybuf;
                } else if (!state(e)->psi_guard) {
                        /* Lowered only while an OOM is believed ahead, or the working set stands
                         * at throttle.at: the ladder comes down a rung at a time, and a
                         * memory.high lowered meanwhile only slows a server that no longer grows,
                         * and meets what comes next lower than calm.
                         * Seen: 497M -> 451M in 40 s at 48-49% of the budget, no OOM ahead.
                         * Not on a rise the trend has not looked at long enough to believe its
                         * ETA (short_trend_eta()), on which no other rung acts: without swap a
                         * server that reaches memory.high is stalled there, every client with it,
                         * and such a rise often ends on its own; pressed on then, it makes way.
                         * Seen: 43 s not answering at memory.high, lowered from 76% of the budget
                         * on "too short a look for an OOM in 5m"; with no governor the same
                         * growth ended at 93-97%. */
                        bool at_at = p->step[LEVEL_THROTTLE].at > 0 && k->ws_bp >= p->step[LEVEL_THROTTLE].at;
                        bool tighten = k->eta != USEC_INFINITY || at_at;
                        if (!tighten && k->eta_too_far > 0 && pressing_on_high(k)) {
                                next = made_way(cur, margin, top);
                                snprintf(whybuf, sizeof(whybuf), "no OOM believed ahead (too short a look): making "
                                         "way as the server presses on it");
                                why = whybuf;
                        } else if (cur > want && tighten && !pool_shrinking(e) &&
                            (!e->limits.high_known || k->now - e->limits.high_changed >= p->step[LEVEL_THROTTLE].cooldown)) {
                                uint64_t step = apply_bp(budget, p->step_down);
                                /* From "max", start right at the target; after that, lower slowly. */
                                next = cur == SIZE_UNLIMITED || cur > top ? MAX(want, MIN(top, cur)) :
                                       cur - MIN(cur - want, step);
                                snprintf(whybuf, sizeof(whybuf), "throttle: toward working set + %s, at most %s "
                                         "of the budget per step", format_bp(c, p->throttle_margin),
                                         format_bp(d2, p->step_down));
                                why = whybuf;
                        }
                        if (next <= floor_b && k->rising)
                                state(e)->at_floor = true;
                }
        } else {
                state(e)->psi_guard = false;
                if (have_ceiling) {
                        next = ceiling;
                        if (e->limits.ceiling_known)
                                why = "calm: the value set by someone else";
                        else {
                                snprintf(whybuf, sizeof(whybuf), "calm: budget minus throttle.calm-headroom %s",
                                         format_bp(c, p->calm_headroom));
                                why = whybuf;
                        }
                } else if (e->limits.high_known && e->limits.initial_known) {
                        next = e->limits.high_initial; /* calm-headroom = off: give back what was there */
                        why = "calm: the value found at start";
                }
        }

        next = page_round(e, next);
        if (!why || next == cur)
                return;
        high_set(k, cur, next, "%s: memory.high %s -> %s (%s)", ctx(k), format_bytes_change(a, b, cur, next), b, why);
}

const Rung rung_throttle = {
        .level = LEVEL_THROTTLE,
        .state_size = sizeof(ThrottleState),
        .available = throttle_available,
        .exhausted = throttle_exhausted,
        .before_ladder = throttle_before_ladder,
        .new_process = throttle_new_process,
        .after = throttle_after,
};
