/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <malloc.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "manager.h"
#include "memgov/clock.h"
#include "memgov/fileio.h"
#include "memgov/json-output.h"
#include "memgov/units.h"
#include "memgov/pool-watch.h"
#include "../act/explain-report.h"
#include "memgov/sql-keep.h"

#ifndef MEMGOV_VERSION
#define MEMGOV_VERSION "unknown"
#endif

static json_object *target_json(const Manager *m) {
        json_object *t = json_object_new_object();
        json_object_object_add(t, "kind", json_object_new_string(target_kind_to_string(m->target.spec.kind)));
        json_object_object_add(t, "spec", json_object_new_string(m->target.spec.kind == TARGET_PID ? "" : m->target.spec.value));
        json_object_object_add(t, "resolved", json_object_new_boolean(m->target.resolved));
        json_object_object_add(t, "description",
                               m->target.resolved ? json_object_new_string(m->target.description) : NULL);
        json_object_object_add(t, "waiting", m->waiting[0] ? json_object_new_string(m->waiting) : NULL);
        json_object_object_add(t, "cgroup", m->target.has_cgroup ? json_object_new_string(m->target.cgroup) : NULL);
        json_object_object_add(t, "pid", m->target.pid > 0 ? json_object_new_int(m->target.pid) : NULL);
        return t;
}

static json_object *sample_json(const Sample *s) {
        json_object *o = json_object_new_object();
        if (s->has & SAMPLE_HAS_CGROUP) {
                json_object *c = json_object_new_object();
                json_object_object_add(c, "current", json_object_new_uint64(s->memory_current));
                json_object_object_add(c, "high", size_or_max_json(s->memory_high));
                json_object_object_add(c, "max", size_or_max_json(s->memory_max));
                json_object_object_add(c, "anon", json_object_new_uint64(s->anon));
                json_object_object_add(c, "file", json_object_new_uint64(s->file));
                json_object_object_add(c, "inactive_file", json_object_new_uint64(s->inactive_file));
                json_object_object_add(o, "memory", c);
        }
        if (s->has & SAMPLE_HAS_EVENTS) {
                json_object *e = json_object_new_object();
                json_object_object_add(e, "low", json_object_new_uint64(s->events.low));
                json_object_object_add(e, "high", json_object_new_uint64(s->events.high));
                json_object_object_add(e, "max", json_object_new_uint64(s->events.max));
                json_object_object_add(e, "oom", json_object_new_uint64(s->events.oom));
                json_object_object_add(e, "oom_kill", json_object_new_uint64(s->events.oom_kill));
                json_object_object_add(o, "events", e);
        }
        if (s->has & SAMPLE_HAS_PSI) {
                json_object *p = json_object_new_object();
                json_object_object_add(p, "some_avg10", json_object_new_double(s->psi.some.avg10 / 100.0));
                json_object_object_add(p, "some_avg60", json_object_new_double(s->psi.some.avg60 / 100.0));
                json_object_object_add(p, "full_avg10",
                                       s->psi.has_full ? json_object_new_double(s->psi.full.avg10 / 100.0) : NULL);
                json_object_object_add(p, "full_avg60",
                                       s->psi.has_full ? json_object_new_double(s->psi.full.avg60 / 100.0) : NULL);
                json_object_object_add(o, "psi", p);
        }
        if (s->has & SAMPLE_HAS_PROCESS) {
                json_object *p = json_object_new_object();
                json_object_object_add(p, "pid", json_object_new_int(s->pid));
                json_object_object_add(p, "rss", json_object_new_uint64(s->rss));
                json_object_object_add(p, "rss_anon", json_object_new_uint64(s->rss_anon));
                json_object_object_add(p, "threads", json_object_new_int((int) s->threads));
                json_object_object_add(p, "anon_maps", json_object_new_int((int) s->anon_maps));
                json_object_object_add(p, "uptime_s", (s->has & SAMPLE_HAS_UPTIME) ? json_object_new_uint64(s->uptime / USEC_PER_SEC) : NULL);
                json_object_object_add(o, "process", p);
        }
        return o;
}

static json_object *actions_json(const Manager *m) {
        json_object *a = json_object_new_object();
        const Engine *e = m->engine;
        usec_t now = m->last.now;
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++) {
                const ActionState *st = engine_action(e, k);
                json_object *o = json_object_new_object();
                json_object_object_add(o, "count", json_object_new_int((int) st->count));
                json_object_object_add(o, "last_s_ago", st->last ? json_object_new_uint64((now - st->last) / USEC_PER_SEC) : NULL);
                usec_t next = engine_action_ready_at(e, &m->policy, k);
                json_object_object_add(o, "ready_in_s", next > now ? json_object_new_uint64((next - now) / USEC_PER_SEC) : json_object_new_int(0));
                json_object_object_add(o, "not_helping", json_object_new_boolean(st->spent));
                json_object_object_add(o, "last_gain", st->count && !st->pending && action_info(k)->measured
                                                               ? json_object_new_int64(st->last_gain) : NULL);
                json_object_object_add(a, action_kind_to_string(k), o);
        }
        return a;
}

/* memgov's own footprint: it must stay flat under the pressure it manages. */
static json_object *governor_json(const Manager *m) {
        json_object *g = json_object_new_object();
        char buf[4096];
        uint64_t rss = 0;
        ssize_t n = read_small_file_at(AT_FDCWD, "/proc/self/statm", buf, sizeof(buf));
        unsigned long long pages_total, pages_rss;
        if (n > 0 && sscanf(buf, "%llu %llu", &pages_total, &pages_rss) == 2)
                rss = (uint64_t) pages_rss * (uint64_t) sysconf(_SC_PAGESIZE);
        unsigned fds = 0;
        DIR *d = opendir("/proc/self/fd");
        if (d) {
                struct dirent *de;
                while ((de = readdir(d)))
                        if (de->d_name[0] != '.')
                                fds++;
                closedir(d);
                fds--; /* the one opendir holds */
        }
        struct mallinfo2 mi = mallinfo2();
        json_object_object_add(g, "pid", json_object_new_int(getpid()));
        json_object_object_add(g, "rss", json_object_new_uint64(rss));
        json_object_object_add(g, "heap_in_use", json_object_new_uint64(mi.uordblks + mi.hblkhd));
        json_object_object_add(g, "open_files", json_object_new_uint64(fds));
        json_object_object_add(g, "memory_locked", json_object_new_boolean(m->locked));
        return g;
}

/* The action threads: the job carried out for the longest, and whether one is wedged (then the
 * watchdog pings stop, and the liveness probe fails). */
static json_object *worker_json(const Manager *m, usec_t now) {
        json_object *w = json_object_new_object();
        uint64_t id;
        Decision d;
        usec_t started, running;
        bool busy = action_worker_current(m->worker, &id, &d, &started);
        /* now was read before the job may have started */
        running = busy && now > started ? now - started : 0;
        /* A wedged job is the one to show, whichever lane runs the longest job. */
        bool overdue = busy && action_worker_wedged(m->worker, now, &d, &running);

        json_object_object_add(w, "busy", json_object_new_boolean(busy));
        json_object_object_add(w, "action", busy ? json_object_new_string(decision_name(&d)) : NULL);
        json_object_object_add(w, "running_s", busy ? json_object_new_uint64(running / USEC_PER_SEC) : NULL);
        json_object_object_add(w, "overdue", json_object_new_boolean(overdue));
        return w;
}

/* The server as the action thread found it: version (from its SQL session), allocator (from its
 * maps), and the session kept open for the actions. */
static json_object *server_json(const Manager *m) {
        SqlKeepInfo k;
        sql_keep_info(&k);
        if (k.pid <= 0 || k.pid != m->target.pid)
                return NULL;
        json_object *s = json_object_new_object();
        json_object_object_add(s, "flavour", k.version[0] ? json_object_new_string(k.mariadb ? "MariaDB" : "MySQL") : NULL);
        json_object_object_add(s, "version", k.version[0] ? json_object_new_string(k.version) : NULL);
        json_object_object_add(s, "allocator", json_object_new_string(allocator_to_string(k.allocator)));
        json_object_object_add(s, "sql_session", json_object_new_string(k.state == SQL_KEEP_OPEN     ? "open"
                                                                          : k.state == SQL_KEEP_FAILED ? "failed"
                                                                                                       : "off"));
        json_object_object_add(s, "sql_session_id", k.session_id ? json_object_new_uint64(k.session_id) : NULL);
        json_object_object_add(s, "sql_error", k.why[0] ? json_object_new_string(k.why) : NULL);
        /* false while a database server listens on nothing yet (starting: the ladder waits). */
        json_object_object_add(s, "accepting_clients", k.accepting == ACCEPTING_UNKNOWN ? NULL
                                       : json_object_new_boolean(k.accepting == ACCEPTING_YES));
        json_object_object_add(s, "session_memory", k.session_memory_known
                                       ? json_object_new_string(session_memory_to_string(k.session_memory)) : NULL);
        json_object_object_add(s, "session_memory_off", k.session_memory_known && k.session_memory_why[0]
                                       ? json_object_new_string(k.session_memory_why) : NULL);
        /* The buffer pool as read on the kept session: what the server did with it by itself. */
        PoolWatchInfo p;
        pool_watch_info(&p);
        if (p.known && p.pid == m->target.pid) {
                json_object *b = json_object_new_object();
                json_object_object_add(b, "size", json_object_new_uint64(p.size));
                json_object_object_add(b, "found", json_object_new_uint64(p.found));
                json_object_object_add(b, "server_shrinks_on_pressure",
                                       p.have_auto_min ? json_object_new_boolean(p.server_shrinks) : NULL);
                json_object_object_add(b, "auto_min", p.have_auto_min ? json_object_new_uint64(p.auto_min) : NULL);
                json_object_object_add(b, "shrunk_by_server", json_object_new_uint64(p.shrunk_by_server));
                json_object_object_add(b, "shrinks_by_server", json_object_new_uint64(p.shrinks_by_server));
                /* Its pages in use and free, as last read: what it may still fill (pool-fill.h). */
                json_object_object_add(b, "in_use", p.fill_known ? json_object_new_uint64(p.in_use) : NULL);
                json_object_object_add(b, "free", p.fill_known ? json_object_new_uint64(p.room) : NULL);
                json_object_object_add(s, "buffer_pool", b);
        }
        return s;
}

bool manager_explanation(const Manager *m, ExplainWatchInfo *w, Explanation *e) {
        explain_watch_info(w);
        if (!w->known || w->pid != m->target.pid || w->starttime != m->target.starttime)
                return false;
        if (m->have_last && m->last_sample.pid == w->pid)
                explain_input_from_sample(&w->input, &m->last_sample);
        explain(&w->input, m->target.spec.kind == TARGET_UNIT ? m->target.spec.value : NULL, e);
        return true;
}

static json_object *memory_json(const Manager *m, usec_t now) {
        _cleanup_free_ ExplainWatchInfo *w = malloc(sizeof(ExplainWatchInfo));
        _cleanup_free_ Explanation *e = malloc(sizeof(Explanation));
        if (!w || !e || !manager_explanation(m, w, e))
                return NULL;
        json_object *o = explanation_json(w->pid, m->target.comm, m->target.has_cgroup ? m->target.cgroup : NULL,
                                          &w->input, e, w->notes);
        json_object_object_add(o, "measured_s_ago", json_object_new_uint64((now - w->when) / USEC_PER_SEC));
        return o;
}

json_object *manager_status_json(const Manager *m) {
        json_object *o = json_object_new_object(), *hist = json_object_new_array();
        usec_t now = now_clock(CLOCK_MONOTONIC);

        json_object_object_add(o, "version", json_object_new_string(MEMGOV_VERSION));
        json_object_object_add(o, "instance", json_object_new_string(m->instance));
        json_object_object_add(o, "target", target_json(m));
        json_object_object_add(o, "cgroup_mode", json_object_new_string(cgroup_mode_to_string(m->roots.mode)));
        json_object_object_add(o, "memory_controller_v2", json_object_new_boolean(m->roots.memory_v2));
        json_object_object_add(o, "policy", json_object_new_string(m->policy_origin));
        json_object_object_add(o, "dry_run", json_object_new_boolean(m->opts.dry_run));
        json_object_object_add(o, "running_s", json_object_new_uint64((now - m->started) / USEC_PER_SEC));
        json_object_object_add(o, "samples", json_object_new_uint64(m->ticks));
        json_object_object_add(o, "psi_triggers", json_object_new_uint64(m->metrics.wakeups_psi));
        json_object_object_add(o, "governor", governor_json(m));
        json_object_object_add(o, "memory_events_notifications", json_object_new_uint64(m->metrics.wakeups_events));
        json_object_object_add(o, "level", json_object_new_string(level_to_string(engine_level(m->engine))));

        if (m->have_last) {
                const EngineOutput *out = &m->last;
                json_object_object_add(o, "sampled_s_ago", json_object_new_uint64((now - out->now) / USEC_PER_SEC));
                engine_output_add_json(o, out);
                json_object_object_add(o, "sample", sample_json(&m->last_sample));
        }
        uint64_t high;
        json_object_object_add(o, "memory_high_set", engine_memory_high(m->engine, &high) ? size_or_max_json(high) : NULL);
        json_object_object_add(o, "actions", actions_json(m));
        json_object_object_add(o, "restart_pending", json_object_new_boolean(engine_restart_pending(m->engine)));
        json_object_object_add(o, "worker", worker_json(m, now));
        json_object_object_add(o, "server", server_json(m));
        json_object_object_add(o, "memory", memory_json(m, now));

        for (unsigned i = 0; i < m->history_n; i++) {
                const HistoryEntry *h = &m->history[(m->history_head + i) % MANAGER_HISTORY];
                json_object *e = json_object_new_object();
                json_object_object_add(e, "time", time_json(h->mono, h->wall, h->utc_offset, m->started));
                json_object_object_add(e, "kind", json_object_new_string(decision_name(&h->decision)));
                json_object_object_add(e, "level", json_object_new_string(level_to_string(h->decision.level)));
                if (decision_is_action(&h->decision)) {
                        json_object *params = json_object_new_object();
                        decision_params_add_json(params, &h->decision);
                        json_object_object_add(e, "params", params);
                }
                json_object_object_add(e, "line", json_object_new_string(h->line));
                json_object_object_add(e, "result", h->result[0] ? json_object_new_string(h->result) : NULL);
                json_object_object_add(e, "error", h->error ? json_object_new_int(h->error) : NULL);
                json_object_array_add(hist, e);
        }
        json_object_object_add(o, "history", hist);
        return o;
}
