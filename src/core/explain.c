/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "memgov/explain.h"
#include "memgov/macro.h"
#include "memgov/units.h"

static const struct {
        const char *name, *label;
} parts[_PART_MAX] = {
        [PART_PAGE_CACHE] = { "page_cache", "page cache" },
        [PART_SHMEM] = { "shmem", "shared memory" },
        [PART_KERNEL] = { "kernel", "kernel" },
        [PART_OTHER_PROCESSES] = { "other_processes", "other processes" },
        [PART_POOL] = { "buffer_pool", "buffer pool" },
        [PART_SERVER_OTHER] = { "server_other", "server, other" },
        [PART_SESSIONS] = { "sessions", "sessions" },
        [PART_IN_USE_UNCOUNTED] = { "in_use_uncounted", "in use, uncounted" },
        [PART_ALLOCATOR_FREE] = { "allocator_free", "allocator free" },
        [PART_UNACCOUNTED] = { "unaccounted", "unaccounted" },
};

const char *explain_part_to_string(ExplainPart p) {
        return p < _PART_MAX ? parts[p].name : NULL;
}

const char *explain_part_label(ExplainPart p) {
        return p < _PART_MAX ? parts[p].label : NULL;
}

static const char *const finding_names[_FINDING_KIND_MAX] = {
        [FINDING_ALLOCATOR_RETENTION] = "allocator-retention",
        [FINDING_SESSION_GROWTH] = "session-growth",
        [FINDING_POOL_TOO_LARGE] = "pool-too-large",
        [FINDING_STORM_RISK] = "storm-risk",
        [FINDING_PRESSURE_LISTENER_IDLE] = "pressure-listener-idle",
        [FINDING_UNCOUNTED_IN_USE] = "uncounted-in-use",
};

const char *finding_kind_to_string(FindingKind k) {
        return k < _FINDING_KIND_MAX ? finding_names[k] : NULL;
}

/* Takes up to want out of *left: what a measured part may claim of the memory not claimed yet. */
static uint64_t claim(uint64_t want, uint64_t *left, uint64_t *over) {
        uint64_t got = MIN(want, *left);
        *left -= got;
        *over += want - got;
        return got;
}

static void set(Explanation *e, ExplainPart p, uint64_t v) {
        e->has[p] = true;
        e->parts[p] = v;
}

static void split(const ExplainInput *in, Explanation *e) {
        uint64_t server_anon = 0;

        if (in->has_cgroup) {
                const MemoryStat *st = &in->stat;
                e->total = in->current;
                e->total_source = "memory.current";
                uint64_t left = in->current;
                set(e, PART_PAGE_CACHE, claim(st->active_file + st->inactive_file, &left, &e->overcounted));
                set(e, PART_SHMEM, claim(st->shmem, &left, &e->overcounted));
                /* memory.stat's file counts shmem too; the kernel's part is what is neither. */
                uint64_t anon = MIN(st->anon, left);
                set(e, PART_KERNEL, left - anon);
                left = anon;
                server_anon = in->has_process ? MIN(in->rss_anon, anon) : anon;
                set(e, PART_OTHER_PROCESSES, anon - server_anon);
        } else if (in->has_process) {
                e->total = in->rss_anon + in->rss_file + in->rss_shmem;
                e->total_source = "RSS";
                set(e, PART_PAGE_CACHE, in->rss_file);
                set(e, PART_SHMEM, in->rss_shmem);
                server_anon = in->rss_anon;
        } else
                return;

        /* The server's anonymous memory: what it and its allocator say, the rest unaccounted. */
        uint64_t left = server_anon;
        if (in->has_pool)
                set(e, PART_POOL, claim(in->pool, &left, &e->overcounted));
        if (in->has_sessions)
                set(e, PART_SESSIONS, claim(in->sessions_total, &left, &e->overcounted));
        if (in->has_allocator)
                set(e, PART_ALLOCATOR_FREE, claim(in->allocator.free, &left, &e->overcounted));
        uint64_t counted = in->has_sessions ? in->sessions_total : 0;
        if (in->has_accounted) {
                /* The server's own count comes last: the allocator's figures are measured, the
                 * server's bookkeeping may run ahead (seen: MariaDB 11.8's Memory_used 561M with
                 * 302M in use by mallinfo2). What it says beyond what the allocator has handed
                 * out is its bookkeeping, said apart. */
                uint64_t other = in->has_sessions ? SUB_CLAMP(in->accounted, in->sessions_total) : in->accounted;
                if (in->has_allocator) {
                        uint64_t cap = in->has_sessions ? SUB_CLAMP(in->allocator.in_use, in->sessions_total)
                                                        : in->allocator.in_use;
                        e->server_count_excess = SUB_CLAMP(other, cap);
                        other = MIN(other, cap);
                }
                set(e, PART_SERVER_OTHER, claim(other, &left, &e->overcounted));
                counted += other;
        }
        /* What the allocator has in use beyond all the server counts: outside its instruments. */
        if (in->has_allocator && (in->has_accounted || in->has_sessions))
                set(e, PART_IN_USE_UNCOUNTED, claim(SUB_CLAMP(in->allocator.in_use, counted), &left, &e->overcounted));
        set(e, PART_UNACCOUNTED, left);
}

static Finding *add(Explanation *e, FindingKind k) {
        assert(e->n_findings < _FINDING_KIND_MAX);
        Finding *f = &e->findings[e->n_findings++];
        *f = (Finding) { .kind = k };
        return f;
}

/* Worth a line: a tenth of the total, and at least 32 MiB. */
static bool significant(const Explanation *e, uint64_t v) {
        return v >= (UINT64_C(32) << 20) && v >= e->total / 10;
}

static const char *percent(char buf[static 16], uint64_t part, uint64_t whole) {
        snprintf(buf, 16, "%.0f%%", whole ? 100.0 * (double) part / (double) whole : 0.0);
        return buf;
}

static void rule_allocator(const ExplainInput *in, const char *unit, Explanation *e) {
        if (!in->has_allocator || !significant(e, e->parts[PART_ALLOCATOR_FREE]))
                return;
        const AllocatorStats *a = &in->allocator;
        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], b3[FORMAT_BYTES_MAX], pc[16];
        Finding *f = add(e, FINDING_ALLOCATOR_RETENTION);
        f->gives_back = MIN(a->releasable, e->parts[PART_ALLOCATOR_FREE]);
        f->gives_back_known = true;
        int n = snprintf(f->evidence, sizeof(f->evidence), "%s says %s free of a %s heap (%s of %s), %s of it in use",
                         a->source, format_bytes(b1, a->free), format_bytes(b2, a->heap),
                         percent(pc, e->parts[PART_ALLOCATOR_FREE], e->total), e->total_source,
                         format_bytes(b3, a->in_use));
        if (a->allocator == ALLOCATOR_GLIBC && in->has_process && n > 0 && (size_t) n < sizeof(f->evidence))
                snprintf(f->evidence + n, sizeof(f->evidence) - (size_t) n, "; %u arenas (cap %u: 8 x %u cores)",
                         in->arena_heaps + 1, 8 * MAX(in->cpus, 1U), MAX(in->cpus, 1U));
        const char *u = unit ? unit : "the server's unit";
        switch (a->allocator) {
        case ALLOCATOR_GLIBC:
                snprintf(f->fix, sizeof(f->fix),
                         "run the server on jemalloc, which gives freed memory back on its own: `systemctl edit %s`\n"
                         "  [Service]\n"
                         "  Environment=\"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2\"\n"
                         "  Environment=\"MALLOC_CONF=background_thread:true,dirty_decay_ms:5000,muzzy_decay_ms:5000\"\n"
                         "then restart it (Debian: apt install libjemalloc2). Or, with no new library, "
                         "Environment=\"MALLOC_ARENA_MAX=2\" (fewer arenas to hold free memory; a published "
                         "comparison measured 4%% fewer queries a second). Until then `memgov trim` gives back "
                         "what of it lies in whole free pages (large freed blocks; little of small scattered ones).",
                         u);
                break;
        case ALLOCATOR_TCMALLOC:
                snprintf(f->fix, sizeof(f->fix),
                         "have tcmalloc give free pages back sooner: `systemctl edit %s`\n"
                         "  [Service]\n"
                         "  Environment=\"TCMALLOC_RELEASE_RATE=10\"\n"
                         "then restart it (the default is 1; 0 never gives back). Until then `memgov trim` "
                         "gives it back.",
                         u);
                break;
        case ALLOCATOR_JEMALLOC:
                snprintf(f->fix, sizeof(f->fix),
                         "have jemalloc purge on its own thread: `systemctl edit %s`\n"
                         "  [Service]\n"
                         "  Environment=\"MALLOC_CONF=background_thread:true,dirty_decay_ms:5000,muzzy_decay_ms:5000\"\n"
                         "then restart it. Until then `memgov trim` gives it back.",
                         u);
                break;
        default:
                break;
        }
}

static void rule_sessions(const ExplainInput *in, Explanation *e) {
        if (!in->has_sessions || in->n_top == 0 || !significant(e, e->parts[PART_SESSIONS]))
                return;
        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], b3[FORMAT_BYTES_MAX], b4[FORMAT_BYTES_MAX], pc[16];
        const Session *top = &in->top[0];
        Finding *f = add(e, FINDING_SESSION_GROWTH);
        /* What a limit at four times the median session would give back: each larger session's
         * excess (of the ones listed). */
        uint64_t limit = MAX(in->sessions_median * 4, UINT64_C(16) << 20);
        for (unsigned i = 0; i < in->n_top; i++)
                if (in->top[i].memory > limit)
                        f->gives_back += in->top[i].memory - limit;
        f->gives_back_known = true;
        snprintf(f->evidence, sizeof(f->evidence),
                 "%u sessions hold %s (%s of %s); the largest, %s@%s (%s, id %llu), holds %s; the median %s",
                 in->n_sessions, format_bytes(b1, in->sessions_total), percent(pc, e->parts[PART_SESSIONS], e->total),
                 e->total_source, top->user, top->host, top->command, (unsigned long long) top->id,
                 format_bytes(b2, top->memory), format_bytes(b3, in->sessions_median));
        format_bytes(b4, limit);
        if (in->flavor == SERVER_MARIADB)
                snprintf(f->fix, sizeof(f->fix),
                         "cap each session's memory in the server:\n"
                         "  SET GLOBAL max_session_mem_used = %llu;  -- %s, 4 x the median session\n"
                         "and the same in the server's option file ([mariadbd] max_session_mem_used = %s); a query "
                         "past it fails, the session stays. Or have the application's connection pool reset or "
                         "recycle its connections (memory held by a session goes only when it ends).",
                         (unsigned long long) limit, b4, b4);
        else
                snprintf(f->fix, sizeof(f->fix),
                         "cap each connection's memory in the server (privileged accounts are exempt):\n"
                         "  SET PERSIST global_connection_memory_tracking = ON;\n"
                         "  SET PERSIST connection_memory_limit = %llu;  -- %s, 4 x the median session\n"
                         "a statement past it fails. Or have the application's connection pool reset or recycle "
                         "its connections (memory held by a session goes only when it ends).",
                         (unsigned long long) limit, b4);
}

static uint64_t round_down(uint64_t v, uint64_t unit) {
        return unit ? v / unit * unit : v;
}

/* What the pool grows to: its configured size, else (a trace) what it had in use. */
static uint64_t pool_configured(const ExplainInput *in) {
        return in->pool_size ? in->pool_size : in->pool;
}

static void rule_pool(const ExplainInput *in, Explanation *e) {
        uint64_t pool = pool_configured(in);
        if (!in->has_pool || !in->has_cgroup || in->limit == SIZE_UNLIMITED || in->limit == 0 || pool == 0)
                return;
        /* The pool fits when everything else plus the pool stays under 90% of the limit: the rest
         * is the headroom a burst of sessions, a sort, a restart's recovery need. */
        uint64_t room = in->limit / 10 * 9;
        uint64_t rest = e->total > e->parts[PART_POOL] ? e->total - e->parts[PART_POOL] : 0;
        uint64_t unit = in->pool_unit ? in->pool_unit : UINT64_C(1) << 20;
        uint64_t fits = rest < room ? round_down(room - rest, unit) : 0;
        if (fits >= pool)
                return;
        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], b3[FORMAT_BYTES_MAX], b4[FORMAT_BYTES_MAX],
                b5[FORMAT_BYTES_MAX];
        Finding *f = add(e, FINDING_POOL_TOO_LARGE);
        f->gives_back = pool - fits;
        f->gives_back_known = true;
        snprintf(f->evidence, sizeof(f->evidence),
                 "the buffer pool is configured at %s; the rest of %s is %s; 90%% of memory.max %s leaves %s for "
                 "the pool",
                 format_bytes(b1, pool), e->total_source, format_bytes(b2, rest), format_bytes(b3, in->limit),
                 format_bytes(b4, room > rest ? room - rest : 0));
        format_bytes(b5, fits);
        if (fits == 0)
                snprintf(f->fix, sizeof(f->fix),
                         "no buffer pool fits: the rest alone is past 90%% of the limit; raise memory.max, or "
                         "find what the rest is (the parts above)");
        else
                snprintf(f->fix, sizeof(f->fix),
                         "  SET GLOBAL innodb_buffer_pool_size = %llu;  -- %s = 90%% of %s - %s, rounded down to %s\n"
                         "and the same in the server's option file; or raise memory.max by %s.",
                         (unsigned long long) fits, b5, b3, b2, format_bytes(b4, unit), format_bytes(b1, pool - fits));
}

static void rule_storm(const ExplainInput *in, Explanation *e) {
        if (!in->has_connections || !in->has_cgroup || in->limit == SIZE_UNLIMITED || in->per_connection == 0 ||
            in->max_connections <= in->connected)
                return;
        uint64_t headroom = in->limit > e->total ? in->limit - e->total : 0;
        uint64_t more = in->max_connections - in->connected;
        if (more * in->per_connection <= headroom)
                return;
        uint64_t fit = headroom / in->per_connection;
        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], b3[FORMAT_BYTES_MAX];
        Finding *f = add(e, FINDING_STORM_RISK);
        snprintf(f->evidence, sizeof(f->evidence),
                 "max_connections %llu, %llu connected: %llu more at up to %s each of their buffers is %s, past the "
                 "%s left under memory.max",
                 (unsigned long long) in->max_connections, (unsigned long long) in->connected,
                 (unsigned long long) more, format_bytes(b1, in->per_connection),
                 format_bytes(b2, more * in->per_connection), format_bytes(b3, headroom));
        snprintf(f->fix, sizeof(f->fix),
                 "  SET GLOBAL max_connections = %llu;  -- the %llu connected and the %llu whose buffers fit\n"
                 "or smaller per-connection buffers (sort_buffer_size, join_buffer_size, read_rnd_buffer_size); "
                 "memgov's admission rung lowers it only while memory is short.",
                 (unsigned long long) (in->connected + fit), (unsigned long long) in->connected,
                 (unsigned long long) fit);
}

static const char *const pressure_access_names[_PRESSURE_ACCESS_MAX] = {
        [PRESSURE_ACCESS_UNKNOWN] = "unknown",     [PRESSURE_ACCESS_WRITABLE] = "writable",
        [PRESSURE_ACCESS_NO_FILE] = "no-file",     [PRESSURE_ACCESS_READ_ONLY] = "read-only",
        [PRESSURE_ACCESS_DENIED] = "denied",
};

const char *pressure_access_to_string(PressureAccess a) {
        return a < _PRESSURE_ACCESS_MAX ? pressure_access_names[a] : NULL;
}

/* Why the listener cannot arm its trigger, and what lets it: "" when nothing stops it. For a
 * unit, a read-only mount is ProtectControlGroups= (Debian's mariadb.service sets it), and the
 * file, root's, is handed to the server's uid before it starts. */
static void pressure_blocked(const ExplainInput *in, const char *unit, char *why, size_t why_size, char *fix,
                             size_t fix_size) {
        char ids[160] = "", chown[384] = "";
        why[0] = fix[0] = '\0';
        if (in->pressure_access != PRESSURE_ACCESS_READ_ONLY && in->pressure_access != PRESSURE_ACCESS_DENIED) {
                if (in->pressure_access == PRESSURE_ACCESS_NO_FILE) {
                        snprintf(why, why_size,
                                 "the server finds no memory.pressure in its cgroup (a kernel without PSI, or booted "
                                 "with psi=0, or no cgroup v2 file system where it looks): the listener never started");
                        snprintf(fix, fix_size, "boot the kernel with psi=1 on cgroup v2, or leave the pool to memgov's pool step");
                }
                return;
        }
        if (in->pressure_ids_deny) {
                snprintf(ids, sizeof(ids), "the server (uid %u) cannot write its cgroup's memory.pressure (owner uid %u, mode %03o)",
                         (unsigned) in->server_uid, (unsigned) in->pressure_owner, in->pressure_mode & 0777);
                if (in->pressure_path[0])
                        snprintf(chown, sizeof(chown), "  ExecStartPre=+/bin/chown %u %s\n", (unsigned) in->server_uid,
                                 in->pressure_path);
        }
        if (in->pressure_access == PRESSURE_ACCESS_READ_ONLY)
                snprintf(why, why_size,
                         "the server sees its cgroup file system mounted read-only%s%s, so the listener cannot arm its "
                         "trigger on memory.pressure at startup: it never started",
                         ids[0] ? ", and " : "", ids);
        else
                snprintf(why, why_size, "%s, where the listener arms its trigger at startup: it never started", ids);

        if (unit && (in->pressure_access == PRESSURE_ACCESS_READ_ONLY || chown[0]))
                snprintf(fix, fix_size,
                         "let it write the file: `systemctl edit %s`\n"
                         "  [Service]\n"
                         "%s%s"
                         "then restart it%s",
                         unit, in->pressure_access == PRESSURE_ACCESS_READ_ONLY ? "  ProtectControlGroups=false\n" : "",
                         chown,
                         in->pressure_access == PRESSURE_ACCESS_READ_ONLY
                                 ? " (the cgroup file system becomes writable to the server where its permissions "
                                   "allow: this one file)"
                                 : "");
        else if (in->pressure_access == PRESSURE_ACCESS_READ_ONLY)
                snprintf(fix, fix_size,
                         "mount the container's own cgroup read-write (its runtime's option)%s, or leave the pool to "
                         "memgov's pool step",
                         ids[0] ? " and let its uid write memory.pressure" : "");
        else
                snprintf(fix, fix_size,
                         "give uid %u write access to %s before the server starts (a cgroup delegated to it), then "
                         "restart it",
                         (unsigned) in->server_uid, in->pressure_path[0] ? in->pressure_path : "its memory.pressure");
}

static void rule_pressure_listener(const ExplainInput *in, const char *unit, Explanation *e) {
        uint64_t pool = pool_configured(in);
        if (in->flavor != SERVER_MARIADB || !in->has_auto_min || !in->has_pool || !significant(e, pool))
                return;
        char why[512], blocked_fix[640];
        pressure_blocked(in, unit, why, sizeof(why), blocked_fix, sizeof(blocked_fix));
        const bool at_default = in->auto_min >= pool;
        if (!at_default && !why[0])
                return;

        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], auto_min_fix[256] = "";
        uint64_t half = round_down(pool / 2, in->pool_unit ? in->pool_unit : UINT64_C(1) << 20);
        if (at_default)
                snprintf(auto_min_fix, sizeof(auto_min_fix),
                         "  SET GLOBAL innodb_buffer_pool_size_auto_min = %llu;  -- %s: the pool may halve under pressure",
                         (unsigned long long) half, format_bytes(b2, half));
        Finding *f = add(e, FINDING_PRESSURE_LISTENER_IDLE);
        if (why[0] && at_default)
                snprintf(f->evidence, sizeof(f->evidence),
                         "%s; and innodb_buffer_pool_size_auto_min is %s, not below the pool's %s, so even started "
                         "it would do nothing",
                         why, format_bytes(b1, in->auto_min), format_bytes(b2, pool));
        else if (why[0])
                snprintf(f->evidence, sizeof(f->evidence), "%s (innodb_buffer_pool_size_auto_min is %s)", why,
                         format_bytes(b1, in->auto_min));
        else
                snprintf(f->evidence, sizeof(f->evidence),
                         "innodb_buffer_pool_size_auto_min is %s, not below the pool's %s: MariaDB's memory pressure "
                         "listener shrinks the pool toward it, so it does nothing",
                         format_bytes(b1, in->auto_min), format_bytes(b2, pool));
        if (why[0] && at_default)
                snprintf(f->fix, sizeof(f->fix), "%s; and\n%s\n(it never grows the pool back by itself)", blocked_fix,
                         auto_min_fix);
        else if (why[0])
                snprintf(f->fix, sizeof(f->fix), "%s", blocked_fix);
        else
                snprintf(f->fix, sizeof(f->fix),
                         "%s\n(it works only where the server can write its cgroup's memory.pressure%s; it never "
                         "grows the pool back by itself)",
                         auto_min_fix, in->pressure_access == PRESSURE_ACCESS_WRITABLE ? ", as it can here" : "");
}

static void rule_uncounted(const ExplainInput *in, Explanation *e) {
        uint64_t v = e->parts[PART_IN_USE_UNCOUNTED];
        if (!e->has[PART_IN_USE_UNCOUNTED] || !significant(e, v))
                return;
        char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], pc[16];
        Finding *f = add(e, FINDING_UNCOUNTED_IN_USE);
        snprintf(f->evidence, sizeof(f->evidence),
                 "the allocator has %s in use that the server does not count (%s of %s; %s says %s in use)",
                 format_bytes(b1, v), percent(pc, v, e->total), e->total_source, in->allocator.source,
                 format_bytes(b2, in->allocator.in_use));
        if (in->flavor == SERVER_MYSQL)
                snprintf(f->fix, sizeof(f->fix),
                         "memory outside performance_schema's instruments: turn them all on to see whose it is\n"
                         "  performance-schema-instrument = 'memory/%%=ON'   (in the option file; a restart)\n"
                         "then SELECT EVENT_NAME, CURRENT_NUMBER_OF_BYTES_USED FROM "
                         "performance_schema.memory_summary_global_by_event_name ORDER BY 2 DESC LIMIT 10. "
                         "If it grows with no instrument to show it, it is a library's or a plugin's: "
                         "record a trace (memgov run --record) and see it grow in memgov plot.");
        else
                snprintf(f->fix, sizeof(f->fix),
                         "memory the server's own count (Memory_used) does not track: a storage engine's, a "
                         "plugin's or a library's. If it grows, record a trace (memgov run --record) and see it "
                         "grow in memgov plot; restarting the server gives it back.");
}

void explain(const ExplainInput *in, const char *unit, Explanation *ret) {
        assert(in);
        assert(ret);
        *ret = (Explanation) {};
        split(in, ret);
        if (!ret->total_source)
                return;
        rule_allocator(in, unit, ret);
        rule_sessions(in, ret);
        rule_pool(in, ret);
        rule_storm(in, ret);
        rule_pressure_listener(in, unit, ret);
        rule_uncounted(in, ret);
}

void explain_input_from_sample(ExplainInput *in, const Sample *s) {
        assert(in);
        assert(s);
        in->has_cgroup = s->has & SAMPLE_HAS_CGROUP;
        if (in->has_cgroup) {
                in->current = s->memory_current;
                in->limit = s->memory_max;
                in->stat = (MemoryStat) { .anon = s->anon,
                                          .file = s->file,
                                          .shmem = s->shmem,
                                          .active_file = s->active_file,
                                          .inactive_file = s->inactive_file };
        }
        in->has_process = s->has & SAMPLE_HAS_PROCESS;
        if (in->has_process) {
                in->rss_anon = s->rss_anon;
                in->rss_file = SUB_CLAMP(s->rss, s->rss_anon);
                in->rss_shmem = 0;
                in->anon_maps = s->anon_maps;
        }
        /* A trace's: the server's own figures as the daemon last measured them. */
        if (s->has & SAMPLE_HAS_SERVER_MEMORY) {
                in->has_pool = true;
                in->pool = s->server_pool;
                in->has_accounted = s->server_accounted > 0;
                in->accounted = s->server_accounted;
                if (!in->accounted_source)
                        in->accounted_source = "the server's count";
                in->has_sessions = true;
                in->sessions_total = s->server_sessions;
        }
        if (s->has & SAMPLE_HAS_ALLOCATOR) {
                in->has_allocator = true;
                in->allocator.free = s->allocator_free;
                in->allocator.releasable = s->allocator_free;
                in->allocator.free_listed = MAX(in->allocator.free_listed, s->allocator_free);
                in->allocator.in_use = s->allocator_in_use;
                if (!in->allocator.source)
                        in->allocator.source = "the allocator";
        }
}

bool explain_sample(const Sample *s, Explanation *ret) {
        if (!(s->has & (SAMPLE_HAS_SERVER_MEMORY | SAMPLE_HAS_ALLOCATOR)))
                return false;
        ExplainInput in = {};
        explain_input_from_sample(&in, s);
        explain(&in, NULL, ret);
        return ret->total_source != NULL;
}
