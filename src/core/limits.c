/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memory.high and memory.max: the only code that moves them. The throttle sets memory.high; the
 * buffer pool's step down and the restart's stop need it out of their way; the restart and
 * admission raise memory.max for a while, and it is put back. What memgov set, what it found,
 * and what to put back when it stops are kept here. */
#include <stdarg.h>
#include <stdio.h>

#include "engine-internal.h"


/* memory.high and memory.max can be written: a cgroup, not mounted read-only. */
bool limits_writable(const Sample *s) {
        return (s->has & SAMPLE_HAS_CGROUP) && !s->limits_readonly;
}

uint64_t page_round(const Engine *e, uint64_t v) {
        return v == SIZE_UNLIMITED ? v : v - v % e->opts.page_size;
}

/* A write of memory.max not finished (or its result not collected), or one decided in this tick.
 * memgov keeps one at a time: the engine hears of a failure by kind, not by job, and with two
 * under way a restore that failed would be taken for a raise that failed (and the raise after it
 * would stay in place for good), or the other way round. */
bool max_write_outstanding(const Tick *k) {
        return (k->s->pending & (1u << ACTION_SET_MAX)) || decided_this_tick(k, ACTION_SET_MAX);
}

/* memory.max raised for a restart goes back to what it was; until the write is confirmed,
 * max_restoring says a restore is under way. */
static void restore_max(Tick *k, const char *why) {
        Engine *e = k->e;
        char a[FORMAT_BYTES_MAX];
        Decision *d = emit_action(k, ACTION_SET_MAX, "restore memory.max to %s%s", format_bytes(a, e->limits.max_original), why);
        if (d)
                d->value = e->limits.max_original;
        e->limits.max_raised = false;
        e->limits.max_restoring = true;
}

static void resync_high(Tick *k) {
        Engine *e = k->e;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];

        if (!(s->has & SAMPLE_HAS_CGROUP))
                return;
        if (!e->limits.initial_known) {
                e->limits.high_initial = s->memory_high;
                e->limits.initial_known = true;
        }
        /* Ours: the value memgov set, or, within settle of the write, the one it replaced (a read
         * from before the write landed). Any other value is someone else's, however soon after our
         * write: a throttle that steps more often than settle would otherwise never see it, and
         * write over it (measured on a real cgroup: a value set 16M under memgov's, overwritten by
         * memgov's next step 2 s later, with settle at 3 s). */
        bool ours = s->memory_high == e->limits.high_set ||
                    (s->memory_high == e->limits.high_before && k->now - e->limits.high_changed < k->p->settle);
        if (e->opts.simulate || !e->limits.high_known || ours || (s->pending & (1u << ACTION_SET_HIGH))) {
                e->limits.high_mismatch = 0;
                return;
        }
        /* Twice in a row: someone else set it. Adopt, do not fight; the throttle writes no
         * memory.high in between (high_held), or its next step would hide the value it is to judge. */
        if (++e->limits.high_mismatch < 2)
                return;
        format_bytes_change(a, b, e->limits.high_set, s->memory_high);
        emit_code(k, DECISION_EVENT, EVENT_HIGH_ADOPTED, "memory.high is %s, not the %s memgov set: changed by someone else, adopted "
             "as the calm value", b, a);
        e->limits.high_ceiling = s->memory_high;
        e->limits.ceiling_known = true;
        e->limits.high_set = s->memory_high;
        e->limits.high_changed = k->now;
        e->limits.high_mismatch = 0;
}

/* The highest memory.high memgov throttles from: what someone else set (adopted), else the
 * budget minus calm-headroom, else the budget. */
uint64_t high_top(const Tick *k) {
        const Engine *e = k->e;
        if (e->limits.ceiling_known)
                return MIN(e->limits.high_ceiling, k->budget);
        if (k->p->calm_headroom > 0)
                return k->budget - apply_bp(k->budget, k->p->calm_headroom);
        return k->budget;
}

/* The server shrinks its buffer pool only as fast as its threads run: over memory.high, every
 * allocation in the cgroup pays, and a resize that takes a second took 16 on a real server while
 * the growth went on. Before a step down, memory.high is raised to the working set plus the margin
 * (where throttling would put it now) if it is below that, and plan_high() does not lower it
 * before the step is judged. The raise goes out on the limits' action thread as the step goes out
 * on the server's: a write through systemd of milliseconds against a resize of seconds, not an
 * order the threads keep. */
/* memory.high as memgov last set it, else as the sample shows it. */
uint64_t high_now(const Tick *k) {
        return k->e->limits.high_known ? k->e->limits.high_set : k->s->memory_high;
}

/* memory.high not to be throttled now: a value unlike memgov's own was seen, and the next sample
 * tells whether someone else set it (resync_high). Moving it out of the way of a stop or a pool
 * step is not held: those cannot wait a sample. */
bool high_held(const Tick *k) {
        return k->e->limits.high_mismatch > 0;
}

/* memory.high may be moved out of the way: memgov's to write, and no write of it failing. */
static bool high_movable(const Tick *k) {
        return limits_writable(k->s) && k->p->step[LEVEL_THROTTLE].enabled && !k->e->act[ACTION_SET_HIGH].spent &&
               step_available(k, LEVEL_THROTTLE);
}

/* A memory.high decision taken: its values, and what memgov now knows memory.high to be. */
static void note_high_set(Tick *k, Decision *d, uint64_t cur, uint64_t next) {
        if (d) {
                d->value = next;
                d->old_value = cur;
        }
        k->e->limits.high_before = cur;
        k->e->limits.high_set = next;
        k->e->limits.high_known = true;
        k->e->limits.high_changed = k->now;
}

void high_out_of_the_way_of_pool(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];

        if (!high_movable(k))
                return;
        uint64_t cur = high_now(k);
        uint64_t want = page_round(e, CLAMP(k->ws + apply_bp(k->budget, p->throttle_margin),
                                            apply_bp(k->budget, p->throttle_floor), high_top(k)));
        if (cur == SIZE_UNLIMITED || cur >= want)
                return;
        Decision *d = emit_action(k, ACTION_SET_HIGH,
                                  "%s: memory.high %s -> %s (out of the way of the buffer pool's shrink: over "
                                  "memory.high, the server would be slow to carry it out)",
                                  ctx(k), format_bytes_change(a, b, cur, want), b);
        note_high_set(k, d, cur, want);
}

/* A server over memory.high is slowed at every allocation: one that stops at the limit (many
 * sessions to end, each in the middle of its queries) crawls through its shutdown for minutes.
 * memory.max still bounds it; memory.high goes to max until the server is back, and plan_high()
 * leaves it alone meanwhile.
 * Seen: 376M against memory.high 373M, a shutdown not through after 10 minutes. */
static void high_out_of_the_way_of_stop(Tick *k) {
        char a[FORMAT_BYTES_MAX];

        if (!high_movable(k))
                return;
        uint64_t cur = high_now(k);
        if (cur == SIZE_UNLIMITED)
                return;
        Decision *d = emit_action(k, ACTION_SET_HIGH,
                                  "%s: memory.high %s -> max (out of the way of the stop: over memory.high, the "
                                  "server would crawl through its shutdown)",
                                  ctx(k), format_bytes(a, cur));
        note_high_set(k, d, cur, SIZE_UNLIMITED);
}

/* The server pressing on a memory.high below restart.at: the throttle holds it there, and it goes
 * no higher without stalling. With the restart held back, restart.at (where the emergency reset
 * comes) is out of reach meanwhile, and the stall is all there is until PSI full brings the
 * throttle's guard.
 * Seen: 24 sessions at 8G/h stalled 23 s at memory.high 330M (84%) before PSI full reached the guard. */
bool pressing_on_high(const Tick *k) {
        uint64_t high = k->s->memory_high;

        if (!(k->s->has & SAMPLE_HAS_CGROUP) || high == SIZE_UNLIMITED || high >= k->budget)
                return false;
        return k->ws + apply_bp(k->budget, k->p->throttle_margin) / 2 >= high;
}

/* memory.max raised above the sample's for a while (a restart's stop, admission taking effect):
 * the decision carries both values, and the engine remembers what to put back. */
static void note_max_raised(Tick *k, Decision *d, uint64_t from, uint64_t raised) {
        Engine *e = k->e;
        if (d) {
                d->value = raised;
                d->old_value = from;
        }
        e->limits.max_original = from;
        e->limits.max_raised_to = raised;
        e->limits.max_raised_prev = 0;
        e->limits.max_raised = true;
        e->limits.max_restoring = false;
        e->limits.max_raised_at = k->now;
}

/* memory.max raised by RAISE from FROM, never past host RAM minus budget.host-reserve where the
 * sample knows host RAM: the raised value (FROM: no room), and *ret_bound set when the host
 * bounded it. */
static uint64_t raise_within_host(const Tick *k, uint64_t from, uint64_t raise, const char **ret_bound) {
        if (k->s->has & SAMPLE_HAS_HOST) {
                uint64_t top = host_top(k->p, k->s);
                if (from >= top)
                        return from;
                if (top - from < raise) {
                        raise = top - from;
                        *ret_bound = "host RAM minus budget.host-reserve";
                }
        }
        uint64_t raised = page_round(k->e, from + raise);
        return raised > from ? raised : from;
}

/* While admission takes effect (the sessions already admitted still allocate), memory.max is
 * raised by admit.max-raise of the budget for admit.raise-for: never past host RAM minus
 * budget.host-reserve, only where memory.max is memgov's to write, and not over a raise that is
 * in place already (a restart's). Beside another write of memory.max under way (a restore of the
 * last raise), the lowering goes on without it: a raise that lands late serves nothing. */
void limits_raise_for_admission(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        if (p->admit_max_raise == 0 || !limits_writable(s) || s->memory_max == SIZE_UNLIMITED || e->limits.max_raised ||
            e->act[ACTION_SET_MAX].spent || max_write_outstanding(k))
                return;
        const char *bound = "admit.max-raise";
        uint64_t raised = raise_within_host(k, s->memory_max, apply_bp(k->budget, p->admit_max_raise), &bound);
        if (raised <= s->memory_max)
                return; /* no room left above memory.max on this host */
        Decision *d = emit_action(k, ACTION_SET_MAX,
                                  "raise memory.max %s -> %s for %s while admission takes effect (%s)",
                                  format_bytes_change(a, b, s->memory_max, raised), b,
                                  format_timespan(t, p->admit_raise_for), bound);
        note_max_raised(k, d, s->memory_max, raised);
        e->limits.max_by_admit = true;
}

/* The raise for admission lasts admit.raise-for; a write of memory.max that failed (this restore,
 * or one after a restart) is not tried again before its backoff is over. */
static void admit_max_back(Tick *k) {
        Engine *e = k->e;
        char t[FORMAT_TIMESPAN_MAX];

        if (!e->limits.max_raised || !e->limits.max_by_admit || restart_pending(e) || k->now - e->limits.max_raised_at < k->p->admit_raise_for ||
            e->act[ACTION_SET_MAX].spent || max_write_outstanding(k))
                return;
        char why[64];
        snprintf(why, sizeof(why), " (admit.raise-for %s is over)", format_timespan(t, k->p->admit_raise_for));
        restore_max(k, why);
        e->limits.max_by_admit = false;
}

/* While the server stops gracefully, memory.max is raised again by restart.max-raise each time the
 * server comes within half of that of the raised value, up to restart.max-raise-total in all and
 * never past host RAM minus budget.host-reserve. The storm's sessions go on allocating until
 * the server's shutdown ends them.
 * Seen with one raise: 372M to the raised 403M within 5 s of the decision, then the OOM kill. */
static void stop_raise_more(Tick *k) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX], o[FORMAT_BYTES_MAX], t[FORMAT_PERCENT_MAX];

        if (!restart_pending(e) || !e->limits.max_raised || e->limits.max_restoring || e->limits.max_by_admit || p->max_raise == 0 ||
            !limits_writable(s) || !(s->has & SAMPLE_HAS_CGROUP) || e->act[ACTION_SET_MAX].spent ||
            max_write_outstanding(k))
                return;
        /* The working set, as everywhere else: page cache (the stop's own writes, a restart's
         * reads) fills any room under memory.max and is reclaimed before an OOM kill. */
        uint64_t step = apply_bp(k->budget, p->max_raise);
        if (k->ws + step / 2 < e->limits.max_raised_to)
                return;
        uint64_t total = apply_bp(k->budget, p->max_raise_total);
        uint64_t so_far = e->limits.max_raised_to > e->limits.max_original ? e->limits.max_raised_to - e->limits.max_original : 0;
        if (so_far >= total)
                return;
        const char *bound = "restart.max-raise";
        if (total - so_far < step) {
                step = total - so_far;
                bound = "restart.max-raise-total";
        }
        uint64_t raised = raise_within_host(k, e->limits.max_raised_to, step, &bound);
        if (raised <= e->limits.max_raised_to)
                return; /* no room left on this host */
        Decision *d = emit_action(k, ACTION_SET_MAX,
                                  "raise memory.max %s -> %s: the stopping server's working set is %s (%s; %s of the budget "
                                  "over %s at most)",
                                  format_bytes_change(a, b, e->limits.max_raised_to, raised), b,
                                  format_bytes(c, k->ws), bound, format_bp(t, p->max_raise_total),
                                  format_bytes(o, e->limits.max_original));
        if (d) {
                d->value = raised;
                d->old_value = e->limits.max_raised_to;
        }
        e->limits.max_raised_prev = e->limits.max_raised_to;
        e->limits.max_raised_to = raised;
        e->limits.max_raised_at = k->now;
}

/* memory.max still raised, with no restart under way and not for admission: a restore that
 * failed, or one the restart's end could not decide within the backoff of a raise that failed
 * (a raise again during the stop): put it back. */
static void retry_max_restore(Tick *k) {
        Engine *e = k->e;

        if (!e->limits.max_raised || restart_pending(e) || e->act[ACTION_SET_MAX].spent || (e->limits.max_by_admit && !e->limits.max_restoring) ||
            max_write_outstanding(k))
                return;
        restore_max(k, e->limits.max_restoring ? " (the last restore failed)" : " after the restart");
}

/* A memory.high decided by the throttle: emitted with its reason, and what memgov knows of it. */
void high_set(Tick *k, uint64_t cur, uint64_t next, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        Decision *d = emitv(k, DECISION_ACTION, fmt, ap);
        va_end(ap);
        if (d)
                d->action = ACTION_SET_HIGH;
        note_high_set(k, d, cur, next);
}

bool limits_budget(const Tick *k, uint64_t *ret) {
        /* Our own raise of memory.max does not move the budget, nor does it while its restore is
         * still on its way (the sample shows the raised value until the write lands).
         * Seen otherwise: a calm memory.high 3% over the raised value after a restart. */
        const Engine *e = k->e;
        if (e->limits.max_raised || (e->limits.max_restoring && (k->s->pending & (1u << ACTION_SET_MAX)))) {
                *ret = e->limits.max_original;
                return true;
        }
        return false;
}

void limits_observe(Tick *k) {
        retry_max_restore(k);
        admit_max_back(k);
        stop_raise_more(k);
        resync_high(k);
}

void limits_failed(Tick *k, ActionKind a) {
        Engine *e = k->e;
        if (a == ACTION_SET_HIGH)
                /* What is in memory.high now is not known: re-plan from the sample. */
                e->limits.high_known = false;
        else if (a == ACTION_SET_MAX) {
                /* A raise that failed left memory.max as it was; a restore that failed left it
                 * raised: it is put back once the backoff is over. A restore decided in this very
                 * tick is not the one that failed. */
                if (!decided_this_tick(k, ACTION_SET_MAX)) {
                        if (!e->limits.max_restoring && e->limits.max_raised_prev > 0) {
                                /* A raise again during a stop: the one before it holds. */
                                e->limits.max_raised_to = e->limits.max_raised_prev;
                                e->limits.max_raised_prev = 0;
                        } else
                                e->limits.max_raised = e->limits.max_restoring;
                }
        }
}

void limits_new_process(Tick *k) {
        Engine *e = k->e;
        /* A raise again still under way: put back once it is done (retry_max_restore). */
        if (e->limits.max_raised && !e->act[ACTION_SET_MAX].spent && !max_write_outstanding(k))
                restore_max(k, " after the restart");
}

void limits_restart_ended(Tick *k) {
        /* A raise again still under way, or one that failed and is within its backoff: put back
         * once it is done, or over (retry_max_restore). */
        if (k->e->limits.max_raised && !k->e->act[ACTION_SET_MAX].spent && !max_write_outstanding(k))
                restore_max(k, "");
}

void limits_simulate(Engine *e) {
        /* What a dry run assumed it wrote was never written: read memory.high afresh, and forget
         * a memory.max raise that only was assumed. */
        e->limits.high_known = false;
        e->limits.high_mismatch = 0;
        e->limits.max_raised = false;
        e->limits.max_by_admit = false;
}

unsigned limits_leave(const Engine *e, const char *why, Decision *ret, unsigned max) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        unsigned n = 0;

        /* memory.high: back to what someone else set (adopted), else to what was there before our
         * first write. Throttling nobody manages would only stall the server. */
        if (e->limits.high_known && (e->limits.ceiling_known || e->limits.initial_known) && n < max) {
                uint64_t back = e->limits.ceiling_known ? e->limits.high_ceiling : e->limits.high_initial;
                if (back != e->limits.high_set) {
                        ret[n] = (Decision) { .kind = DECISION_ACTION, .action = ACTION_SET_HIGH, .level = e->level, .value = back,
                                              .old_value = e->limits.high_set };
                        snprintf(ret[n].reason, sizeof(ret[n].reason), "%s: memory.high %s -> %s (%s)", why,
                                 format_bytes_change(a, b, e->limits.high_set, back), b,
                                 e->limits.ceiling_known ? "the value set by someone else" : "as it was found");
                        n++;
                }
        }
        if (e->limits.max_raised && n < max) {
                ret[n] = (Decision) { .kind = DECISION_ACTION, .action = ACTION_SET_MAX, .level = e->level,
                                      .value = e->limits.max_original };
                snprintf(ret[n].reason, sizeof(ret[n].reason), "%s: restore memory.max to %s", why,
                         format_bytes(a, e->limits.max_original));
                n++;
        }
        return n;
}

bool limits_before_stop(Tick *k, const char **ret_note) {
        Engine *e = k->e;
        const Policy *p = k->p;
        const Sample *s = k->s;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];

        *ret_note = "";
        bool raise_wanted = p->max_raise > 0 && limits_writable(s) && s->memory_max != SIZE_UNLIMITED && !e->limits.max_raised;
        /* Not within the backoff of a write of memory.max that failed: the restart goes on without. */
        if (raise_wanted && e->act[ACTION_SET_MAX].spent) {
                *ret_note = ", memory.max not raised: its last write failed, not tried again before its backoff is over";
                raise_wanted = false;
        }
        /* The raise waits for a write of memory.max under way (a restore of admission's raise, or
         * a retry of one that failed), and the restart with it: the restart would wait for it all
         * the same (its thread starts after the limits decided before it), and the sample shows
         * the value that write replaces, not the one to raise from and put back. */
        if (raise_wanted && max_write_outstanding(k)) {
                hold(k, ACTION_RESTART, HOLD_MAX_WRITE,
                     "%s: restart waits for the write of memory.max under way, to raise it from there", ctx(k));
                return false;
        }
        if (raise_wanted) {
                /* Raised from what it is, and put back to exactly that: the budget may be a
                 * budget.size below memory.max. */
                const char *bound = "restart.max-raise";
                uint64_t raise = MIN(apply_bp(k->budget, p->max_raise), apply_bp(k->budget, p->max_raise_total));
                uint64_t from = s->memory_max;
                uint64_t raised = raise_within_host(k, from, raise, &bound);
                if (raised > from) {
                        Decision *d = emit_action(k, ACTION_SET_MAX, "raise memory.max %s -> %s while the server stops (%s)",
                                                  format_bytes_change(a, b, from, raised), b, bound);
                        note_max_raised(k, d, from, raised);
                } else if (raise > 0)
                        *ret_note = ", memory.max not raised: no room above it on this host (budget.host-reserve)";
        }
        high_out_of_the_way_of_stop(k);
        /* A raise for admission still in place goes on as the restart's: restored once the
         * server is back, not when admit.raise-for is over. */
        e->limits.max_by_admit = false;
        return true;
}

usec_t limits_high_ready_at(const Engine *e, const Policy *p) {
        /* The throttle: lowered again only a throttle cooldown after memory.high last changed. */
        return e->limits.high_known ? e->limits.high_changed + p->step[LEVEL_THROTTLE].cooldown : 0;
}
