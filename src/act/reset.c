/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "memgov/actuator.h"
#include "memgov/clock.h"
#include "memgov/macro.h"
#include "reset.h"
#include "session-end.h"
#include "memgov/session-memory.h"
#include "memgov/sessions.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/units.h"
#include "trim.h"

/* The sessions as the last listing of this server process saw them, for the emergency reset's
 * choice (session_not_growing; with none, it looks twice: RESET_SECOND_LOOK). Only the server's
 * action thread resets. */
static struct {
        pid_t pid;
        uint64_t starttime;
        usec_t at;
        unsigned n;
        SessionSeen s[SESSIONS_MAX];
} last_listing;

static void remember_listing(const ActionTarget *t, const Session *sessions, unsigned n) {
        last_listing.pid = t->pid;
        last_listing.starttime = t->starttime;
        last_listing.at = now_clock(CLOCK_MONOTONIC);
        last_listing.n = MIN(n, (unsigned) SESSIONS_MAX);
        for (unsigned i = 0; i < last_listing.n; i++)
                last_listing.s[i] = (SessionSeen) { .id = sessions[i].id, .memory = sessions[i].memory };
}

/* How long each of the reset's steps took, said first in its result: on a server swamped by a
 * storm (MySQL 9.7, 100 sessions on one emulated CPU) a reset took 10-34 s from its decision to
 * its result, and the steps say where. */
typedef struct ResetTimes {
        usec_t start, listed, again_from, listed_again, ended, trimmed;
} ResetTimes;

static void reset_times_say(StrBuf *b, const ResetTimes *rt) {
        char a[FORMAT_TIMESPAN_MAX], l[FORMAT_TIMESPAN_MAX], g[FORMAT_TIMESPAN_MAX];
        usec_t last = rt->trimmed ? rt->trimmed : rt->ended ? rt->ended : rt->listed_again ? rt->listed_again : rt->listed;
        strbuf_printf(b, " in %s (listing %s", format_timespan(a, last - rt->start), format_timespan(l, rt->listed - rt->start));
        if (rt->listed_again)
                strbuf_printf(b, "; %s later, listing again %s", format_timespan(g, rt->again_from - rt->listed),
                              format_timespan(a, rt->listed_again - rt->again_from));
        if (rt->ended)
                strbuf_printf(b, "; ending %s", format_timespan(a, rt->ended - (rt->listed_again ? rt->listed_again : rt->listed)));
        if (rt->trimmed)
                strbuf_printf(b, "; trim %s", format_timespan(a, rt->trimmed - rt->ended));
        strbuf_printf(b, ")");
}

static int reset_by_sql(const ActionContext *c, const Decision *d, ActionResult *ret) {
        const ActionTarget *t = c->target;
        char why[512], m[FORMAT_BYTES_MAX], ti[FORMAT_TIMESPAN_MAX];
        _cleanup_sql_ SqlConn conn = {};
        ResetTimes rt = { .start = now_clock(CLOCK_MONOTONIC) };
        int r;

        r = sql_connect(c->policy, t->pid, &conn, why, sizeof(why));
        if (r < 0)
                return action_sql_connect_failed(ret, r, "reset", why);
        _cleanup_free_ Session *sessions = calloc(SESSIONS_MAX, sizeof(Session));
        unsigned n = 0;
        if (!sessions)
                return -ENOMEM;
        r = sessions_list(&conn, true, sessions, &n, why, sizeof(why));
        if (r < 0)
                return action_fail(ret, r, "reset: listing the sessions: %s", why);
        rt.listed = now_clock(CLOCK_MONOTONIC);

        /* MySQL measures a session's memory only with performance_schema's memory instruments
         * on: without them every session reads as holding nothing, and "none holds enough"
         * would hide why. */
        SessionMemory measured;
        char unmeasured[384];
        r = session_memory_check(&conn, &measured, unmeasured, sizeof(unmeasured));
        if (r < 0)
                measured = SESSION_MEMORY_MEASURED; /* not known: the figures speak for themselves */
        if (measured == SESSION_MEMORY_OFF)
                return action_refuse(ret, -ENODATA, "reset: cannot choose among the %u sessions: %s", n, unmeasured);

        /* The emergency reset ends what grows: against the last listing of this process, else
         * against a second look RESET_SECOND_LOOK after this one. */
        bool seen = last_listing.n > 0 && last_listing.pid == t->pid && last_listing.starttime == t->starttime;
        if (d->reset.growing_only && !seen) {
                remember_listing(t, sessions, n);
                sleep_usec(RESET_SECOND_LOOK);
                rt.again_from = now_clock(CLOCK_MONOTONIC);
                r = sessions_list(&conn, true, sessions, &n, why, sizeof(why));
                if (r < 0)
                        return action_fail(ret, r, "reset: listing the sessions again: %s", why);
                rt.listed_again = now_clock(CLOCK_MONOTONIC);
                seen = true;
        }
        SessionSelect q = {
                .max = d->reset.max,
                .min_memory = d->reset.min_memory,
                .min_idle = d->reset.min_idle,
                .allow_write_trx = d->reset.in_trx,
                .newest_first = d->reset.newest_first,
                .own_id = conn.own_id,
                .policy = c->policy,
                .growing_only = d->reset.growing_only && seen,
                .still_enough = d->reset.still_enough,
                .seen = last_listing.s,
                .n_seen = seen ? last_listing.n : 0,
        };
        q.seen_ago = now_clock(CLOCK_MONOTONIC) - last_listing.at;
        if (q.newest_first)
                q.newcomers_from = sessions_newcomers_from(sessions, n, &q, d->reset.newcomers);
        unsigned chosen[1000];
        unsigned k = sessions_select(sessions, n, &q, chosen);
        unsigned passed = sessions_passed_over(sessions, n, &q);
        char since[FORMAT_TIMESPAN_MAX], passed_why[160] = "";
        format_timespan(since, q.seen_ago);
        if (passed > 0)
                snprintf(passed_why, sizeof(passed_why), "; %u more holding %s or more passed over: as much as "
                         "%s before (not what grows)", passed, format_bytes(m, d->reset.min_memory), since);
        remember_listing(t, sessions, n);
        if (k == 0) {
                char largest[FORMAT_BYTES_MAX];
                ret->found_nothing = true;
                format_bytes(largest, sessions_largest(sessions, n, &q));
                const char *partial = measured == SESSION_MEMORY_PARTIAL ? unmeasured : "";
                const char *sep = *partial ? "; " : "";
                /* Explained: -ENOENT is no file that was missing. Every session that may be reset
                 * and holds enough passed over (the largest is one of them): none grows. */
                if (passed > 0)
                        return action_refuse(ret, -ENOENT,
                                             "reset: of the %u sessions, the %u holding %s or more that may be "
                                             "reset (the largest %s) held as much %s before: passed over (not what "
                                             "grows)%s%s",
                                             n, passed, format_bytes(m, d->reset.min_memory), largest, since, sep,
                                             partial);
                return action_refuse(ret, -ENOENT,
                                     "reset: none of the %u sessions holds %s or more and may be reset (the largest "
                                     "that may: %s)%s%s", n, format_bytes(m, d->reset.min_memory), largest, sep,
                                     partial);
        }

        /* Every session that may be reset chosen, fewer than allowed: the rest are smaller (the
         * engine tries again as the server grows, not after the cooldown). */
        ret->found_fewer = k < d->reset.max;

        /* Who, and why them: the log and status say it. What was done comes first, the sessions
         * last: sixteen of them fill the detail (seen cut within the fourteenth, the count ended and
         * the RSS after it lost). */
        char who[sizeof(ret->detail)];
        StrBuf w;
        strbuf_init(&w, who, sizeof(who));
        for (unsigned i = 0; i < k; i++) {
                const Session *s = &sessions[chosen[i]];
                strbuf_printf(&w, " #%" PRIu64 " %s@%s (%s %s, %s)", s->id, s->user, s->host,
                              session_is_idle(s, &q) ? "idle" : s->command, format_timespan(ti, s->time_s * USEC_PER_SEC),
                              format_bytes(m, s->memory));
        }
        StrBuf detail;
        strbuf_init(&detail, ret->detail, sizeof(ret->detail));
        strbuf_printf(&detail, "%s %u of %u session(s):", c->dry_run ? "would reset" : "reset", k, n);
        uint64_t rss_before = 0;
        bool rss_known = process_rss(t->pid, &rss_before) >= 0;
        if (c->dry_run) {
                reset_times_say(&detail, &rt);
                strbuf_printf(&detail, "%s; chosen:%s", passed_why, who);
                return 0;
        }
        unsigned killed = sessions_end(&conn, sessions, chosen, k);
        rt.ended = now_clock(CLOCK_MONOTONIC);
        sql_close(&conn); /* the kept session given back: the trim by SQL takes it */

        TrimReport tr;
        r = trim_run(c->policy, t->pid, t->starttime, 0, c->policy->trim_method, false, -1, &tr, why, sizeof(why));
        rt.trimmed = now_clock(CLOCK_MONOTONIC);
        uint64_t rss_after = 0;
        /* Both ends, or no figure: a server process gone meanwhile (a restart that did not wait
         * for this reset) has no RSS, and its whole RSS is no gain. */
        rss_known = rss_known && process_rss(t->pid, &rss_after) >= 0;
        ret->has_freed = rss_known;
        ret->freed = rss_known && rss_before > rss_after ? rss_before - rss_after : 0;
        reset_times_say(&detail, &rt);
        strbuf_printf(&detail, "; %u ended; %s%s", killed, r < 0 ? "trim failed: " : "trimmed", r < 0 ? why : "");
        if (rss_known)
                strbuf_printf(&detail, "; RSS %s -> %s", format_bytes_change(m, ti, rss_before, rss_after), ti);
        else
                strbuf_printf(&detail, "; RSS not measured (the server process is gone)");
        if (measured == SESSION_MEMORY_PARTIAL)
                strbuf_printf(&detail, "; %s", unmeasured);
        strbuf_printf(&detail, "%s; chosen:%s", passed_why, who);
        return killed > 0 ? 0 : -EIO;
}

int reset_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        assert(c);
        assert(d);
        assert(ret);
        const Policy *p = c->policy;
        char why[512], out[256];
        int r;

        switch (p->reset_method) {
        case RESET_SQL:
                return reset_by_sql(c, d, ret);
        case RESET_EXEC: {
                HookContext h = {
                        .event = "reset",
                        .reason = d->reason,
                        .target = c->target->description,
                        .level = level_to_string(d->level),
                        .working_set = d->working_set,
                        .budget = d->budget,
                        .max_sessions = d->reset.max,
                        .min_memory = d->reset.min_memory,
                        .min_idle = d->reset.min_idle,
                };
                r = hook_run(p->reset_exec, &h, p->hook_timeout, c->dry_run, out, sizeof(out), why, sizeof(why));
                if (r < 0)
                        return action_fail(ret, r, "reset: %s", why);
                /* "would ..." as the hook's dry run says it, or "ran CMD: its last line" */
                snprintf(ret->detail, sizeof(ret->detail), "reset: %s%s%s%s", c->dry_run ? "" : "ran ",
                         c->dry_run ? out : p->reset_exec, !c->dry_run && out[0] ? ": " : "", c->dry_run ? "" : out);
                return r;
        }
        case RESET_SIGNAL:
                r = signal_processes(p->reset_signal_process, p->reset_signal, c->target, c->dry_run, why, sizeof(why));
                if (r < 0)
                        return action_fail(ret, r, "reset: %s", why);
                snprintf(ret->detail, sizeof(ret->detail), "reset: %s signal %d to %d process(es) named %s in %s",
                         c->dry_run ? "would send" : "sent", p->reset_signal, r, p->reset_signal_process,
                         c->target->description);
                return 0;
        default:
                return -EINVAL;
        }
}
