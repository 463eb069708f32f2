/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the server does with its buffer pool between memgov's own steps: see pool-watch.h. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "memgov/clock.h"
#include "memgov/log.h"
#include "memgov/macro.h"
#include "memgov/strutil.h"
#include "memgov/units.h"
#include "memgov/pool-watch.h"

static const char query[] =
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_buffer_pool_size', "
        "'innodb_buffer_pool_size_auto_min', 'innodb_page_size')";
/* Its pages in use, for the engine's ETA (pool-fill.h): both servers count them this way. */
static const char fill_query[] =
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_pages_total', "
        "'Innodb_buffer_pool_pages_free')";

typedef struct Read {
        bool have_size, have_auto_min, have_page_size, have_total, have_free;
        uint64_t size, auto_min, page_size, pages_total, pages_free;
} Read;

static int read_row(void *userdata, unsigned n, char **row) {
        Read *r = userdata;
        if (n < 2 || !row[0] || !row[1])
                return 0;
        if (!strcasecmp(row[0], "innodb_buffer_pool_size"))
                r->have_size = parse_decimal_u64(row[1], &r->size);
        else if (!strcasecmp(row[0], "innodb_buffer_pool_size_auto_min"))
                r->have_auto_min = parse_decimal_u64(row[1], &r->auto_min);
        else if (!strcasecmp(row[0], "innodb_page_size"))
                r->have_page_size = parse_decimal_u64(row[1], &r->page_size);
        else if (!strcasecmp(row[0], "Innodb_buffer_pool_pages_total"))
                r->have_total = parse_decimal_u64(row[1], &r->pages_total);
        else if (!strcasecmp(row[0], "Innodb_buffer_pool_pages_free"))
                r->have_free = parse_decimal_u64(row[1], &r->pages_free);
        return 0;
}

/* Written by the action thread (the watch and the pool rung), read by the status. */
static struct {
        pthread_mutex_t lock;
        PoolWatchInfo info;
} watched = { .lock = PTHREAD_MUTEX_INITIALIZER };

void pool_watch_info(PoolWatchInfo *ret) {
        pthread_mutex_lock(&watched.lock);
        *ret = watched.info;
        pthread_mutex_unlock(&watched.lock);
}

void pool_watch_resized(pid_t pid, uint64_t starttime, uint64_t size) {
        pthread_mutex_lock(&watched.lock);
        if (watched.info.known && watched.info.pid == pid && watched.info.starttime == starttime)
                watched.info.size = size;
        pthread_mutex_unlock(&watched.lock);
}

void pool_watch_sample(pid_t pid, uint64_t starttime, Sample *s) {
        pthread_mutex_lock(&watched.lock);
        const PoolWatchInfo *w = &watched.info;
        if (w->known && w->fill_known && w->pid == pid && w->starttime == starttime) {
                s->pool_in_use = w->in_use;
                s->pool_room = w->room;
                s->pool_read = w->fill_at;
                s->has |= SAMPLE_HAS_POOL_FILL;
        }
        pthread_mutex_unlock(&watched.lock);
}

bool pool_watch(SqlConn *conn, pid_t pid, uint64_t starttime) {
        char why[256], a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], m[FORMAT_BYTES_MAX], t[FORMAT_BYTES_MAX];
        Read r = {};

        /* A server without InnoDB, or one that did not answer: nothing to watch this time (the
         * kept session's own failure is said where it is kept). */
        if (sql_run(conn, query, read_row, &r, why, sizeof(why)) < 0 || !r.have_size || r.size == 0)
                return false;
        /* Its fill is read right after; a server that does not answer it keeps no fill. */
        bool fill = r.have_page_size && r.page_size > 0 && sql_run(conn, fill_query, read_row, &r, why, sizeof(why)) >= 0 &&
                    r.have_total && r.have_free && r.pages_free <= r.pages_total;
        usec_t fill_at = now_clock(CLOCK_MONOTONIC);

        PoolWatchInfo was;
        pool_watch_info(&was);
        PoolWatchInfo now = was;
        const bool same = was.known && was.pid == pid && was.starttime == starttime;
        if (!same)
                now = (PoolWatchInfo) { .pid = pid, .starttime = starttime, .known = true, .found = r.size };
        now.size = r.size;
        now.fill_known = fill;
        if (fill) {
                now.in_use = (r.pages_total - r.pages_free) * r.page_size;
                now.room = r.pages_free * r.page_size;
                now.fill_at = fill_at;
        }
        now.have_auto_min = r.have_auto_min;
        now.auto_min = r.auto_min;
        /* MariaDB's auto_min defaults to innodb_buffer_pool_size_max: the server's own shrinking
         * off; under the pool's size it is on, down to auto_min (0: no minimum). */
        now.server_shrinks = r.have_auto_min && r.auto_min < MAX(now.found, r.size);

        if (!same || now.server_shrinks != was.server_shrinks) {
                if (now.server_shrinks)
                        log_info("pool: buffer pool %s; the server shrinks it by itself on memory pressure, "
                                 "down to %s (innodb_buffer_pool_size_auto_min): memgov counts what it gives back that way, "
                                 "and grows back only what memgov itself took",
                                 format_bytes(a, r.size), r.auto_min ? format_bytes(m, r.auto_min) : "nothing");
                else if (r.have_auto_min)
                        log_info("pool: buffer pool %s; the server's own shrinking on memory pressure is off "
                                 "(innodb_buffer_pool_size_auto_min is not under the pool's size)",
                                 format_bytes(a, r.size));
        } else if (r.size < was.size) {
                now.shrunk_by_server += was.size - r.size;
                now.shrinks_by_server++;
                /* From here the server's own shrink and an administrator's SET GLOBAL look the same. */
                log_notice("pool: the buffer pool shrank without memgov: %s -> %s, %s given back (%s; %s in all so far)",
                           format_bytes_change(a, b, was.size, r.size), b, format_bytes(m, was.size - r.size),
                           now.server_shrinks ? "the server shrinks it on memory pressure, or an administrator did"
                                              : "an administrator, or the server itself",
                           format_bytes(t, now.shrunk_by_server));
        } else if (r.size > was.size)
                log_info("pool: the buffer pool grew without memgov: %s -> %s", format_bytes_change(a, b, was.size, r.size), b);

        pthread_mutex_lock(&watched.lock);
        watched.info = now;
        pthread_mutex_unlock(&watched.lock);
        /* Filling: room left, and more pages in use than at the last reading (or none yet). */
        return fill && now.room > 0 && (!same || !was.fill_known || now.in_use > was.in_use);
}
