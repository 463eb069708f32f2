/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "hooks.h"
#include "memgov/actuator.h"
#include "put-back.h"
#include "restart.h"
#include "memgov/clock.h"
#include "memgov/sql.h"
#include "memgov/units.h"

static int read_dirty(void *userdata, unsigned n, char **row) {
        if (n >= 2 && row[1])
                *(long long *) userdata = atoll(row[1]);
        return 0;
}

static int read_value(void *userdata, unsigned n, char **row) {
        if (n >= 1 && row[0])
                snprintf(userdata, 32, "%s", row[0]);
        return 0;
}

/* "90.000000" -> 9000: innodb_max_dirty_pages_pct in hundredths, as the state file keeps it. */
static bool parse_hundredths(const char *s, uint64_t *ret) {
        char *end;
        unsigned long long whole = strtoull(s, &end, 10), frac = 0;
        if (end == s || (*end && *end != '.'))
                return false;
        if (*end == '.') {
                const char *d = end + 1;
                frac = (unsigned long long) ((d[0] >= '0' && d[0] <= '9' ? d[0] - '0' : 0) * 10 +
                                             (d[0] >= '0' && d[0] <= '9' && d[1] >= '0' && d[1] <= '9' ? d[1] - '0' : 0));
        }
        *ret = whole * 100 + frac;
        return true;
}

/* Asks InnoDB to flush its dirty pages before the stop, so that the shutdown is short. The
 * setting it had goes into saved (32 bytes), for when the restart does not happen. */
static void preflush(const ActionContext *c, char *note, size_t size, char *saved) {
        char why[512], t[FORMAT_TIMESPAN_MAX];
        _cleanup_sql_ SqlConn conn = {};
        long long first = -1, dirty = -1;

        if (sql_connect(c->policy, c->target->pid, &conn, why, sizeof(why)) < 0) {
                snprintf(note, size, "pre-flush skipped (%s)", why);
                return;
        }
        const char *q = "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'";
        (void) sql_run(&conn, q, read_dirty, &first, why, sizeof(why));
        if (c->dry_run) {
                snprintf(note, size, "would flush %lld dirty pages first", first);
                return;
        }
        /* Never a setting that could not be put back. */
        char old[32] = "";
        if (sql_run(&conn, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct", read_value, old, why, sizeof(why)) < 0 ||
            !old[0] || strspn(old, "0123456789.") != strlen(old)) {
                snprintf(note, size, "pre-flush skipped (innodb_max_dirty_pages_pct unreadable%s%s)",
                         old[0] ? "" : ": ", old[0] ? "" : why);
                return;
        }
        /* Recorded before it is made: a memgov that dies while it waits for the flush leaves the
         * next one what to put back (a server left at 0 flushes as if it were about to stop). */
        uint64_t found;
        if (parse_hundredths(old, &found))
                (void) state_file_change(c->state, CHANGE_DIRTY_PAGES_PCT, c->target->pid, c->target->starttime, found, 0);
        if (sql_run(&conn, "SET GLOBAL innodb_max_dirty_pages_pct = 0", NULL, NULL, why, sizeof(why)) < 0) {
                snprintf(note, size, "pre-flush refused (%s)", why);
                (void) state_file_forget(c->state, CHANGE_DIRTY_PAGES_PCT);
                return;
        }
        snprintf(saved, 32, "%s", old);
        usec_t start = now_clock(CLOCK_MONOTONIC);
        dirty = first;
        while (dirty > 100 && now_clock(CLOCK_MONOTONIC) - start < c->policy->preflush_timeout) {
                sleep_usec(USEC_PER_SEC);
                if (sql_run(&conn, q, read_dirty, &dirty, why, sizeof(why)) < 0)
                        break;
        }
        snprintf(note, size, "flushed dirty pages %lld -> %lld in %s", first, dirty,
                 format_timespan(t, now_clock(CLOCK_MONOTONIC) - start));
}

/* The restart did not happen: the server keeps running, and must not keep flushing as if it
 * were about to stop. */
static void preflush_undo(const ActionContext *c, const char *saved, char *note, size_t size) {
        char why[512], q[96];
        _cleanup_sql_ SqlConn conn = {};

        int r = sql_connect(c->policy, c->target->pid, &conn, why, sizeof(why));
        if (r >= 0) {
                snprintf(q, sizeof(q), "SET GLOBAL innodb_max_dirty_pages_pct = %s", saved);
                r = sql_run(&conn, q, NULL, NULL, why, sizeof(why));
        }
        if (r < 0)
                snprintf(note, size, "; innodb_max_dirty_pages_pct left at 0, not put back to %s (%s)", saved, why);
        else {
                snprintf(note, size, "; innodb_max_dirty_pages_pct put back to %s", saved);
                (void) state_file_forget(c->state, CHANGE_DIRTY_PAGES_PCT);
        }
}

typedef struct JobWait {
        const char *path;
        bool done;
        char result[32];
} JobWait;

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        JobWait *w = userdata;
        uint32_t id;
        const char *path, *unit, *result;
        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (w->path && streq(path, w->path)) {
                w->done = true;
                snprintf(w->result, sizeof(w->result), "%s", result);
        }
        return 0;
}

/* RestartUnit, then follow the job until systemd says how it ended. */
static int restart_unit(const char *unit, usec_t timeout, char *why, size_t why_size) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        sd_bus_slot *slot = NULL;
        sd_bus *bus = NULL;
        JobWait w = {};
        char path[256];
        int r;

        r = sd_bus_default_system(&bus);
        if (r < 0) {
                snprintf(why, why_size, "cannot connect to systemd: %s", strerror(-r));
                return r;
        }
        /* Subscribe and match before the call: the job can end before the reply is read. */
        r = sd_bus_match_signal(bus, &slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                "org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed, &w);
        if (r >= 0)
                r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "Subscribe", &error, NULL, "");
        if (r >= 0)
                r = sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "RestartUnit", &error, &reply, "ss", unit,
                                       "replace");
        const char *job;
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &job);
        if (r < 0) {
                snprintf(why, why_size, "RestartUnit(%s): %s", unit, error.message ? error.message : strerror(-r));
                goto out;
        }
        snprintf(path, sizeof(path), "%s", job);
        w.path = path;
        usec_t deadline = now_clock(CLOCK_MONOTONIC) + timeout;
        while (!w.done) {
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (now >= deadline) {
                        snprintf(why, why_size, "the restart of %s did not finish within %s", unit,
                                 format_timespan((char[FORMAT_TIMESPAN_MAX]) {}, timeout));
                        r = -ETIMEDOUT;
                        goto out;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0) {
                        snprintf(why, why_size, "following the restart job of %s: %s", unit, strerror(-r));
                        goto out;
                }
                if (r == 0)
                        (void) sd_bus_wait(bus, deadline - now);
        }
        if (!streq(w.result, "done")) {
                snprintf(why, why_size, "the restart of %s ended with \"%s\"", unit, w.result);
                r = -EIO;
                goto out;
        }
        r = 0;
out:
        sd_bus_slot_unref(slot);
        sd_bus_unref(bus);
        return r;
}

/* SIGTERM through a pidfd, to the very process we know (not a reused pid), then wait for it. */
static int terminate(const ActionTarget *t, bool dry_run, usec_t timeout, char *why, size_t why_size) {
        _cleanup_close_ int pidfd = pidfd_open(t->pid, 0);
        if (pidfd < 0) {
                int r = negative_errno();
                snprintf(why, why_size, "process %d: %s", (int) t->pid, strerror(-r));
                return r;
        }
        if (action_target_check(t) < 0) {
                snprintf(why, why_size, "process %d is not the server any more", (int) t->pid);
                return -ESRCH;
        }
        if (dry_run)
                return 0;
        if (pidfd_send_signal(pidfd, SIGTERM, NULL, 0) < 0) {
                int r = negative_errno();
                snprintf(why, why_size, "SIGTERM to %d: %s", (int) t->pid, strerror(-r));
                return r;
        }
        /* Never SIGKILL: a clean InnoDB shutdown may take minutes; wait for it. */
        if (!pidfd_wait_exit(pidfd, timeout)) {
                snprintf(why, why_size, "process %d is still shutting down after %s (left to finish)", (int) t->pid,
                         format_timespan((char[FORMAT_TIMESPAN_MAX]) {}, timeout));
                return -ETIMEDOUT;
        }
        return 0;
}

static void run_hook(const ActionContext *c, const Decision *d, const char *event, const char *command, char *note,
                     size_t size) {
        char why[512], out[256];
        HookContext h = {
                .event = event,
                .reason = d->reason,
                .target = c->target->description,
                .level = level_to_string(d->level),
                .working_set = d->working_set,
                .budget = d->budget,
        };
        int r = hook_run(command, &h, c->policy->hook_timeout, c->dry_run, out, sizeof(out), why, sizeof(why));
        if (r < 0)
                snprintf(note, size, "; %s failed: %s", event, why);
        else
                snprintf(note, size, "; %s %s", event, c->dry_run ? out : "done");
}

int restart_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        assert(c);
        assert(d);
        assert(ret);
        const ActionTarget *t = c->target;
        const Policy *p = c->policy;
        char flush[256] = "", pre[600] = "", post[600] = "", undo[600] = "", saved[32] = "", why[512],
             tm[FORMAT_TIMESPAN_MAX];
        bool unit = t->kind == TARGET_UNIT && t->unit[0];
        int r;

        if (!unit && t->pid <= 0)
                return action_fail(ret, -ESRCH, "restart: no server process in %s", t->description);
        put_back_inherited_kind(c, CHANGE_DIRTY_PAGES_PCT);
        if (d->restart.preflush)
                preflush(c, flush, sizeof(flush), saved);
        if (p->pre_hook[0])
                run_hook(c, d, "pre-restart", p->pre_hook, pre, sizeof(pre));

        usec_t start = now_clock(CLOCK_MONOTONIC);
        if (unit) {
                if (c->dry_run)
                        r = 0;
                else
                        r = restart_unit(t->unit, p->stop_timeout, why, sizeof(why));
        } else
                r = terminate(t, c->dry_run, p->stop_timeout, why, sizeof(why));
        usec_t took = now_clock(CLOCK_MONOTONIC) - start;

        if (r >= 0 && p->post_hook[0])
                run_hook(c, d, "post-restart", p->post_hook, post, sizeof(post));
        if (r < 0 && saved[0])
                preflush_undo(c, saved, undo, sizeof(undo));
        else if (r >= 0 && saved[0] && !c->dry_run)
                /* The server process it was set on is gone: the new one starts at its configuration. */
                (void) state_file_forget(c->state, CHANGE_DIRTY_PAGES_PCT);

        if (r < 0)
                return action_fail(ret, r, "restart: %s%s%s%s%s", why, flush[0] ? "; " : "", flush, pre, undo);
        if (c->dry_run)
                snprintf(ret->detail, sizeof(ret->detail), "would %s%s%s%s%s%s%s",
                         unit ? "restart " : "send SIGTERM to ", unit ? t->unit : t->description,
                         unit ? " through systemd (RestartUnit)" : " through a pidfd", flush[0] ? "; " : "", flush, pre,
                         post);
        else
                snprintf(ret->detail, sizeof(ret->detail), "%s %s %s in %s%s%s%s%s", unit ? "restarted" : "stopped",
                         unit ? t->unit : t->description, unit ? "through systemd" : "with SIGTERM",
                         format_timespan(tm, took), flush[0] ? "; " : "", flush, pre, post);
        return r;
}
