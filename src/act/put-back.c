/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a memgov before this one changed on the server and did not put back (it died without its
 * way out: a watchdog abort, SIGKILL), from the state file: put back at start, as its way out
 * would have, on the same server process and only where the value is still the one it set. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "admit.h"
#include "memgov/log.h"
#include "memgov/sql.h"
#include "memgov/units.h"
#include "pool.h"
#include "put-back.h"

static int read_u64(void *userdata, unsigned n, char **row) {
        uint64_t *v = userdata;
        if (n >= 1 && row[0])
                *v = strtoull(row[0], NULL, 10);
        return 0;
}

/* innodb_max_dirty_pages_pct, in hundredths ("90.000000" -> 9000). */
static int read_pct(void *userdata, unsigned n, char **row) {
        uint64_t *v = userdata;
        if (n >= 1 && row[0]) {
                char *end;
                double d = strtod(row[0], &end);
                if (end != row[0] && d >= 0)
                        *v = (uint64_t) (d * 100.0 + 0.5);
        }
        return 0;
}

static void put_back_dirty_pct(const ActionContext *c, const ServerChange *rec) {
        char why[512], q[96];
        _cleanup_sql_ SqlConn conn = {};
        uint64_t now = UINT64_MAX;

        if (sql_connect(c->policy, c->target->pid, &conn, why, sizeof(why)) < 0) {
                log_warning("innodb_max_dirty_pages_pct left by the memgov before at %" PRIu64 ".%02" PRIu64
                            " (it found %" PRIu64 ".%02" PRIu64 "): not put back yet: %s", rec->set / 100,
                            rec->set % 100, rec->found / 100, rec->found % 100, why);
                return;
        }
        int r = sql_run(&conn, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct", read_pct, &now, why, sizeof(why));
        if (r >= 0 && now == rec->set) {
                snprintf(q, sizeof(q), "SET GLOBAL innodb_max_dirty_pages_pct = %" PRIu64 ".%02" PRIu64, rec->found / 100,
                         rec->found % 100);
                r = sql_run(&conn, q, NULL, NULL, why, sizeof(why));
                if (r >= 0)
                        log_notice("innodb_max_dirty_pages_pct put back %" PRIu64 ".%02" PRIu64 " -> %" PRIu64 ".%02" PRIu64
                                   " (the memgov before set it for a restart that did not come, and stopped without "
                                   "putting it back)", rec->set / 100, rec->set % 100, rec->found / 100, rec->found % 100);
        } else if (r >= 0)
                log_info("innodb_max_dirty_pages_pct is %" PRIu64 ".%02" PRIu64 ", not the %" PRIu64 ".%02" PRIu64
                         " the memgov before set: changed since, left as it is", now / 100, now % 100, rec->set / 100,
                         rec->set % 100);
        if (r < 0)
                log_warning("innodb_max_dirty_pages_pct: not put back to %" PRIu64 ".%02" PRIu64 ": %s", rec->found / 100,
                            rec->found % 100, why);
        else
                (void) state_file_forget(c->state, CHANGE_DIRTY_PAGES_PCT);
}

static void put_back_max_connections(const ActionContext *c, const ServerChange *rec) {
        /* The admission rung's own restore: only while max_connections is still what was set. */
        AdmitMemory m = { .pid = rec->pid, .starttime = rec->starttime, .configured = rec->found, .set = rec->set };
        Decision d = { .kind = DECISION_ACTION, .action = ACTION_ADMIT, .admit.restore = true };
        ActionResult res = {};
        int r = admit_run(c, &d, &m, &res);
        if (r < 0)
                log_warning("max_connections left by the memgov before at %" PRIu64 " (it found %" PRIu64 "): %s",
                            rec->set, rec->found, res.detail);
        else
                log_notice("%s (left by the memgov before, which stopped without putting it back)", res.detail);
}

static void put_back_pool(const ActionContext *c, const ServerChange *rec) {
        /* The pool rung's own grow, the whole way back to what was found in one step. */
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        char why[512];
        uint64_t now = 0;
        int r;

        {
                _cleanup_sql_ SqlConn conn = {};
                r = sql_connect(c->policy, c->target->pid, &conn, why, sizeof(why));
                if (r >= 0)
                        r = sql_run(&conn, "SELECT @@GLOBAL.innodb_buffer_pool_size", read_u64, &now, why, sizeof(why));
        } /* given back before the resize, which takes the kept session */
        if (r < 0 || now == 0) {
                /* Not read: not "changed since". Kept, and tried again. */
                log_warning("innodb_buffer_pool_size left by the memgov before at %s (it found %s): not put back yet: %s",
                            format_bytes(a, rec->set), format_bytes(b, rec->found), r < 0 ? why : "no value read");
                return;
        }
        if (now != rec->set) {
                log_info("innodb_buffer_pool_size is %s, not the %s the memgov before set: changed since, left as it is",
                         format_bytes(a, now), format_bytes(b, rec->set));
                (void) state_file_forget(c->state, CHANGE_POOL_SIZE);
                return;
        }
        Decision d = { .kind = DECISION_ACTION, .action = ACTION_POOL, .pool.grow = true, .pool.configured = rec->found,
                       .pool.step = 10000, .pool.floor = 0, .pool.grow_max = SIZE_UNLIMITED };
        ActionResult res = {};
        r = pool_run(c, &d, &res);
        if (r < 0)
                log_warning("innodb_buffer_pool_size left by the memgov before at %s (it found %s): %s",
                            format_bytes(a, rec->set), format_bytes(b, rec->found), res.detail);
        else
                log_notice("buffer pool: %s (left by the memgov before, which stopped without putting it back)",
                           res.detail);
}

void put_back_inherited_kind(const ActionContext *c, ChangeKind k) {
        assert(change_kind_is_server_setting(k));
        if (!c->state || c->dry_run || c->target->pid <= 0)
                return;
        ServerChange rec = state_file_get(c->state, k);
        if (!rec.active || !rec.inherited)
                return;
        if (rec.pid != c->target->pid || rec.starttime != c->target->starttime) {
                /* A new server process starts at its configuration: nothing to put back. */
                log_info("%s: changed by the memgov before on server process %d, gone since: nothing to put back",
                         change_kind_to_string(k), (int) rec.pid);
                (void) state_file_forget(c->state, k);
                return;
        }
        switch (k) {
        case CHANGE_MAX_CONNECTIONS:
                put_back_max_connections(c, &rec);
                break;
        case CHANGE_POOL_SIZE:
                put_back_pool(c, &rec);
                break;
        case CHANGE_DIRTY_PAGES_PCT:
                put_back_dirty_pct(c, &rec);
                break;
        default:
                break;
        }
}

void put_back_inherited(const ActionContext *c) {
        for (ChangeKind k = 0; k < _CHANGE_KIND_MAX; k++)
                if (change_kind_is_server_setting(k))
                        put_back_inherited_kind(c, k);
}
