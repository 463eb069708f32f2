/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "memgov/actuator.h"
#include "memgov/clock.h"
#include "memgov/fileio.h"
#include "memgov/parse-cgroup.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/units.h"
#include "memgov/pool-watch.h"
#include "pool.h"
#include "put-back.h"
#include "trim.h"

/* How the servers resize their buffer pool (SET GLOBAL innodb_buffer_pool_size = N):
 *
 * MariaDB 10.11.12+, 11.4.6+, 11.8.2+ (the buffer pool without chunks): the statement itself
 * resizes, and returns when it is done; a shrink that cannot move its pages fails with
 * "innodb_buffer_pool_size change aborted", and a KILL QUERY of the statement aborts it. The
 * size goes by 1 MiB (the variable's block size: other values are truncated down), up to the
 * read-only innodb_buffer_pool_size_max (a larger value leaves the size as it was, with warning
 * 1292). These servers have innodb_buffer_pool_size_max, and that is how they are told apart.
 * Innodb_buffer_pool_resize_status stays empty.
 *
 * MariaDB before those, and MySQL 5.7 to 9.x: the statement asks a background thread and returns
 * at once; Innodb_buffer_pool_resize_status follows it, and ends with "Completed resizing buffer
 * pool at ...", "Size did not change..." or "Resizing buffer pool failed...". MySQL 8.0.31+ also
 * has Innodb_buffer_pool_resize_status_code: 0 none or completed, 1-6 the stages, 7 failed. The
 * size is rounded up to a multiple of innodb_buffer_pool_chunk_size x innodb_buffer_pool_instances
 * (MariaDB 10.5+ has a single instance whatever the setting); MySQL also refuses a size under 1G
 * when innodb_buffer_pool_instances > 1, with a warning. A resize under way refuses another
 * (MariaDB with an error, MySQL with a warning).
 *
 * Sizes here are multiples of that unit, so that no server rounds them: a floor rounded up to
 * it, a step down rounded down to it. */

#define POOL_RESIZE_TIMEOUT_DEFAULT (5 * USEC_PER_MINUTE)
#define MIB                         (UINT64_C(1) << 20)
#define GIB                         (UINT64_C(1) << 30)

typedef struct PoolFacts {
        bool have_size, have_chunk, have_instances, have_max, have_auto_min, large_pages;
        uint64_t size, chunk, instances, size_max, auto_min;
} PoolFacts;

typedef struct PoolStatus {
        bool have_status, have_code;
        char status[256]; /* Innodb_buffer_pool_resize_status */
        long code;        /* Innodb_buffer_pool_resize_status_code (MySQL 8.0.31+) */
        long progress;
} PoolStatus;

static const char facts_query[] =
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_buffer_pool_size', "
        "'innodb_buffer_pool_chunk_size', 'innodb_buffer_pool_instances', 'innodb_buffer_pool_size_max', "
        "'innodb_buffer_pool_size_auto_min', 'large_pages')";

static const char status_query[] =
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_resize_status', "
        "'Innodb_buffer_pool_resize_status_code', 'Innodb_buffer_pool_resize_status_progress')";

static int read_fact(void *userdata, unsigned n, char **row) {
        PoolFacts *f = userdata;
        if (n < 2 || !row[0] || !row[1])
                return 0;
        const char *name = row[0], *v = row[1];
        if (!strcasecmp(name, "innodb_buffer_pool_size"))
                f->have_size = parse_decimal_u64(v, &f->size);
        else if (!strcasecmp(name, "innodb_buffer_pool_chunk_size"))
                f->have_chunk = parse_decimal_u64(v, &f->chunk);
        else if (!strcasecmp(name, "innodb_buffer_pool_instances"))
                f->have_instances = parse_decimal_u64(v, &f->instances);
        else if (!strcasecmp(name, "innodb_buffer_pool_size_max"))
                f->have_max = parse_decimal_u64(v, &f->size_max);
        else if (!strcasecmp(name, "innodb_buffer_pool_size_auto_min"))
                f->have_auto_min = parse_decimal_u64(v, &f->auto_min);
        else if (!strcasecmp(name, "large_pages"))
                f->large_pages = !strcasecmp(v, "ON") || !strcmp(v, "1");
        return 0;
}

static int read_status(void *userdata, unsigned n, char **row) {
        PoolStatus *s = userdata;
        if (n < 2 || !row[0])
                return 0;
        const char *name = row[0], *v = row[1] ? row[1] : "";
        if (!strcasecmp(name, "Innodb_buffer_pool_resize_status")) {
                s->have_status = true;
                snprintf(s->status, sizeof(s->status), "%s", v);
        } else if (!strcasecmp(name, "Innodb_buffer_pool_resize_status_code")) {
                s->have_code = true;
                s->code = strtol(v, NULL, 10);
        } else if (!strcasecmp(name, "Innodb_buffer_pool_resize_status_progress"))
                s->progress = strtol(v, NULL, 10);
        return 0;
}

static int read_size(void *userdata, unsigned n, char **row) {
        if (n >= 1 && !parse_decimal_u64(row[0], userdata))
                *(uint64_t *) userdata = SIZE_UNKNOWN;
        return 0;
}

static bool has_prefix(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

typedef enum ResizeState {
        RESIZE_IDLE, /* nothing under way, the last one (if any) done */
        RESIZE_RUNNING,
        RESIZE_FAILED, /* the last one failed; nothing under way */
} ResizeState;

/* What the status variables say of the background resize. An empty status is a server that never
 * resized since it started (or one whose statement resizes, which never sets it). */
static ResizeState resize_state(const PoolStatus *s) {
        if (s->have_code)
                return s->code == 0 ? RESIZE_IDLE : s->code == 7 ? RESIZE_FAILED : RESIZE_RUNNING;
        if (!s->have_status || !s->status[0] || has_prefix(s->status, "Completed resizing buffer pool") ||
            has_prefix(s->status, "Size did not change"))
                return RESIZE_IDLE;
        if (has_prefix(s->status, "Resizing buffer pool failed") || has_prefix(s->status, "Failed to validate"))
                return RESIZE_FAILED;
        return RESIZE_RUNNING;
}

static uint64_t round_down(uint64_t v, uint64_t unit) {
        return v - v % unit;
}

static uint64_t round_up(uint64_t v, uint64_t unit) {
        uint64_t r = v % unit;
        return r == 0 ? v : v > UINT64_MAX - (unit - r) ? round_down(v, unit) : v + (unit - r);
}

/* ---- what the server gives back ---- */

typedef struct Meter {
        const char *what; /* "memory.current", "RSS", NULL = could not be measured */
        uint64_t before, after;
} Meter;

static bool measure_once(const ActionTarget *t, const char *what, uint64_t *ret) {
        char buf[64];
        if (streq(what, "memory.current")) {
                ssize_t n = t->cgroup_fd >= 0 ? read_small_file_at(t->cgroup_fd, "memory.current", buf, sizeof(buf))
                                              : -EBADF;
                return n >= 0 && parse_cgroup_value(buf, (size_t) n, ret) >= 0 && *ret != SIZE_UNLIMITED;
        }
        return t->pid > 0 && process_rss(t->pid, ret) == 0;
}

/* The cgroup's memory.current when the target has a cgroup, else the server's RSS. */
static void meter_start(const ActionTarget *t, Meter *m) {
        *m = (Meter){};
        if (t->cgroup_fd >= 0 && measure_once(t, "memory.current", &m->before))
                m->what = "memory.current";
        else if (measure_once(t, "RSS", &m->before))
                m->what = "RSS";
}

static void meter_stop(const ActionTarget *t, Meter *m) {
        if (m->what && !measure_once(t, m->what, &m->after))
                m->what = NULL;
}

/* ---- the statement ---- */

/* SET GLOBAL runs in a thread of its own: on the servers where the statement itself resizes, it
 * takes as long as the resize, and only a KILL QUERY from another connection stops it in time. */
typedef struct SetJob {
        SqlConn *conn;
        char statement[96];
        int r;
        char why[512];
        char warning[256]; /* the statement's first warning: "Warning 1292: Truncated incorrect ..." */
        bool done;         /* __atomic */
} SetJob;

static int first_warning(void *userdata, unsigned n, char **row) {
        SetJob *j = userdata;
        if (n >= 3 && !j->warning[0])
                snprintf(j->warning, sizeof(j->warning), "%s %s: %s", row[0] ? row[0] : "", row[1] ? row[1] : "",
                         row[2] ? row[2] : "");
        return 0;
}

static void *set_thread(void *userdata) {
        SetJob *j = userdata;
        char why[512];
        j->r = sql_run(j->conn, j->statement, NULL, NULL, j->why, sizeof(j->why));
        if (j->r >= 0)
                (void) sql_run(j->conn, "SHOW WARNINGS", first_warning, j, why, sizeof(why));
        __atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
        return NULL;
}

/* ---- the phases of one step: read, plan, resize, report ---- */

/* What the step is to do, from the server's facts and the decision. */
typedef struct PoolPlan {
        const char *verb; /* "shrink", "grow" */
        bool synchronous; /* the statement resizes, and returns when done */
        uint64_t current, configured, unit, target;
        usec_t timeout;
        char floor_note[200];
        char own_note[240]; /* what the server did by itself, or "" */
        char text[300];     /* "innodb_buffer_pool_size 8G -> 7.2G (a step of ...)" */
        char status_before[sizeof(((PoolStatus *) 0)->status)];
} PoolPlan;

/* How the statement went. */
typedef struct PoolOutcome {
        SetJob job;
        ResizeState state;
        bool timed_out, killed;
        bool on_own_session; /* no connection for the statement: it went on memgov's session */
        char kill_why[512];
        usec_t took;
        Meter meter;
        PoolStatus st;
} PoolOutcome;

static int pool_read(const ActionContext *c, SqlConn *conn, PoolFacts *f, PoolStatus *st, ActionResult *ret) {
        char why[512];
        int r = sql_connect(c->policy, c->target->pid, conn, why, sizeof(why));
        if (r < 0)
                return action_sql_connect_failed(ret, r, "pool", why);
        r = sql_run(conn, facts_query, read_fact, f, why, sizeof(why));
        if (r < 0)
                return action_fail(ret, r, "pool: reading the buffer pool's variables: %s", why);
        if (!f->have_size || f->size == 0)
                return action_refuse(ret, -EOPNOTSUPP,
                                     "pool: the server at %s has no InnoDB buffer pool (no innodb_buffer_pool_size "
                                     "variable)", conn->endpoint);
        r = sql_run(conn, status_query, read_status, st, why, sizeof(why));
        if (r < 0)
                return action_fail(ret, r, "pool: reading Innodb_buffer_pool_resize_status: %s", why);
        return 0;
}

/* The step in the server's unit, between the floor and the configured size: 1 to go ahead, 0 with
 * nothing to do (said in ret->detail), or why not. */
static int pool_plan(const Decision *d, const SqlConn *conn, const PoolFacts *f, const PoolStatus *st, PoolPlan *pl,
                     ActionResult *ret) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], e[FORMAT_BYTES_MAX], f_[FORMAT_BYTES_MAX],
                pc[FORMAT_PERCENT_MAX];

        /* The statement resizes (and returns when done) where innodb_buffer_pool_size_max exists. */
        pl->synchronous = conn->mariadb && f->have_max;
        pl->current = f->size;
        pl->configured = d->pool.configured ? d->pool.configured : f->size;
        ret->value = ret->value_before = pl->current;
        ret->baseline = pl->configured;

        if (pl->synchronous && f->large_pages)
                return action_refuse(ret, -EOPNOTSUPP,
                                     "pool: the server at %s uses large_pages, with which it cannot resize its buffer "
                                     "pool at run time", conn->endpoint);
        if (resize_state(st) == RESIZE_RUNNING)
                return action_refuse(ret, -EBUSY,
                                     "pool: a resize of the buffer pool is already under way "
                                     "(Innodb_buffer_pool_resize_status: %s): not another one now", st->status);

        /* The unit the server takes sizes in. */
        uint64_t instances = 1;
        pl->unit = MIB;
        if (!pl->synchronous) {
                /* MariaDB 10.5+ has a single instance whatever innodb_buffer_pool_instances says. */
                if (f->have_instances && f->instances > 1 && (!conn->mariadb || sql_server_version(conn) < 100500))
                        instances = f->instances;
                uint64_t chunk = f->have_chunk && f->chunk >= MIB ? f->chunk : MIB;
                pl->unit = chunk * instances;
        }
        const uint64_t current = pl->current, configured = pl->configured, unit = pl->unit;

        /* The server's own memory-pressure shrinking (MariaDB with innodb_buffer_pool_size_auto_min):
         * on a pressure event of its cgroup (when it could listen: cgroup v2's memory.pressure) it
         * takes the pool halfway down to auto_min by itself, 0 meaning no minimum. Its default
         * (innodb_buffer_pool_size_max), or any value not under the pool's size, turns that off:
         * then it is a switch, not a size anyone chose as the least the pool may have. Under the
         * configured size it is the administrator's own floor for shrinking the pool on memory
         * pressure, which is what this rung does too: it is kept as a floor and never crossed. The
         * ladder's next rungs then take over, as they would at memgov's own floor: the
         * administrator said how small the pool may get for memory's sake, and a smaller one is
         * not memgov's to choose. */
        const bool server_shrinks = f->have_auto_min && f->auto_min < MAX(configured, current);

        const uint64_t step = apply_bp(configured, d->pool.step);
        uint64_t floor = round_up(apply_bp(configured, d->pool.floor), unit);
        const char *floor_by = NULL;
        if (!conn->mariadb && instances > 1 && floor < GIB) {
                floor = round_up(GIB, unit);
                floor_by = "MySQL's least with innodb_buffer_pool_instances > 1";
        }
        if (server_shrinks && f->auto_min > 0 && round_up(f->auto_min, unit) > floor) {
                floor = round_up(f->auto_min, unit);
                floor_by = "the server's innodb_buffer_pool_size_auto_min";
        }
        if (floor_by)
                snprintf(pl->floor_note, sizeof(pl->floor_note), "floor %s, %s (memgov's: %s of the configured %s)",
                         format_bytes(a, floor), floor_by, format_bp(pc, d->pool.floor), format_bytes(b, configured));
        else if (floor > apply_bp(configured, d->pool.floor))
                /* MySQL's pool resizes in innodb_buffer_pool_chunk_size (128M by default) times its
                 * instances: a 128M pool has nowhere to go. */
                snprintf(pl->floor_note, sizeof(pl->floor_note),
                         "floor %s, %s of the configured %s rounded up to the server's resize unit %s",
                         format_bytes(a, floor), format_bp(pc, d->pool.floor), format_bytes(b, configured),
                         format_bytes(e, unit));
        else
                snprintf(pl->floor_note, sizeof(pl->floor_note), "floor %s, %s of the configured %s",
                         format_bytes(a, floor), format_bp(pc, d->pool.floor), format_bytes(b, configured));

        /* What the server did by itself: the pool is smaller than the configured size by more than
         * memgov took (pool_grow_max, when the engine says). */
        if (d->pool.grow_max != SIZE_UNLIMITED && configured > current && configured - current > d->pool.grow_max)
                snprintf(pl->own_note, sizeof(pl->own_note),
                         "; the server%s had already shrunk its buffer pool to %s by itself "
                         "(%s below the configured %s, of which memgov took %s)",
                         server_shrinks ? " (on memory pressure, down to innodb_buffer_pool_size_auto_min)"
                                        : " (or someone else)",
                         format_bytes(a, current), format_bytes(b, configured - current), format_bytes(e, configured),
                         format_bytes(f_, d->pool.grow_max));

        if (!d->pool.grow) {
                if (current <= floor ||
                    (pl->target = MAX(round_down(current - MIN(step, current), unit), floor)) >= current)
                        return action_refuse(ret, -ERANGE,
                                             "pool: innodb_buffer_pool_size is %s, at its %s: nothing left to shrink%s",
                                             format_bytes(e, current), pl->floor_note, pl->own_note);
        } else {
                uint64_t limit = configured;
                const char *limit_why = "its configured size";
                if (pl->synchronous && round_down(f->size_max, unit) < limit) {
                        limit = round_down(f->size_max, unit);
                        limit_why = "innodb_buffer_pool_size_max";
                }
                if (current >= limit) {
                        snprintf(ret->detail, sizeof(ret->detail),
                                 "pool: innodb_buffer_pool_size is %s, at %s (%s): nothing to grow",
                                 format_bytes(a, current), limit_why, format_bytes(b, limit));
                        return 0;
                }
                uint64_t by = MIN(step, d->pool.grow_max);
                pl->target = by >= limit - current ? limit : round_down(current + by, unit);
                if (pl->target <= current) {
                        if (d->pool.grow_max == 0)
                                snprintf(ret->detail, sizeof(ret->detail),
                                         "pool: innodb_buffer_pool_size is %s, and memgov took none of it: nothing to "
                                         "give back%s",
                                         format_bytes(a, current), pl->own_note);
                        else
                                snprintf(ret->detail, sizeof(ret->detail),
                                         "pool: innodb_buffer_pool_size is %s, and what memgov took (%s) is less than "
                                         "the server's unit (%s): nothing to give back%s",
                                         format_bytes(a, current), format_bytes(b, d->pool.grow_max),
                                         format_bytes(e, unit), pl->own_note);
                        return 0;
                }
        }

        char bound[120];
        if (!d->pool.grow)
                snprintf(bound, sizeof(bound), "%s", pl->floor_note);
        else if (d->pool.grow_max == SIZE_UNLIMITED)
                snprintf(bound, sizeof(bound), "up to the configured %s", format_bytes(a, configured));
        else
                snprintf(bound, sizeof(bound), "at most %s back of what memgov took", format_bytes(a, d->pool.grow_max));
        snprintf(pl->text, sizeof(pl->text), "innodb_buffer_pool_size %s -> %s (a step of %s of %s; %s)",
                 format_bytes_change(a, b, current, pl->target), b, format_bp(pc, d->pool.step),
                 format_bytes(e, configured), bound);
        snprintf(pl->status_before, sizeof(pl->status_before), "%s", st->status);
        return 1;
}

/* The statement on a connection of its own, which waits as long as the resize may take (KILL
 * QUERY from conn past it), then the background resize where the statement only asked for it.
 * A server that turns every new connection away (more sessions than max_connections + 1: a storm
 * that came in before admission's lowering took effect) still has conn, memgov's session: where
 * the statement only asks for the resize and returns at once, conn carries it. Seen: a pool step
 * refused with "Too many connections", 58 sessions in at max_connections 54, and the ladder went
 * on to the restart. */
static int pool_resize(const ActionContext *c, SqlConn *conn, const PoolPlan *pl, PoolOutcome *o, ActionResult *ret) {
        const ActionTarget *t = c->target;
        const Policy *p = c->policy;
        char why[512];

        _cleanup_free_ Policy *sp = malloc(sizeof(Policy));
        if (!sp)
                return action_fail(ret, -ENOMEM, "pool: the statement's connection");
        *sp = *p;
        sp->sql_query_timeout = pl->timeout + p->sql_query_timeout;
        _cleanup_sql_ SqlConn set_conn = {};
        SqlConn *stmt_conn = &set_conn;
        int r = sql_connect(sp, t->pid, &set_conn, why, sizeof(why));
        if (r == -EUSERS && !pl->synchronous)
                stmt_conn = conn;
        else if (r == -EUSERS)
                return action_fail(ret, r, "pool: the statement, which resizes and is stopped past resize-timeout by a "
                                   "KILL QUERY from memgov's session, needs a connection of its own: %s", why);
        else if (r < 0)
                return action_fail(ret, r, "pool: %s", why);
        o->on_own_session = stmt_conn == conn;

        /* Recorded before it is made: a memgov that dies leaves the next one what to put back. */
        (void) state_file_change(c->state, CHANGE_POOL_SIZE, t->pid, t->starttime, pl->configured, pl->target);
        meter_start(t, &o->meter);
        o->job = (SetJob) { .conn = stmt_conn };
        snprintf(o->job.statement, sizeof(o->job.statement), "SET GLOBAL innodb_buffer_pool_size = %" PRIu64, pl->target);
        usec_t start = now_clock(CLOCK_MONOTONIC), deadline = start + pl->timeout;
        pthread_t thread;
        r = -pthread_create(&thread, NULL, set_thread, &o->job);
        if (r < 0)
                return action_fail(ret, r, "pool: cannot start the thread of the statement");
        for (usec_t pause = USEC_PER_MSEC; !__atomic_load_n(&o->job.done, __ATOMIC_ACQUIRE);
             pause = MIN(pause * 2, 50 * USEC_PER_MSEC)) {
                /* On memgov's own session the statement returns at once, or at the session's
                 * query timeout: nothing is left to send a KILL QUERY on, nor needed. */
                if (!o->on_own_session && now_clock(CLOCK_MONOTONIC) >= deadline) {
                        /* Only MariaDB's statement that resizes itself runs this long: KILL QUERY
                         * makes the server abort the shrink and keep the pool it had. */
                        char kill[64];
                        snprintf(kill, sizeof(kill), "KILL QUERY %llu", set_conn.own_id);
                        o->killed = sql_run(conn, kill, NULL, NULL, o->kill_why, sizeof(o->kill_why)) >= 0;
                        o->timed_out = true;
                        break;
                }
                sleep_usec(pause);
        }
        pthread_join(thread, NULL);

        /* The background resize, where the statement only asked for it. */
        o->state = RESIZE_IDLE;
        if (!o->timed_out && o->job.r >= 0 && !pl->synchronous && (o->st.have_status || o->st.have_code)) {
                usec_t pause = 50 * USEC_PER_MSEC;
                for (;;) {
                        o->st = (PoolStatus) {};
                        if (sql_run(conn, status_query, read_status, &o->st, why, sizeof(why)) < 0)
                                return action_fail(ret, -EIO, "pool: %s asked; reading Innodb_buffer_pool_resize_status: %s",
                                                   o->job.statement, why);
                        o->state = resize_state(&o->st);
                        /* The statement writes "Requested to resize buffer pool." at once; a
                         * status left as it was is a resize not begun yet (or one that ended in
                         * the same second as the last, with the same words). */
                        if (!o->st.have_code && o->state != RESIZE_RUNNING && streq(o->st.status, pl->status_before) &&
                            now_clock(CLOCK_MONOTONIC) - start < 2 * USEC_PER_SEC)
                                o->state = RESIZE_RUNNING;
                        if (o->state != RESIZE_RUNNING)
                                break;
                        if (now_clock(CLOCK_MONOTONIC) >= deadline) {
                                o->timed_out = true;
                                break;
                        }
                        sleep_usec(pause);
                        pause = MIN(pause * 2, 500 * USEC_PER_MSEC);
                }
        }
        o->took = now_clock(CLOCK_MONOTONIC) - start;
        meter_stop(t, &o->meter);
        return 0;
}

/* The size read back, the state file brought up to it, and what the step did or why it failed. */
static int pool_report(const ActionContext *c, const Decision *d, SqlConn *conn, const PoolPlan *pl,
                       const PoolOutcome *o, ActionResult *ret) {
        const ActionTarget *t = c->target;
        char why[512], a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], e[FORMAT_BYTES_MAX], ts[FORMAT_TIMESPAN_MAX];

        uint64_t after = SIZE_UNKNOWN;
        if (sql_run(conn, "SELECT @@GLOBAL.innodb_buffer_pool_size", read_size, &after, why, sizeof(why)) < 0 ||
            after == SIZE_UNKNOWN)
                return action_fail(ret, -EIO, "pool: %s; reading innodb_buffer_pool_size back: %s",
                                   o->job.r < 0 ? o->job.why : o->job.statement, why);
        ret->value = after;
        /* What the pool is now, against what memgov found: all back, or still to put back. */
        if (after >= pl->configured)
                (void) state_file_forget(c->state, CHANGE_POOL_SIZE);
        else
                (void) state_file_change(c->state, CHANGE_POOL_SIZE, t->pid, t->starttime, pl->configured, after);

        if (o->timed_out) {
                if (pl->synchronous)
                        return action_refuse(ret, -ETIMEDOUT,
                                             "pool: the %s to %s did not finish within %s; %s%s, and the buffer pool is %s",
                                             pl->verb, format_bytes(a, pl->target), format_timespan(ts, pl->timeout),
                                             o->killed ? "it was ended by KILL QUERY" : "KILL QUERY failed: ",
                                             o->killed ? "" : o->kill_why, format_bytes(b, after));
                char stage[64] = "";
                if (o->st.have_code)
                        snprintf(stage, sizeof(stage), "; stage %ld, %ld%% done", o->st.code, o->st.progress);
                return action_refuse(ret, -ETIMEDOUT,
                                     "pool: the %s to %s did not finish within %s: the server is still at it in the "
                                     "background (Innodb_buffer_pool_resize_status: %s%s)",
                                     pl->verb, format_bytes(a, pl->target), format_timespan(ts, pl->timeout),
                                     o->st.status, stage);
        }
        if (o->job.r < 0) {
                if (o->job.r == -EACCES)
                        return action_refuse(ret, -EACCES,
                                             "pool: the account may not set innodb_buffer_pool_size (it needs SUPER, or "
                                             "SYSTEM_VARIABLES_ADMIN on MySQL): %s", o->job.why);
                if (strstr(o->job.why, "already in progress"))
                        return action_refuse(ret, -EBUSY,
                                             "pool: the server is resizing its buffer pool already (by itself, or for "
                                             "someone else): %s", o->job.why);
                return action_refuse(ret, o->job.r, "pool: %s failed: %s; the buffer pool is %s", o->job.statement,
                                     o->job.why, format_bytes(a, after));
        }
        if (o->state == RESIZE_FAILED || (d->pool.grow ? after <= pl->current : after >= pl->current)) {
                char warning[300] = "", status[300] = "";
                if (o->job.warning[0])
                        snprintf(warning, sizeof(warning), " (%s)", o->job.warning);
                if (o->state == RESIZE_FAILED)
                        snprintf(status, sizeof(status), "; Innodb_buffer_pool_resize_status: %s", o->st.status);
                return action_refuse(ret, -EIO, "pool: the server did not %s its buffer pool to %s: it is %s%s%s",
                                     pl->verb, format_bytes(a, pl->target), format_bytes(b, after), warning, status);
        }

        StrBuf detail;
        strbuf_init(&detail, ret->detail, sizeof(ret->detail));
        strbuf_printf(&detail, "%s %s in %s", d->pool.grow ? "grew" : "shrank", pl->text, format_timespan(ts, o->took));
        if (o->on_own_session)
                strbuf_printf(&detail, " (on memgov's session: the server takes no new connection)");
        if (after != pl->target)
                strbuf_printf(&detail, "; the server set %s", format_bytes(a, after));
        const Meter *m = &o->meter;
        if (!d->pool.grow) {
                if (m->what) {
                        ret->has_freed = true;
                        ret->freed = m->before > m->after ? m->before - m->after : 0;
                        strbuf_printf(&detail, "; %s %s -> %s, %s given back", m->what, format_bytes_change(a, b, m->before, m->after),
                                      b, format_bytes(e, ret->freed));
                } else
                        strbuf_printf(&detail, "; what it gave back could not be measured (no cgroup, no RSS)");
        } else if (m->what)
                strbuf_printf(&detail, "; %s %s -> %s", m->what, format_bytes_change(a, b, m->before, m->after), b);
        strbuf_printf(&detail, "%s", pl->own_note);
        return 0;
}

int pool_run(const ActionContext *c, const Decision *d, ActionResult *ret) {
        const ActionTarget *t = c->target;
        PoolPlan pl = { .verb = d->pool.grow ? "grow" : "shrink" };
        PoolFacts f = {};
        PoolStatus st = {};
        _cleanup_sql_ SqlConn conn = {};

        if (t->pid > 0 && action_target_check(t) < 0)
                return action_fail(ret, -ESRCH, "pool: process %d is not the server any more", (int) t->pid);
        if (d->pool.step == 0 || d->pool.floor > BP_ONE)
                return action_refuse(ret, -EINVAL, "pool: a %s step of %u bp with a floor of %u bp is no step", pl.verb,
                                     d->pool.step, d->pool.floor);
        int r = pool_read(c, &conn, &f, &st, ret);
        if (r < 0 || ret->not_done)
                return r;
        r = pool_plan(d, &conn, &f, &st, &pl, ret);
        if (r <= 0)
                return r;
        if (c->dry_run) {
                snprintf(ret->detail, sizeof(ret->detail), "would %s %s%s", pl.verb, pl.text, pl.own_note);
                return 0;
        }
        pl.timeout = c->policy->pool_resize_timeout ? c->policy->pool_resize_timeout : POOL_RESIZE_TIMEOUT_DEFAULT;
        PoolOutcome o = { .st = st };
        r = pool_resize(c, &conn, &pl, &o, ret);
        if (r < 0)
                return r;
        return pool_report(c, d, &conn, &pl, &o, ret);
}

/* The size a server was configured with is what the pool is found at the first time memgov
 * resizes it (the server reports only the size it has now): reported back (ret->baseline) and
 * kept by the engine for that server process (the pool rung's state), which hands it to every
 * later step in the decision, so that every step and the floor are shares of it. A dry run
 * changed nothing: the size it found is no configured size to keep. */
int pool_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        put_back_inherited_kind(c, CHANGE_POOL_SIZE);
        int r = pool_run(c, d, ret);
        if (r >= 0 && !c->dry_run && ret->value > 0 && ret->value != SIZE_UNKNOWN)
                pool_watch_resized(c->target->pid, c->target->starttime, ret->value);
        if (c->dry_run)
                ret->baseline = 0;
        return r;
}
