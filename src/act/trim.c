/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "inject-site.h"
#include "memgov/clock.h"
#include "memgov/maps-reader.h"
#include "memgov/fileio.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/target.h"
#include "memgov/units.h"
#include "trim.h"

#define CAP_SYS_PTRACE_BIT 19


int process_rss(pid_t pid, uint64_t *ret) {
        assert(ret);
        ProcStatus st;
        int r = proc_read_status(AT_FDCWD, pid, &st);
        if (r < 0)
                return r;
        *ret = st.vm_rss;
        return 0;
}

int trim_ptrace_preflight(pid_t pid, char *why, size_t why_size) {
        assert(why);
        ProcStatus target, self;
        char buf[16];
        int r;

        if ((r = proc_read_status(AT_FDCWD, pid, &target)) < 0) {
                snprintf(why, why_size, "process %d: %s", (int) pid, strerror(-r));
                return r == -ENOENT ? -ESRCH : r;
        }
        if ((r = proc_read_status(AT_FDCWD, getpid(), &self)) < 0)
                return r;
        bool cap = self.cap[CAP_SET_EFFECTIVE] & (1ULL << CAP_SYS_PTRACE_BIT);

        long scope = 0;
        if (read_small_file_at(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) > 0)
                scope = strtol(buf, NULL, 10);
        if (scope >= 3) {
                snprintf(why, why_size, "Yama ptrace_scope is 3: no process may be traced on this host "
                                        "(use trim method sql)");
                return -EPERM;
        }
        if (scope >= 1 && !cap) {
                snprintf(why, why_size, "Yama ptrace_scope is %ld and memgov lacks CAP_SYS_PTRACE", scope);
                return -EPERM;
        }
        if (!cap && self.euid != target.ruid) {
                snprintf(why, why_size, "process %d belongs to uid %u and memgov lacks CAP_SYS_PTRACE", (int) pid,
                         (unsigned) target.ruid);
                return -EPERM;
        }
        if (target.tracer_pid != 0) {
                snprintf(why, why_size, "process %d is already traced by process %d (a debugger?)", (int) pid,
                         (int) target.tracer_pid);
                return -EBUSY;
        }
        if (target.shadow_stack) {
                snprintf(why, why_size, "process %d runs with a CET shadow stack: injection is not attempted", (int) pid);
                return -EOPNOTSUPP;
        }
        return 0;
}

int trim_plan(pid_t pid, TrimPlan *ret, char *why, size_t why_size) {
        assert(ret);
        assert(why);
        _cleanup_(inject_site_done) InjectSite site = {};
        int r;

        *ret = (TrimPlan) { .pid = pid };
        if ((r = inject_site_open(pid, &site, why, why_size)) < 0)
                return r;
        ret->allocator = site.allocator;
        ret->stub_addr = site.stub_addr;
        ret->mailbox_addr = site.mailbox_addr;
        ret->mailbox_room = site.mailbox_room;
        switch (site.allocator) {
        case ALLOCATOR_GLIBC:
                ret->function = "malloc_trim";
                break;
        case ALLOCATOR_JEMALLOC:
                ret->function = "mallctl";
                ret->arg_string = "arena.4096.purge"; /* MALLCTL_ARENAS_ALL */
                break;
        case ALLOCATOR_TCMALLOC:
                ret->function = "MallocExtension_ReleaseFreeMemory";
                break;
        default:
                snprintf(why, why_size, "process %d: unknown allocator", (int) pid);
                return -EOPNOTSUPP;
        }
        const char *library;
        if ((r = inject_site_symbol(&site, ret->function, &ret->fn_addr, &library, why, why_size)) < 0)
                return r;
        snprintf(ret->library, sizeof(ret->library), "%s", library);
        return 0;
}

int trim_by_ptrace(pid_t pid, uint64_t starttime, pid_t tid, bool dry_run, int phase_fd, TrimReport *ret, char *why,
                   size_t why_size) {
        assert(ret);
        assert(why);
        TrimPlan plan;
        int r;

        *ret = (TrimReport) { .method = TRIM_PTRACE };
        /* The process the plan is made for (the caller's, when it knows it): the injection checks,
         * once it holds a thread, that the pid still names it. */
        usec_t t0 = now_clock(CLOCK_MONOTONIC);
        ProcStat st;
        if ((r = proc_read_stat(AT_FDCWD, pid, &st)) < 0) {
                snprintf(why, why_size, "process %d: %s", (int) pid, strerror(-r));
                return r;
        }
        if (starttime && st.starttime != starttime) {
                snprintf(why, why_size, "process %d is not the server any more (pid reused)", (int) pid);
                return -ESRCH;
        }
        if ((r = trim_ptrace_preflight(pid, why, why_size)) < 0)
                return r;
        if ((r = trim_plan(pid, &plan, why, why_size)) < 0)
                return r;
        ret->allocator = plan.allocator;
        ret->function = plan.function;

        InjectRequest q = {
                .pid = pid,
                .tid = tid,
                .starttime = st.starttime,
                .fn = plan.fn_addr,
                .data = plan.arg_string,
                .data_size = plan.arg_string ? strlen(plan.arg_string) + 1 : 0,
                .args_in_data = plan.arg_string ? 1 : 0,
                .stub_addr = plan.stub_addr,
                .mailbox_addr = plan.mailbox_addr,
                .mailbox_room = plan.mailbox_room,
                .dry_run = dry_run,
                .phase_fd = phase_fd,
        };
        ret->planning = now_clock(CLOCK_MONOTONIC) - t0;
        (void) process_rss(pid, &ret->rss_before);
        r = inject_call_retrying(&q, &ret->inject, why, why_size);
        if (r < 0 || dry_run)
                return r;
        ret->duration = ret->inject.call;
        if (process_rss(pid, &ret->rss_after) == 0 && ret->rss_before > 0) {
                ret->has_freed = true;
                ret->freed = ret->rss_before > ret->rss_after ? ret->rss_before - ret->rss_after : 0;
        }
        ret->took = now_clock(CLOCK_MONOTONIC) - t0;
        return 0;
}

typedef struct TrimAnswer {
        bool null; /* NULL: another trim within the function's interval, nothing trimmed now */
        uint64_t freed;
} TrimAnswer;

static int parse_freed(void *userdata, unsigned n, char **row) {
        TrimAnswer *a = userdata;
        if (n >= 1 && row[0])
                a->freed = strtoull(row[0], NULL, 10);
        else
                a->null = true;
        return 0;
}

/* How the function is installed: memgov(8), TRIM OVER SQL. */
#define TRIM_UDF_HINT                                                                                    \
        "copy memgov_udf.so into the server's plugin_dir, then CREATE FUNCTION memgov_trim RETURNS "     \
        "INTEGER SONAME 'memgov_udf.so'; see memgov(8)"

static int count_row(void *userdata, unsigned n, char **row) {
        (*(unsigned *) userdata)++;
        return 0;
}

static Allocator detect_allocator(pid_t pid) {
        ProcMaps m;
        if (maps_read_summary(AT_FDCWD, pid, &m) < 0)
                return ALLOCATOR_UNKNOWN;
        return m.allocator;
}

int trim_by_sql(const Policy *p, pid_t pid, bool dry_run, TrimReport *ret, char *why, size_t why_size) {
        assert(p);
        assert(ret);
        assert(why);
        _cleanup_sql_ SqlConn c = {};
        int r;

        *ret = (TrimReport) { .method = TRIM_SQL, .function = "memgov_trim()", .allocator = detect_allocator(pid) };
        r = sql_connect(p, pid, &c, why, why_size);
        if (r < 0)
                return r;
        if (dry_run) {
                /* Everything but the call: is the function there? */
                unsigned rows = 0;
                r = sql_run(&c, "SELECT 1 FROM mysql.func WHERE name = 'memgov_trim'", count_row, &rows, why, why_size);
                if (r >= 0 && rows == 0) {
                        snprintf(why, why_size, "memgov_trim() is not installed in the server (" TRIM_UDF_HINT ")");
                        return -ENOENT;
                }
                return r;
        }
        TrimAnswer answer = {};
        (void) process_rss(pid, &ret->rss_before);
        usec_t t0 = now_clock(CLOCK_MONOTONIC);
        r = sql_run(&c, "SELECT memgov_trim()", parse_freed, &answer, why, why_size);
        ret->duration = now_clock(CLOCK_MONOTONIC) - t0;
        if (r == -ENOENT) {
                snprintf(why, why_size, "memgov_trim() is not installed in the server (" TRIM_UDF_HINT ")");
                return r;
        }
        if (r < 0)
                return r;
        /* Not a trim that freed nothing, which would mark the rung as not helping: an account
         * calling the function every 10 s would keep memgov's trim from ever counting. */
        if (answer.null) {
                ret->not_done = true;
                return 0;
        }
        (void) process_rss(pid, &ret->rss_after);
        ret->has_freed = true;
        ret->freed = ret->rss_after && ret->rss_before > ret->rss_after ? ret->rss_before - ret->rss_after : answer.freed;
        return 0;
}

int trim_run(const Policy *p, pid_t pid, uint64_t starttime, pid_t tid, TrimMethod method, bool dry_run, int phase_fd,
             TrimReport *ret, char *why, size_t why_size) {
        assert(ret);
        assert(why);
        int r;

        if (method == TRIM_SQL)
                return trim_by_sql(p, pid, dry_run, ret, why, why_size);
        r = trim_by_ptrace(pid, starttime, tid, dry_run, phase_fd, ret, why, why_size);
        if (r < 0 && method == TRIM_AUTO && (r == -EPERM || r == -EOPNOTSUPP || r == -EBUSY || r == -EAGAIN)) {
                /* ptrace refused: say so, then the next method. */
                char first[512];
                snprintf(first, sizeof(first), "%s", why);
                TrimReport sql;
                int s = trim_by_sql(p, pid, dry_run, &sql, why, why_size);
                if (s >= 0) {
                        *ret = sql;
                        return 0;
                }
                char second[512];
                snprintf(second, sizeof(second), "%s", why);
                snprintf(why, why_size, "ptrace: %s; sql: %s", first, second);
        }
        return r;
}

void trim_report_text(pid_t pid, const TrimReport *r, int error, const char *why, bool dry_run, char *buf, size_t size) {
        assert(r);
        assert(buf);
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX], t1[FORMAT_TIMESPAN_MAX], t2[FORMAT_TIMESPAN_MAX];

        if (error < 0) {
                snprintf(buf, size, "trim of %d failed (%s): %s", (int) pid, trim_method_to_string(r->method),
                         why && why[0] ? why : strerror(-error));
                return;
        }
        if (dry_run && r->method == TRIM_SQL) {
                snprintf(buf, size, "would call memgov_trim() over SQL in process %d", (int) pid);
                return;
        }
        if (r->method == TRIM_SQL && r->not_done) {
                snprintf(buf, size, "memgov_trim() over SQL in %d trimmed nothing: another trim ran in the server "
                                    "within its last 10 s (any account may call the function); not counted",
                         (int) pid);
                return;
        }
        if (r->method == TRIM_SQL) {
                snprintf(buf, size, "%s memgov_trim() over SQL in %d: call %s, RSS %s -> %s, freed %s",
                         allocator_to_string(r->allocator), (int) pid,
                         format_timespan(t2, r->duration), format_bytes_change(a, b, r->rss_before, r->rss_after), b,
                         format_bytes(c, r->freed));
                return;
        }
        if (dry_run) {
                snprintf(buf, size, "would call %s %s in thread %d of %d (blocked in %s)",
                         allocator_to_string(r->allocator), r->function, (int) r->inject.tid, (int) pid,
                         r->inject.syscall_name);
                return;
        }
        /* How long it took in all, and where: on a swamped server (MySQL 9.7, a connection storm,
         * 1 emulated CPU) a trim held 15-205 ms had its result 13-20 s after its decision, and
         * nothing said how much of it was the trim's own. */
        char t3[FORMAT_TIMESPAN_MAX], t4[FORMAT_TIMESPAN_MAX];
        snprintf(buf, size, "%s %s in thread %d of %d (blocked in %s): in %s (finding the function %s; %u thread(s) "
                 "tried), held %s, call %s, RSS %s -> %s, freed %s",
                 allocator_to_string(r->allocator), r->function, (int) r->inject.tid, (int) pid, r->inject.syscall_name,
                 format_timespan(t3, r->took), format_timespan(t4, r->planning), r->inject.tried,
                 format_timespan(t1, r->inject.held), format_timespan(t2, r->duration), format_bytes_change(a, b, r->rss_before, r->rss_after),
                 b, format_bytes(c, r->freed));
}

json_object *trim_report_json(pid_t pid, const TrimReport *r, int error, const char *why, bool dry_run) {
        assert(r);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "pid", json_object_new_int(pid));
        json_object_object_add(o, "ok", json_object_new_boolean(error >= 0));
        json_object_object_add(o, "error", error < 0 ? json_object_new_string(why && why[0] ? why : strerror(-error)) : NULL);
        json_object_object_add(o, "dry_run", json_object_new_boolean(dry_run));
        json_object_object_add(o, "method", json_object_new_string(trim_method_to_string(r->method)));
        json_object_object_add(o, "allocator", json_object_new_string(allocator_to_string(r->allocator)));
        json_object_object_add(o, "function", r->function ? json_object_new_string(r->function) : NULL);
        json_object_object_add(o, "thread", r->inject.tid ? json_object_new_int(r->inject.tid) : NULL);
        json_object_object_add(o, "syscall", r->inject.syscall_name ? json_object_new_string(r->inject.syscall_name) : NULL);
        json_object_object_add(o, "held_us", json_object_new_uint64(r->inject.held));
        json_object_object_add(o, "call_us", json_object_new_uint64(r->duration));
        json_object_object_add(o, "took_us", json_object_new_uint64(r->took));
        json_object_object_add(o, "planning_us", json_object_new_uint64(r->planning));
        json_object_object_add(o, "threads_tried", json_object_new_uint64(r->inject.tried));
        json_object_object_add(o, "completed", json_object_new_boolean(r->inject.completed));
        json_object_object_add(o, "returned", json_object_new_uint64(r->inject.ret));
        json_object_object_add(o, "rss_before", json_object_new_uint64(r->rss_before));
        json_object_object_add(o, "rss_after", json_object_new_uint64(r->rss_after));
        json_object_object_add(o, "freed", json_object_new_uint64(r->freed));
        /* sql: the function trimmed nothing, another trim having run within its interval */
        json_object_object_add(o, "not_done", json_object_new_boolean(r->not_done));
        return o;
}

/* The trim rung's actuator. */
int trim_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        const ActionTarget *t = c->target;
        char why[512];
        TrimReport rep;

        if (t->pid <= 0)
                return action_fail(ret, -ESRCH, "trim: no server process in %s", t->description);
        if (action_target_check(t) < 0)
                return action_fail(ret, -ESRCH, "trim: process %d is not the server any more", (int) t->pid);
        int r = trim_run(c->policy, t->pid, t->starttime, 0, d->trim.method, c->dry_run, -1, &rep, why, sizeof(why));
        trim_report_text(t->pid, &rep, r, why, c->dry_run, ret->detail, sizeof(ret->detail));
        if (r < 0) {
                ret->explained = why[0] != '\0'; /* the injection's or the server's own words */
                return r;
        }
        ret->not_done = rep.not_done;
        if (rep.has_freed && !c->dry_run) {
                ret->has_freed = true;
                ret->freed = rep.freed;
        }
        if (!c->dry_run && rep.method == TRIM_PTRACE)
                ret->held = rep.inject.held;
        return 0;
}
