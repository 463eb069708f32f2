/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <json-c/json.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "control.h"
#include "decision-log.h"
#include "manager.h"
#include "metrics-http.h"
#include "privileges-drop.h"
#include "memgov/clock.h"
#include "memgov/fileio.h"
#include "memgov/format.h"
#include "memgov/log.h"
#include "memgov/parse-cgroup.h"
#include "memgov/policy-file.h"
#include "memgov/pool-watch.h"
#include "memgov/privileges.h"
#include "memgov/sql.h"
#include "memgov/sql-keep.h"
#include "memgov/strutil.h"
#include "memgov/trace.h"
#include "memgov/units.h"

static int32_t local_utc_offset(usec_t wall) {
        time_t t = (time_t) (wall / USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&t, &tm))
                return 0;
        return (int32_t) tm.tm_gmtoff;
}

void target_instance_name(const TargetSpec *t, char *buf, size_t size) {
        assert(t);
        assert(buf);
        const char *v = t->value;
        char tmp[300];

        switch (t->kind) {
        case TARGET_UNIT: {
                const char *dot = strrchr(v, '.');
                size_t n = dot && streq(dot, ".service") ? (size_t) (dot - v) : strlen(v);
                snprintf(tmp, sizeof(tmp), "%.*s", (int) n, v);
                break;
        }
        case TARGET_CGROUP:
                snprintf(tmp, sizeof(tmp), "cgroup%s%s", v[0] == '/' ? "" : "-", v);
                break;
        case TARGET_PID:
                snprintf(tmp, sizeof(tmp), "pid-%d", (int) t->pid);
                break;
        default:
                snprintf(tmp, sizeof(tmp), "%s", v[0] ? v : TARGET_DEFAULT_PROCESSES);
                char *comma = strchr(tmp, ',');
                if (comma)
                        *comma = '\0';
                break;
        }
        /* A file name: no slashes, nothing a shell or a path would choke on. */
        size_t j = 0;
        for (size_t i = 0; tmp[i] && j + 1 < size; i++) {
                char c = tmp[i];
                if (c == '/')
                        c = j == 0 ? 0 : '-';
                else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                           c == '_' || c == '.' || c == '@'))
                        c = '_';
                if (c)
                        buf[j++] = c;
        }
        buf[j] = '\0';
        if (j == 0)
                snprintf(buf, size, "memgov");
}

void control_socket_path(const TargetSpec *t, char *buf, size_t size) {
        assert(t);
        assert(buf);
        char inst[128];
        target_instance_name(t, inst, sizeof(inst));
        snprintf(buf, size, MEMGOV_RUN_DIR "/%s.sock", inst);
}

/* ---- target event sources: PSI trigger, memory.events, process exit ---- */

static int on_psi(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        if (revents & EPOLLERR) {
                /* The cgroup went away under the trigger. */
                log_debug("PSI trigger: error event, the cgroup is probably gone");
                sd_event_source_set_enabled(s, SD_EVENT_OFF);
                manager_tick(m, "cgroup gone");
                return 0;
        }
        m->metrics.wakeups_psi++;
        manager_tick(m, "psi");
        return 0;
}

static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool changed = false, gone = false;

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        struct inotify_event *ev = (struct inotify_event *) p;
                        if (ev->mask & IN_MODIFY)
                                changed = true;
                        if (ev->mask & (IN_IGNORED | IN_DELETE_SELF))
                                gone = true;
                        p += sizeof(*ev) + ev->len;
                }
        }
        if (changed) {
                m->metrics.wakeups_events++;
                manager_tick(m, "memory.events");
        } else if (gone)
                manager_tick(m, "cgroup gone");
        return 0;
}

static int on_pidfd(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        sd_event_source_set_enabled(s, SD_EVENT_OFF);
        manager_tick(m, "process exit");
        return 0;
}

static void detach_target(Manager *m) {
        m->psi_source = sd_event_source_disable_unref(m->psi_source);
        m->events_source = sd_event_source_disable_unref(m->events_source);
        m->pidfd_source = sd_event_source_disable_unref(m->pidfd_source);
        if (m->psi_fd >= 0)
                close(m->psi_fd);
        if (m->inotify_fd >= 0)
                close(m->inotify_fd);
        if (m->pidfd >= 0)
                close(m->pidfd);
        m->psi_fd = m->inotify_fd = m->pidfd = -1;
}

/* A PSI trigger on memory.pressure: "some 150000 2000000" wakes us when tasks were stalled
 * 150 ms within any 2 s window. Without it we still sample on the timer. */
static int arm_psi(Manager *m) {
        char trigger[64];
        int r;

        if (m->roots.copy) {
                log_debug("PSI: %s is a copy of a cgroup tree: no trigger to arm", m->roots.cgroup_path);
                return 0;
        }
        m->psi_fd = openat(m->target.cgroup_fd, "memory.pressure", O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (m->psi_fd < 0)
                return log_warning_errno(negative_errno(), "PSI: cannot open memory.pressure of %s: %m; "
                                         "sampling on the timer only", m->target.cgroup);
        snprintf(trigger, sizeof(trigger), "%s %" PRIu64 " %" PRIu64, m->policy.psi_type == PSI_FULL ? "full" : "some",
                 m->policy.psi_stall, m->policy.psi_window);
        if (write(m->psi_fd, trigger, strlen(trigger) + 1) < 0) {
                r = negative_errno();
                close(m->psi_fd);
                m->psi_fd = -1;
                return log_warning_errno(r, "PSI: the kernel refused the trigger \"%s\" on %s: %m%s", trigger,
                                         m->target.cgroup,
                                         r == -EINVAL ? " (without CAP_SYS_RESOURCE the window must be a multiple of 2s)"
                                                      : "");
        }
        r = sd_event_add_io(m->event, &m->psi_source, m->psi_fd, EPOLLPRI, on_psi, m);
        if (r < 0)
                return log_warning_errno(r, "PSI: cannot watch the trigger: %m");
        (void) sd_event_source_set_description(m->psi_source, "psi-trigger");
        log_debug("PSI trigger \"%s\" armed on %s", trigger, m->target.cgroup);
        return 0;
}

static int watch_events(Manager *m) {
        char path[128];
        int r;

        m->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (m->inotify_fd < 0)
                return log_warning_errno(negative_errno(), "inotify: %m; memory.events is read on each sample only");
        /* Through our own descriptor of the cgroup: the root stays injectable. */
        snprintf(path, sizeof(path), "/proc/self/fd/%d/memory.events", m->target.cgroup_fd);
        if (inotify_add_watch(m->inotify_fd, path, IN_MODIFY) < 0)
                return log_warning_errno(negative_errno(), "inotify: cannot watch memory.events of %s: %m",
                                         m->target.cgroup);
        r = sd_event_add_io(m->event, &m->events_source, m->inotify_fd, EPOLLIN, on_inotify, m);
        if (r < 0)
                return log_warning_errno(r, "inotify: %m");
        (void) sd_event_source_set_description(m->events_source, "memory-events");
        return 0;
}

static int watch_process(Manager *m) {
        int r;

        m->pidfd = pidfd_open(m->target.pid, 0);
        if (m->pidfd < 0)
                return log_debug_errno(negative_errno(), "pidfd_open(%d): %m; the exit is noticed at the next sample",
                                       (int) m->target.pid);
        r = sd_event_add_io(m->event, &m->pidfd_source, m->pidfd, EPOLLIN, on_pidfd, m);
        if (r < 0)
                return log_warning_errno(r, "cannot watch the server process: %m");
        (void) sd_event_source_set_description(m->pidfd_source, "server-pidfd");
        return 0;
}

/* Watches the target: its cgroup's PSI trigger and memory.events, its server's pidfd. The same
 * cgroup found again (its server is looked for at every sample while there is none) keeps its
 * watches: a trigger armed again would start a new window and fire late. */
static void attach_target(Manager *m, bool rearm) {
        struct stat st;
        bool same = !rearm && m->target.has_cgroup && (m->psi_fd >= 0 || m->inotify_fd >= 0) &&
                    fstat(m->target.cgroup_fd, &st) == 0 && st.st_ino == m->watched_ino && st.st_dev == m->watched_dev;
        if (same) {
                m->pidfd_source = sd_event_source_disable_unref(m->pidfd_source);
                if (m->pidfd >= 0)
                        close(m->pidfd);
                m->pidfd = -1;
        } else {
                detach_target(m);
                m->watched_ino = 0;
                m->watched_dev = 0;
                if (m->target.has_cgroup && !m->opts.record_only) {
                        (void) arm_psi(m);
                        (void) watch_events(m);
                        if (fstat(m->target.cgroup_fd, &st) == 0) {
                                m->watched_ino = st.st_ino;
                                m->watched_dev = st.st_dev;
                        }
                }
        }
        if (m->target.pid > 0 && !m->opts.roots.proc_root)
                (void) watch_process(m);
        sampler_set_target(&m->sampler, m->target.has_cgroup ? m->target.cgroup_fd : -1, m->target.pid,
                           m->target.starttime);
}

/* Resolves (again) what we govern. Logs each change of situation once. */
/* memory.high and memory.max go through systemd for a unit, through the cgroup file otherwise. */
static bool limits_readonly(const Manager *m) {
        return m->target.limits_readonly && !(m->target.spec.kind == TARGET_UNIT && m->bus);
}

/* Whether the server accepts clients yet, from what the action thread's kept session found of
 * this very process: the engine holds the rungs that need a running server while it starts. */
static void sample_accepting(const Manager *m, Sample *s) {
        SqlKeepInfo k;
        if (!(s->has & SAMPLE_HAS_PROCESS) || s->pid <= 0)
                return;
        sql_keep_info(&k);
        if (k.pid != s->pid || k.accepting == ACCEPTING_UNKNOWN)
                return;
        s->accepting = k.accepting == ACCEPTING_YES;
        s->has |= SAMPLE_HAS_ACCEPTING;
}

/* systemd splits a notify message at its newlines: a STATUS= line carries the server's text (its
 * command name, its errors), so its controls are escaped, never sent as fields of their own. */
_printf_(1, 2) static void notify_status(const char *fmt, ...) {
        char raw[1024], safe[4 * sizeof(raw)];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(raw, sizeof(raw), fmt, ap);
        va_end(ap);
        (void) sd_notifyf(false, "STATUS=%s", escape_untrusted(raw, safe, sizeof(safe)));
}

static bool resolve(Manager *m) {
        char why[512];
        int r = target_resolve(&m->target, &m->roots, m->bus, why, sizeof(why));
        if (r < 0) {
                if (!streq(why, m->waiting)) {
                        snprintf(m->waiting, sizeof(m->waiting), "%s", why);
                        if (r == -ESRCH)
                                log_notice("waiting for the target: %s", why);
                        else
                                log_error_errno(r, "target: %s", why);
                        notify_status("waiting: %s", why);
                }
                detach_target(m);
                sampler_set_target(&m->sampler, -1, 0, 0);
                m->governing[0] = '\0';
                return false;
        }
        m->waiting[0] = '\0';
        /* Once per change: a cgroup whose server is stopped is looked at on every sample. */
        if (!m->opts.quiet && !streq(m->governing, m->target.description))
                log_struct(LOG_NOTICE, MESSAGE_ID_TARGET, NULL, "%s %s%s", m->opts.record_only ? "recording" : "governing",
                           m->target.description, m->opts.dry_run && !m->opts.record_only ? " (dry run)" : "");
        snprintf(m->governing, sizeof(m->governing), "%s", m->target.description);
        if (limits_readonly(m) && !m->readonly_said && !m->opts.record_only) {
                log_notice("the cgroup file system is read-only here (%s): memory.high and memory.max cannot be "
                           "set, so there is no throttling; trim, connection reset and restart by SIGTERM still work "
                           "(to throttle, mount the cgroup file system writable: see memgov(8), CONTAINERS)",
                           m->target.cgroup_via[0] ? m->target.cgroup_via : m->roots.cgroup_path);
                m->readonly_said = true;
        }
        attach_target(m, false);
        return true;
}

/* ---- the tick ---- */

static void remember(Manager *m, const EngineOutput *out, const Decision *d, const char *line, uint64_t job) {
        HistoryEntry *h = &m->history[(m->history_head + m->history_n) % MANAGER_HISTORY];
        if (m->history_n == MANAGER_HISTORY)
                m->history_head = (m->history_head + 1) % MANAGER_HISTORY;
        else
                m->history_n++;
        *h = (HistoryEntry) { .job = job, .mono = out->now, .wall = out->wall, .utc_offset = out->utc_offset, .decision = *d };
        snprintf(h->line, sizeof(h->line), "%s", line);
        if (job)
                snprintf(h->result, sizeof(h->result), "in progress");
}

static void remember_result(Manager *m, const ActionJob *j) {
        for (unsigned i = 0; i < m->history_n; i++) {
                HistoryEntry *h = &m->history[(m->history_head + i) % MANAGER_HISTORY];
                if (h->job != j->id)
                        continue;
                snprintf(h->result, sizeof(h->result), "%s", j->result.detail);
                h->error = j->result.error;
        }
}

/* How long an action may run before the engine hears it failed. */
static usec_t action_timeout(const Policy *p, ActionKind k) {
        return action_info(k)->timeout(p);
}

/* The restart history, so that max-per-day holds across memgov's own restarts (the state file). */
static void save_restarts(Manager *m) {
        const usec_t *clock;
        unsigned n = engine_restarts(m->engine, &clock);
        (void) state_file_set_restarts(m->state, clock, n);
}

/* One action to its lane's thread: the job's id, or 0 when the lane is full (said, and counted
 * as failed). */
static uint64_t submit(Manager *m, const Decision *d, bool dry_run) {
        ActionJob *job = m->scratch; /* the worker copies it */
        job->decision = *d;
        action_target_from(&job->target, &m->target);
        job->target.cgroup_fd = m->target.cgroup_fd >= 0 ? fcntl(m->target.cgroup_fd, F_DUPFD_CLOEXEC, 3) : -1;
        job->policy = m->policy;
        job->dry_run = dry_run;
        int r = action_worker_submit(m->worker, job);
        if (r < 0) {
                if (job->target.cgroup_fd >= 0)
                        close(job->target.cgroup_fd);
                log_warning("%s dropped: the actions before it are still being carried out", decision_name(d));
                action_feedback_fail(&m->feedback, d->action);
                metrics_count_action(&m->metrics, d->action, METRICS_RESULT_FAILED, 0, 0);
                return 0;
        }
        return job->id;
}

static void act_on(Manager *m, const EngineOutput *out) {
        for (unsigned i = 0; i < out->n_decisions; i++) {
                const Decision *d = &out->decisions[i];
                char line[DECISION_LINE_MAX];

                decision_log(out, d, m->opts.dry_run, &m->target, line, sizeof(line));
                if (!decision_is_action(d)) {
                        remember(m, out, d, line, 0);
                        continue;
                }
                if (d->action == ACTION_RESTART)
                        save_restarts(m);
                remember(m, out, d, line, submit(m, d, m->opts.dry_run));
        }
}

/* What memgov changed, to put back as it found it (engine_leave): nothing when it only records,
 * or has no target to write to. */
static unsigned put_backs(Manager *m, const char *why, Decision *d, unsigned max) {
        return m->opts.record_only || !m->target.resolved ? 0 : engine_leave(m->engine, why, d, max);
}

/* Back to a dry run (a reload): what memgov changed goes back as it found it, as when it stops
 * (a dry run changes nothing, and would leave it in place for good), but through the action
 * threads, behind what they still have to write: put back directly, a write decided before the
 * reload could land after it and stay. A restart under way keeps its raise of memory.max for its
 * stop: the dry run begins once the restart is over (dry_run_waits). */
static void begin_dry_run(Manager *m) {
        Decision d[ELEMENTSOF(m->leaving)];
        unsigned n = put_backs(m, "a dry run from now on", d, ELEMENTSOF(d));
        m->n_leaving = 0;
        for (unsigned i = 0; i < n; i++) {
                log_notice("%s", d[i].reason);
                m->leaving[m->n_leaving] = d[i];
                m->leaving_job[m->n_leaving++] = submit(m, &d[i], false);
        }
        m->dry_run_waits = false;
        m->opts.dry_run = true;
        engine_set_simulate(m->engine, true);
        if (m->record)
                fprintf(m->record, "%s\n", TRACE_MARK_DRY_RUN);
        log_notice("reload: dry run from now on: nothing will be changed");
}

/* The finished jobs' results: logged, counted, and handed to the engine's next tick. */
static void collect_results(Manager *m) {
        unsigned n = action_worker_collect(m->worker, m->collected, ACTION_QUEUE);
        for (unsigned i = 0; i < n; i++) {
                const ActionJob *j = &m->collected[i];
                char tail[160];
                action_job_waited(j, tail, sizeof(tail));
                action_result_log(&j->decision, &j->result, j->dry_run, tail);
                metrics_count_action(&m->metrics, j->decision.action,
                                     j->dry_run ? METRICS_RESULT_DRY_RUN
                                     : j->result.error < 0 ? METRICS_RESULT_FAILED
                                                           : METRICS_RESULT_DONE,
                                     j->result.has_freed ? j->result.freed : 0, j->result.held);
                /* A job reported overdue already counted as failed. */
                if (j->id != m->overdue_job[action_info(j->decision.action)->lane])
                        action_feedback_add(&m->feedback, &j->decision, &j->result);
                remember_result(m, j);
                for (unsigned k = 0; k < m->n_leaving; k++)
                        if (m->leaving_job[k] == j->id && j->result.error >= 0) {
                                m->leaving[k] = m->leaving[--m->n_leaving];
                                m->leaving_job[k] = m->leaving_job[m->n_leaving];
                                break;
                        }
        }
}

static int on_worker(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        collect_results(userdata);
        return 0;
}

static void check_overdue(Manager *m, usec_t now) {
        for (ActionLane lane = 0; lane < _ACTION_LANE_MAX; lane++) {
                uint64_t id;
                Decision d;
                usec_t started;
                char t[FORMAT_TIMESPAN_MAX];

                if (!action_worker_current_in(m->worker, lane, &id, &d, &started) || id == m->overdue_job[lane])
                        continue;
                /* now was read before the sample: a job the worker began since then started after it. */
                usec_t running = now > started ? now - started : 0;
                if (running < action_timeout(&m->policy, d.action))
                        continue;
                m->overdue_job[lane] = id;
                action_feedback_fail(&m->feedback, d.action);
                log_warning("%s still running after %s: counted as failed", decision_name(&d), format_timespan(t, running));
        }
}

static void update_status(Manager *m, const EngineOutput *out) {
        char ws[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];
        if (out->budget == SIZE_UNKNOWN) {
                notify_status("%s: no budget", m->target.description);
                return;
        }
        notify_status("%s%s: level %s, working set %s = %u%% of %s, OOM %s%s", m->opts.dry_run ? "dry run, " : "",
                   m->target.description, level_to_string(out->level), format_bytes(ws, out->ws), out->ws_bp / 100,
                   format_bytes(b, out->budget), out->eta == USEC_INFINITY ? "not in sight" : "in ",
                   out->eta == USEC_INFINITY ? "" : format_timespan(t, out->eta));
}

static void write_record(Manager *m, const Sample *s) {
        char row[TRACE_LINE_MAX];
        if (!m->record || trace_format_row(s, row, sizeof(row)) < 0)
                return;
        /* Line by line: a trace cut short by a crash is still a trace. */
        if (fprintf(m->record, "%s\n", row) < 0 || fflush(m->record) != 0) {
                log_error_errno(negative_errno(), "writing %s: %m; recording stops", m->opts.record_path);
                fclose(m->record);
                m->record = NULL;
        }
}

static void arm_timer(Manager *m, usec_t delay) {
        usec_t now = now_clock(CLOCK_MONOTONIC);
        sd_event_source_set_time(m->timer, now + delay);
        sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
}

/* A cgroup or process file that cannot be read, the cgroup and the process still there: the
 * samples go without those figures. Said when it starts and when it is over, not on every sample. */
static void report_read_errors(Manager *m) {
        int c = m->sampler.cgroup_error == -ENOENT ? 0 : m->sampler.cgroup_error;
        int p = m->sampler.process_error == -ESRCH ? 0 : m->sampler.process_error;

        const char *cf = m->sampler.cgroup_error_file, *pf = m->sampler.process_error_file;

        /* Said again only when the error or the file changes. */
        if (c < 0 && (c != m->cgroup_error_said || !streq(cf, m->cgroup_error_file_said)))
                log_warning_errno(c, "cannot read the cgroup of %s: %s%s%m; sampling without its cgroup figures "
                                  "until it can be read", m->target.description, cf, cf[0] ? ": " : "");
        else if (c == 0 && m->cgroup_error_said < 0)
                log_notice("the cgroup of %s can be read again", m->target.description);
        if (p < 0 && (p != m->process_error_said || !streq(pf, m->process_error_file_said)))
                log_warning_errno(p, "cannot read the server process of %s: %s%s%m; sampling without its process "
                                  "figures until it can be read", m->target.description, pf[0] ? pf : "",
                                  pf[0] ? ": " : "");
        else if (p == 0 && m->process_error_said < 0)
                log_notice("the server process of %s can be read again", m->target.description);
        m->cgroup_error_said = c;
        m->process_error_said = p;
        snprintf(m->cgroup_error_file_said, sizeof(m->cgroup_error_file_said), "%s", c < 0 ? cf : "");
        snprintf(m->process_error_file_said, sizeof(m->process_error_file_said), "%s", p < 0 ? pf : "");
}

static int read_cgroup_value(const Manager *m, const char *file, uint64_t *ret) {
        char buf[64];
        ssize_t n = read_small_file_at(m->target.cgroup_fd, file, buf, sizeof(buf));
        return n < 0 ? (int) n : parse_cgroup_value(buf, (size_t) n, ret);
}

/* memory.high and memory.max as the memgov before this one left them, changed and not put back
 * (it died without its way out): put back as its way out would have, where they are still the
 * value it set, before the first sample, so that the engine finds them as they were. memory.max
 * only once the server uses less than the value found: lower than what it uses, the kernel would
 * reclaim or kill at once (until then it stays raised, looked at on every sample). */
static void put_back_limits(Manager *m) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX];
        bool later = false;
        long page = sysconf(_SC_PAGESIZE);

        if (m->limits_put_back || !m->target.has_cgroup || m->target.cgroup_fd < 0)
                return;
        for (ChangeKind k = CHANGE_MEMORY_HIGH; k <= CHANGE_MEMORY_MAX; k++) {
                const char *file = change_kind_to_string(k);
                ServerChange rec = state_file_get(m->state, k);
                uint64_t now, used, set = rec.set;
                if (!rec.active || !rec.inherited)
                        continue;
                if (set != SIZE_UNLIMITED && page > 0)
                        set -= set % (uint64_t) page;
                if (read_cgroup_value(m, file, &now) < 0) {
                        later = true;
                        continue;
                }
                if (now != set) {
                        log_info("%s of %s is %s, not the %s the memgov before set: changed since, left as it is", file,
                                 m->target.description, format_bytes(a, now), format_bytes(b, rec.set));
                        (void) state_file_forget(m->state, k);
                        continue;
                }
                if (m->opts.dry_run) {
                        log_notice("%s of %s left at %s by the memgov before (it found %s): a dry run puts nothing back",
                                   file, m->target.description, format_bytes_change(a, b, now, rec.found), b);
                        continue;
                }
                if (k == CHANGE_MEMORY_MAX && rec.found != SIZE_UNLIMITED &&
                    (read_cgroup_value(m, "memory.current", &used) < 0 || used >= rec.found)) {
                        if (!m->max_put_back_said)
                                log_notice("memory.max of %s left raised at %s by the memgov before: put back to %s once "
                                           "the server uses less (it uses %s)", m->target.description,
                                           format_bytes_change(a, b, now, rec.found), b, format_bytes(c, used));
                        m->max_put_back_said = true;
                        later = true;
                        continue;
                }
                Decision d = { .kind = DECISION_ACTION, .action = k == CHANGE_MEMORY_HIGH ? ACTION_SET_HIGH : ACTION_SET_MAX,
                               .value = rec.found, .old_value = now };
                snprintf(d.reason, sizeof(d.reason), "put %s back %s -> %s as the memgov before found it (it stopped "
                         "without putting it back)", file, format_bytes_change(a, b, now, rec.found), b);
                ActionTarget t;
                ActionResult res = {};
                action_target_from(&t, &m->target);
                t.cgroup_fd = m->target.cgroup_fd; /* borrowed: the actuators do not close it */
                ActionContext ctx = { .target = &t, .policy = &m->policy, .state = m->state };
                log_notice("%s", d.reason);
                actuator_run(m->opts.ops ? m->opts.ops : &actuator_ops_real, m->opts.ops_userdata, &ctx, &d, &res);
                action_result_log(&d, &res, false, NULL);
        }
        m->limits_put_back = !later;
}

void manager_tick(Manager *m, const char *reason) {
        Sample s;
        EngineOutput out;

        if (m->exiting)
                return;
        m->ticks++;
        if (!m->target.resolved && !resolve(m)) {
                arm_timer(m, m->policy.interval);
                return;
        }

        /* A cgroup whose server is not running right now (between a stop and a start): look for
         * it again on every sample. */
        if (m->target.has_cgroup && m->target.pid <= 0) {
                if (!resolve(m)) {
                        arm_timer(m, m->policy.interval);
                        return;
                }
        }

        put_back_limits(m);
        usec_t mono = now_clock(CLOCK_MONOTONIC), wall = now_clock(CLOCK_REALTIME);
        int r = sampler_read(&m->sampler, mono, wall, local_utc_offset(wall), now_clock(CLOCK_BOOTTIME), &s);
        if (r == -ENOENT || r == -ESRCH || m->sampler.cgroup_error == -ENOENT || m->sampler.process_error == -ESRCH) {
                bool cgroup_gone = r == -ENOENT || m->sampler.cgroup_error == -ENOENT;
                log_notice("%s: %s; looking for it again", m->target.description,
                           cgroup_gone ? "the cgroup is gone" : "the server process is gone");
                m->governing[0] = '\0';
                if (!resolve(m)) {
                        arm_timer(m, m->policy.interval);
                        return;
                }
                mono = now_clock(CLOCK_MONOTONIC);
                wall = now_clock(CLOCK_REALTIME);
                r = sampler_read(&m->sampler, mono, wall, local_utc_offset(wall), now_clock(CLOCK_BOOTTIME), &s);
        }
        if (r < 0) {
                log_warning_errno(r, "cannot sample %s: %m", m->target.description);
                arm_timer(m, m->policy.interval);
                return;
        }
        report_read_errors(m);

        check_overdue(m, mono);
        s.limits_readonly = limits_readonly(m);
        sample_accepting(m, &s);
        if ((s.has & SAMPLE_HAS_PROCESS) && s.pid > 0)
                explain_watch_sample(s.pid, m->target.starttime, &s);
        if ((s.has & SAMPLE_HAS_PROCESS) && s.pid > 0)
                pool_watch_sample(s.pid, m->target.starttime, &s);
        /* A job that finished while the sample was read: its result belongs to this tick (one
         * that finishes after this is still counted pending, action_worker_pending()). */
        collect_results(m);
        unsigned pending = action_worker_pending(m->worker);
        if (m->opts.record_only) {
                action_feedback_apply(&m->feedback, &s, pending);
                write_record(m, &s);
                m->last_sample = s;
                arm_timer(m, m->opts.record_interval);
                return;
        }
        engine_tick(m->engine, &m->feedback, &m->policy, &s, pending, &out);
        m->metrics.samples++;
        metrics_count_decisions(&m->metrics, &out);
        m->last = out;
        m->have_last = true;
        m->last_sample = s;

        write_record(m, &s);
        act_on(m, &out);
        if (m->dry_run_waits && !engine_restart_pending(m->engine))
                begin_dry_run(m);
        /* Between actions, the action thread keeps its SQL session for this server. */
        ActionTarget keep;
        action_target_from(&keep, &m->target);
        action_worker_keep(m->worker, &keep, &m->policy, m->opts.dry_run);
        /* With the clock, so that the reaction time to a kernel event can be measured. */
        log_debug("tick (%s) sampled at %" PRIu64 " done at %" PRIu64 ": level %s, %u decision(s)", reason, s.mono,
                  now_clock(CLOCK_MONOTONIC), level_to_string(out.level), out.n_decisions);
        update_status(m, &out);
        metrics_textfile_write(m);
        arm_timer(m, out.next_sample);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        manager_tick(userdata, "timer");
        return 0;
}

static int on_stop(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        log_info("ran for the requested duration");
        m->exiting = true;
        return sd_event_exit(m->event, 0);
}

/* ---- the watchdog ---- */

/* sd-event's own watchdog pings whenever the loop runs, also while the action thread is stuck
 * for good and nothing queued behind its job will ever run. memgov pings itself instead, at half
 * of WatchdogSec, and only while the thread is not wedged: systemd then restarts a memgov that
 * cannot act any more. */
typedef struct Watchdog {
        Manager *manager;
        usec_t interval;
        bool withheld;
} Watchdog;

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata) {
        Watchdog *w = userdata;
        usec_t now = now_clock(CLOCK_MONOTONIC), running;
        char t[FORMAT_TIMESPAN_MAX];
        Decision d;

        if (action_worker_wedged(w->manager->worker, now, &d, &running)) {
                if (!w->withheld)
                        log_error("the action thread is wedged: %s running for %s, past its timeout: watchdog pings "
                                  "stop, for systemd to restart memgov", decision_name(&d),
                                  format_timespan(t, running));
                w->withheld = true;
        } else {
                if (w->withheld)
                        log_notice("the action thread is free again: watchdog pings resume");
                w->withheld = false;
                (void) sd_notify(false, "WATCHDOG=1");
        }
        return sd_event_source_set_time(s, now + w->interval);
}

static int watchdog_start(Manager *m) {
        uint64_t usec = 0;
        sd_event_source *s = NULL;

        int r = sd_watchdog_enabled(false, &usec);
        if (r < 0)
                log_warning_errno(r, "WATCHDOG_USEC or WATCHDOG_PID is not valid: %m; no watchdog pings");
        if (r <= 0)
                return 0;
        Watchdog *w = calloc(1, sizeof(Watchdog));
        if (!w)
                return log_error_errno(-ENOMEM, "out of memory");
        *w = (Watchdog) { .manager = m, .interval = MAX(usec / 2, (uint64_t) USEC_PER_MSEC) };
        /* Accurate to the millisecond: the default accuracy (250 ms) would eat into the half of
         * WatchdogSec left as a margin. */
        r = sd_event_add_time_relative(m->event, &s, CLOCK_MONOTONIC, 0, USEC_PER_MSEC, on_watchdog, w);
        if (r < 0) {
                free(w);
                return log_error_errno(r, "cannot arm the watchdog timer: %m");
        }
        (void) sd_event_source_set_description(s, "watchdog");
        /* The loop owns it, and frees w with it. */
        (void) sd_event_source_set_destroy_callback(s, free);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ON);
        (void) sd_event_source_set_floating(s, true);
        sd_event_source_unref(s);
        return 0;
}

/* ---- signals ---- */

/* memgov record and the status snapshot decide nothing and arm no trigger: they only read. */
static PrivilegeNeeds privilege_needs(const Manager *m) {
        return (PrivilegeNeeds) {
                .dry_run = m->opts.dry_run || m->opts.record_only,
                .unit = m->opts.target.kind == TARGET_UNIT,
                .psi = m->roots.memory_v2 && !m->roots.copy && !m->opts.record_only,
                .locked = m->locked,
        };
}

static void policy_problem(void *userdata, const char *message) {
        log_error("%s", message);
}

/* The policy: --policy FILE, else the instance's own file in the policy directory
 * (/etc/memgov/mariadb.ini for memgov@mariadb.service) when there is one, else the embedded
 * default alone. Either file is read over the embedded default. */
static int load_policy(Manager *m, Policy *p, char *origin, size_t origin_size) {
        char path[PATH_MAX];
        const char *file = m->opts.policy_path;
        int r = policy_load_default(p);
        if (r < 0)
                return log_error_errno(r, "the embedded default policy does not load: %m");
        if (!file) {
                snprintf(path, sizeof(path), "%s/%s.ini", m->opts.policy_dir ? m->opts.policy_dir : "/etc/memgov",
                         m->instance);
                if (access(path, F_OK) < 0) {
                        if (errno != ENOENT)
                                return log_error_errno(negative_errno(), "cannot look at %s: %m", path);
                        snprintf(origin, origin_size, "embedded default (no %s)", path);
                        return 0;
                }
                file = path;
        }
        r = policy_load_file(file, p, policy_problem, NULL);
        if (r != 0)
                return r < 0 ? r : -EINVAL;
        snprintf(origin, origin_size, "%s over the embedded default", file);
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        Policy *p = malloc(sizeof(Policy));
        char origin[512];

        if (!p)
                return 0;
        sd_notify(false, "RELOADING=1");
        if (load_policy(m, p, origin, sizeof(origin)) < 0)
                log_error("reload: the policy has errors; keeping the one in use (%s)", m->policy_origin);
        else {
                /* --dry-run holds for the whole run; governor.dry-run follows the file. */
                bool dry_run = m->cli_dry_run || p->dry_run;
                p->dry_run = dry_run;
                if (dry_run && !m->opts.dry_run && !m->dry_run_waits) {
                        if (engine_restart_pending(m->engine)) {
                                m->dry_run_waits = true;
                                log_notice("reload: dry run once the restart under way is over (memory.max stays "
                                           "raised for its stop)");
                        } else
                                begin_dry_run(m);
                } else if (!dry_run && m->dry_run_waits) {
                        m->dry_run_waits = false;
                        log_notice("reload: no dry run after all: memgov goes on acting");
                } else if (!dry_run && m->opts.dry_run) {
                        /* Acting again: the engine starts from what it reads, and its own
                         * put-backs are what memgov stopping writes. */
                        m->n_leaving = 0;
                        m->opts.dry_run = false;
                        engine_set_simulate(m->engine, false);
                        if (m->record)
                                fprintf(m->record, "%s\n", TRACE_MARK_ACTING);
                        log_notice("reload: dry run over: memgov acts from now on");
                }
                bool psi_changed = p->psi_type != m->policy.psi_type || p->psi_stall != m->policy.psi_stall ||
                                   p->psi_window != m->policy.psi_window;
                PrivilegeNeeds needs = privilege_needs(m);
                uint64_t missing = privileges_needed(p, &needs) & ~m->caps;
                if (missing) {
                        char text[256];
                        privileges_to_string(missing, text, sizeof(text));
                        log_warning("reload: the new policy needs %s, dropped at startup: restart memgov to "
                                    "give its actions what they need", text);
                }
                engine_set_policy(m->engine, &m->policy, p);
                Policy *old = malloc(sizeof(Policy));
                if (old)
                        *old = m->policy;
                m->policy = *p;
                if (old)
                        (void) metrics_http_reload(m, old);
                free(old);
                snprintf(m->policy_origin, sizeof(m->policy_origin), "%s", origin);
                log_notice("reload: policy %s in use", origin);
                if (psi_changed && m->target.resolved)
                        attach_target(m, true);
        }
        free(p);
        sd_notify(false, "READY=1");
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        log_info("%s: stopping", strsignal((int) si->ssi_signo));
        m->exiting = true;
        sd_notify(false, "STOPPING=1");
        return sd_event_exit(m->event, 0);
}

/* ---- life cycle ---- */

/* The governor must not be paged out by the pressure it manages: its pages are locked as they
 * are touched (MCL_ONFAULT: thread stacks and buffers reserved but unused cost nothing). */
static void lock_memory(Manager *m) {
        if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0) {
                log_warning_errno(negative_errno(), "cannot lock memgov's memory: %m (needs CAP_IPC_LOCK or a larger "
                                  "RLIMIT_MEMLOCK; governor.lock-memory = no silences this)");
                return;
        }
        m->locked = true;
}

/* Everything that needed privileges at startup is done: keep what the actions need. */
static int drop_privileges(Manager *m) {
        PrivilegeNeeds n = privilege_needs(m);
        uint64_t keep = privileges_needed(&m->policy, &n), kept;
        char text[256];

        int r = privileges_drop(keep, &kept);
        if (r < 0)
                return r;
        m->caps = kept;
        /* CAP_SYS_RESOURCE and CAP_IPC_LOCK make memgov better, not able: without them a PSI
         * trigger needs a 2 s window and the memory lock its RLIMIT_MEMLOCK, said where they fail. */
        uint64_t missing = keep & ~kept & ~((UINT64_C(1) << CAP_SYS_RESOURCE) | (UINT64_C(1) << CAP_IPC_LOCK));
        if (missing) {
                privileges_to_string(missing, text, sizeof(text));
                log_warning("missing capabilities: %s; the actions that need them will fail (see memgov(8), "
                            "PRIVILEGES)", text);
        }
        return 0;
}

/* ---- setup, in stages ---- */

/* A source nobody keeps a reference to: the loop owns it (floating), under its name for
 * sd-event's debug logs. */
static void float_source(sd_event_source *s, const char *description) {
        (void) sd_event_source_set_description(s, description);
        (void) sd_event_source_set_floating(s, true);
        sd_event_source_unref(s);
}

/* Each stage either completes or returns an error, and whatever it set up is on the Manager
 * already: manager_free undoes all of it, whichever stage failed. The order matters: the policy
 * says how to start; everything opened with privileges comes before they are dropped, the
 * action thread only after (setup_actions). */

/* The policy first: it says whether memgov's memory is locked and whether this is a dry run. */
static int setup_policy(Manager *m) {
        int r = load_policy(m, &m->policy, m->policy_origin, sizeof(m->policy_origin));
        if (r < 0)
                return r;
        if (m->policy.lock_memory)
                lock_memory(m);
        m->cli_dry_run = m->opts.dry_run;
        if (m->policy.dry_run)
                m->opts.dry_run = true;
        m->policy.dry_run = m->opts.dry_run;
        return 0;
}

/* Where the target is looked for: the cgroup and proc roots, the system bus (a unit is looked up
 * on it; without --proc-root it is opened for any target, and may be missing then), the sampler
 * that reads them. */
static int setup_target(Manager *m) {
        const ManagerOptions *o = &m->opts;
        char message[1024];

        int r = roots_open(&m->roots, &o->roots, message, sizeof(message));
        if (r < 0)
                return log_error_errno(r, "%s", message);
        if (message[0])
                log_warning("%s", message);

        if (o->target.kind == TARGET_UNIT || !o->roots.proc_root) {
                r = sd_bus_open_system(&m->bus);
                if (r < 0) {
                        if (o->target.kind == TARGET_UNIT)
                                return log_error_errno(r, "cannot connect to the system bus to find %s: %m",
                                                       o->target.value);
                        m->bus = NULL;
                }
        }

        target_init(&m->target, &o->target);
        return sampler_init(&m->sampler, &m->roots);
}

/* The engine and the jobs its decisions become: allocated once, nothing per tick. */
static int setup_engine(Manager *m) {
        EngineOptions eo = { .simulate = m->opts.dry_run,
                             .effects_assumed = m->opts.dry_run,
                             .page_size = (uint64_t) sysconf(_SC_PAGESIZE) };
        int r = engine_new(&m->policy, &eo, &m->engine);
        if (r < 0)
                return r;

        m->collected = calloc(ACTION_QUEUE, sizeof(ActionJob));
        m->scratch = calloc(1, sizeof(ActionJob));
        if (!m->collected || !m->scratch)
                return -ENOMEM;
        return 0;
}

/* --record FILE: the trace's header, before the first sample. */
static int setup_record(Manager *m) {
        const ManagerOptions *o = &m->opts;

        if (!o->record_path)
                return 0;
        m->record = fopen(o->record_path, "we");
        if (!m->record)
                return log_error_errno(negative_errno(), "cannot write %s: %m", o->record_path);
        char header[2048];
        trace_format_header(header, sizeof(header));
        /* Whether what follows shows the effects of actions carried out: a replay of it
         * then says "freed", else "not carried out". */
        fprintf(m->record, "# memgov trace: %s\n%s\n%s\n", m->policy_origin,
                o->dry_run || o->record_only ? TRACE_MARK_DRY_RUN : TRACE_MARK_ACTING, header);
        fflush(m->record);
        return 0;
}

/* The loop and what wakes it without a target: signals, the watchdog, the sample timer, the end
 * of --duration. */
static int setup_event(Manager *m) {
        const ManagerOptions *o = &m->opts;

        int r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        sd_event_source *s;
        if ((r = sd_event_add_signal(m->event, &s, SIGHUP, on_sighup, m)) < 0)
                return r;
        float_source(s, "sighup");
        if ((r = sd_event_add_signal(m->event, &s, SIGTERM, on_sigterm, m)) < 0)
                return r;
        float_source(s, "sigterm");
        if ((r = sd_event_add_signal(m->event, &s, SIGINT, on_sigterm, m)) < 0)
                return r;
        float_source(s, "sigint");
        r = watchdog_start(m);
        if (r < 0)
                return r;

        r = sd_event_add_time(m->event, &m->timer, CLOCK_MONOTONIC, 0, 1000, on_timer, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->timer, "sample-timer");
        if (o->duration > 0) {
                r = sd_event_add_time_relative(m->event, &s, CLOCK_MONOTONIC, o->duration, 1000, on_stop, m);
                if (r < 0)
                        return r;
                float_source(s, "duration");
        }
        return 0;
}

/* What is opened outside the process, before the privileges go: the control socket, the restart
 * history, the metrics endpoint. */
static int setup_listeners(Manager *m) {
        const ManagerOptions *o = &m->opts;
        int r;

        if (!o->socket_path || o->socket_path[0]) {
                if (o->socket_path)
                        snprintf(m->socket_path, sizeof(m->socket_path), "%s", o->socket_path);
                else
                        control_socket_path(&o->target, m->socket_path, sizeof(m->socket_path));
                r = control_listen(m);
                if (r < 0)
                        return r;
        }

        if (!o->record_only && (!o->state_dir || o->state_dir[0])) {
                const char *dir = o->state_dir ? o->state_dir : "/var/lib/memgov";
                if (state_file_open(dir, m->instance, &m->state) >= 0 && m->state) {
                        usec_t clock[RESTART_HISTORY];
                        unsigned n;
                        state_file_load(m->state, clock, ELEMENTSOF(clock), &n);
                        engine_restore_restarts(m->engine, clock, n);
                        if (n > 0)
                                log_info("restart history: %u restart(s) remembered from %s", n, state_file_path(m->state));
                }
        }
        return o->record_only ? 0 : metrics_http_start(m);
}

/* The privileges dropped, then the action thread started: a thread started before the drop
 * would keep every capability (the action thread ptraces, parses the target's libc, talks SQL
 * and starts the hooks). */
static int setup_actions(Manager *m) {
        const ManagerOptions *o = &m->opts;
        char message[1024];

        sql_library_init();
        int r = drop_privileges(m);
        if (r < 0)
                return r;
        /* Its jobs' timeouts also tell when it is wedged (the watchdog, memgov status). */
        r = action_worker_new(&m->worker, o->ops ? o->ops : &actuator_ops_real, o->ops_userdata, action_timeout);
        if (r < 0)
                return log_error_errno(r, "cannot start the action thread: %m");
        action_worker_set_state(m->worker, m->state); /* only what is carried out is recorded */
        r = sd_event_add_io(m->event, &m->worker_source, action_worker_fd(m->worker), EPOLLIN, on_worker, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(m->worker_source, "action-results");
        /* The order above is what makes them equal; this says so, and stops a run where they are
         * not. A check that cannot read /proc is no finding. */
        r = privileges_check_threads(message, sizeof(message));
        if (r == -EPERM)
                return log_error_errno(r, "capabilities differ between memgov's threads: %s; refusing to run", message);
        if (r < 0)
                log_warning_errno(r, "cannot check the capabilities of memgov's threads: %s", message);
        if (!o->quiet) {
                char text[256];
                privileges_to_string(m->caps, text, sizeof(text));
                log_info("capabilities kept: %s", text);
        }
        return 0;
}

int manager_new(const ManagerOptions *o, Manager **ret) {
        assert(o);
        assert(ret);
        int r;

        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        if (!m)
                return log_error_errno(-ENOMEM, "out of memory");
        m->opts = *o;
        m->psi_fd = m->inotify_fd = m->pidfd = m->control_fd = -1;
        m->target.cgroup_fd = -1;
        m->roots.cgroup_fd = m->roots.proc_fd = -1;
        target_instance_name(&o->target, m->instance, sizeof(m->instance));

        if ((r = setup_policy(m)) < 0 ||
            (r = setup_target(m)) < 0 ||
            (r = setup_engine(m)) < 0 ||
            (r = setup_record(m)) < 0 ||
            (r = setup_event(m)) < 0 ||
            (r = setup_listeners(m)) < 0 ||
            (r = setup_actions(m)) < 0)
                return r;

        m->started = now_clock(CLOCK_MONOTONIC);
        if (!o->quiet && !o->record_only)
                log_info("policy: %s%s", m->policy_origin, m->opts.dry_run ? "; dry run: nothing will be changed" : "");
        *ret = TAKE_PTR(m);
        return 0;
}

/* On the way out, directly (the action thread may be busy with a long restart): what the engine
 * changed, and the put-backs of a reload into a dry run that the lanes did not carry out yet (or
 * that failed): the queues are not run once memgov stops. */
static void leave_limits(Manager *m) {
        Decision d[2 * ELEMENTSOF(m->leaving)];
        unsigned n = put_backs(m, "memgov stops", d, ELEMENTSOF(m->leaving));
        unsigned engine_n = n;
        for (unsigned i = 0; i < m->n_leaving && m->target.resolved; i++)
                d[n++] = m->leaving[i];
        m->n_leaving = 0;
        for (unsigned i = 0; i < n; i++) {
                ActionTarget t;
                ActionResult res = {};
                action_target_from(&t, &m->target);
                t.cgroup_fd = m->target.cgroup_fd; /* borrowed: the actuators do not close it */
                ActionContext c = { .target = &t, .policy = &m->policy, .dry_run = false, .state = m->state };
                log_notice("%s%s", i < engine_n ? "" : "memgov stops, not put back yet: ", d[i].reason);
                actuator_run(m->opts.ops ? m->opts.ops : &actuator_ops_real, m->opts.ops_userdata, &c, &d[i], &res);
                action_result_log(&d[i], &res, false, NULL);
        }
}

int manager_run(Manager *m) {
        assert(m);
        manager_tick(m, "start");
        sd_notify(false, "READY=1");
        int r = sd_event_loop(m->event);
        leave_limits(m);
        return r;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        detach_target(m);
        control_close(m);
        metrics_http_stop(m);
        free(m->metrics_buf);
        m->timer = sd_event_source_disable_unref(m->timer);
        m->worker_source = sd_event_source_disable_unref(m->worker_source);
        m->worker = action_worker_free(m->worker);
        free(m->collected);
        free(m->scratch);
        target_release(&m->target);
        sampler_done(&m->sampler);
        roots_close(&m->roots);
        if (m->record)
                fclose(m->record);
        m->state = state_file_free(m->state);
        m->engine = engine_free(m->engine);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}
