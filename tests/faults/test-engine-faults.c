/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Faults at the engine's seams, over the recorded traces of tests/replay and the shipped policies.
 *
 * Each trace is driven the way the daemon drives it: one sample per tick, every action decision
 * handed to the fake actuator (actuator_ops_fake), its result fed back through the next sample
 * (action_feedback_add / action_feedback_apply), as manager.c does. Then, for each trace and
 * policy, in a dry run (replay's engine options) and live (the writes land in the next samples):
 *
 *   - call N of the actuators fails, for every N up to the number of action decisions of the
 *     fault-free run, with EIO, ENOENT, EPERM, EAGAIN or ETIMEDOUT in turn;
 *   - every call of one kind fails (a memory.high that cannot be written, a server that cannot
 *     be traced);
 *   - sample N, or ten samples from N, lost a group of fields as the sampler reports a file it
 *     could not read: the cgroup files (memory.current/high/max/stat, and with them
 *     memory.events and memory.pressure), memory.events alone, memory.pressure alone, the
 *     process (/proc/PID gone or unreadable), the host (meminfo), or all of them at once;
 *   - call N fails and the very sample that carries the failure lost all its fields.
 *
 * After every run (invariants, checked as the run goes):
 *   - each failure is reported exactly once, as the engine's DECISION_EFFECT
 *     "<action> failed: not tried again for <backoff>", at the first sample that has a working
 *     set (or, for an action on the server decided before a new server process was seen, as
 *     failed against the process that is gone, with no backoff), and nothing else is reported
 *     as failed;
 *   - no action of a kind before the backoff that report announced;
 *   - trims, resets and restarts no closer than their step's cooldown, ladder actions no closer
 *     than governor.settle unless the ETA is an emergency (or admission carried to a new server
 *     process);
 *   - live, memory.max is put back after a restart (the run ends with the value it began with);
 *   - restarts: at most restart.max-per-day in any 24 h, never while the server is up for less
 *     than restart.min-uptime (the trace's own uptime, not what the engine saw) unless in an
 *     emergency at restart.at, inside the windows unless an emergency;
 *   - no stuck level: once the engine's own working set share is below every enabled step's
 *     threshold minus governor.hysteresis, and its ETA above every enabled step's ETA plus
 *     governor.eta-hysteresis ("calm"), the level never rises, and it is back to normal at the
 *     latest level × (settle + the longest gap between two samples) after the calm began: the
 *     engine leaves one rung per settle, on the first sample after it. To make this check bite on
 *     every trace, each trace is followed by 30 minutes of calm (the working set at 30 % of the
 *     budget, no pressure).
 *
 * MEMGOV_FAULTS_VERBOSE=1 prints the first violations of each case in full (the decisions of the run),
 * MEMGOV_FAULTS_DUMP=1 the decisions of each fault-free run, MEMGOV_FAULTS_ONLY=TEXT runs only the
 * cases ("trace:policy") that contain TEXT. An argument K/N runs every N-th case from the K-th
 * (1-based): meson runs the sweep as two shards, one per core. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>

#include "test-util.h"

#include "memgov/fileio.h"

#include "memgov/actuator.h"
#include "memgov/engine.h"
#include "memgov/policy-file.h"
#include "memgov/trace.h"
#include "memgov/units.h"

#define MB (1ULL << 20)
#define GB (1ULL << 30)
#define TAIL (30 * USEC_PER_MINUTE)
#define BURST 10
#define POSITIONS 16         /* evenly spread samples losing fields, per mode */
#define POST_ACTION 8        /* and the samples right after the first few actions */
#define MAX_DUMPS 3

static const int errnos[] = { EIO, ENOENT, EPERM, EAGAIN, ETIMEDOUT };

/* ---- traces ---- */

typedef struct Trace {
        char name[128];
        Sample *s;
        size_t n, n_trace; /* all samples; those from the file (the rest is the calm tail) */
        uint64_t budget;   /* --budget, 0 = from the samples */
        unsigned has;      /* every SampleHas bit some sample has */
        usec_t dt_max;
} Trace;

/* What the .case files of tests/replay give these traces on the command line. */
static const struct {
        const char *name;
        uint64_t budget, unit;
} trace_options[] = {
        { "mariadb-retention.csv", 32 * GB, 0 },
        { "plateau-epoch-kb.tsv", 12 * GB, 0 },
        { "no-unit.csv", 16 * GB, MB },
};

static const char *source_root(void) {
        const char *r = getenv("MEMGOV_SOURCE_ROOT");
        if (!r) {
                fprintf(stderr, "MEMGOV_SOURCE_ROOT is not set (meson test sets it)\n");
                exit(EXIT_FAILURE);
        }
        return r;
}

static void trace_add(Trace *t, size_t *cap, const Sample *s) {
        if (t->n == *cap) {
                *cap = *cap ? *cap * 2 : 1024;
                t->s = realloc(t->s, *cap * sizeof(Sample));
                assert_non_null(t->s);
        }
        t->s[t->n++] = *s;
}

static bool trace_load(const char *dir, const char *name, Trace *ret) {
        char path[4096];
        _cleanup_free_ char *text = NULL;
        size_t len, cap = 0;
        uint64_t unit = 0, max_ws = 0;

        *ret = (Trace) {};
        snprintf(ret->name, sizeof(ret->name), "%s", name);
        for (size_t i = 0; i < ELEMENTSOF(trace_options); i++)
                if (streq(name, trace_options[i].name)) {
                        ret->budget = trace_options[i].budget;
                        unit = trace_options[i].unit;
                }
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int r = read_full_file_at(AT_FDCWD, path, 64U << 20, &text, &len);
        if (r < 0)
                fail_msg("cannot read %s: %s", path, strerror(-r));

        TraceReader reader;
        trace_reader_init(&reader, unit, NULL);
        for (char *line = text, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                size_t n = next ? (size_t) (next - line) : strlen(line);
                if (next)
                        next++;
                Sample s;
                r = trace_reader_line(&reader, line, n, &s);
                if (r < 0)
                        fail_msg("%s:%u: %s", path, reader.lineno, reader.error);
                if (r == 0)
                        continue;
                ret->has |= s.has;
                uint64_t ws = sample_working_set(&s);
                if (ws != SIZE_UNKNOWN)
                        max_ws = MAX(max_ws, ws);
                if (ret->n > 0 && s.mono > ret->s[ret->n - 1].mono)
                        ret->dt_max = MAX(ret->dt_max, s.mono - ret->s[ret->n - 1].mono);
                trace_add(ret, &cap, &s);
        }
        if (ret->n < 2) {
                free(ret->s);
                return false;
        }
        ret->n_trace = ret->n;
        /* Recorded while a memgov acted: its memory.high and memory.max after the first sample are
         * that memgov's writes, not the world's. Every run starts from what it found, and sees
         * only its own writes (live) or none (dry run). */
        if (reader.acting)
                for (size_t i = 1; i < ret->n; i++)
                        if ((ret->s[i].has & SAMPLE_HAS_CGROUP) && (ret->s[0].has & SAMPLE_HAS_CGROUP)) {
                                ret->s[i].memory_high = ret->s[0].memory_high;
                                ret->s[i].memory_max = ret->s[0].memory_max;
                        }
        /* A plain log with nothing to take a budget from and none given: a budget a little above
         * the largest working set, so that the ladder has something to climb. */
        if (!ret->budget && !(ret->has & (SAMPLE_HAS_CGROUP | SAMPLE_HAS_HOST)))
                ret->budget = ((max_ws + max_ws / 8) / GB + 1) * GB;

        /* The calm tail: the working set at 30 % of the budget, steady, no pressure. */
        const Sample *last = &ret->s[ret->n - 1];
        uint64_t budget = ret->budget                                                         ? ret->budget
                          : (last->has & SAMPLE_HAS_CGROUP) && last->memory_max != SIZE_UNLIMITED ? last->memory_max
                                                                                               : last->host_total - GB;
        uint64_t low = budget / 10 * 3;
        usec_t dt = last->mono - ret->s[ret->n - 2].mono;
        if (dt == 0)
                dt = 5 * USEC_PER_SEC;
        Sample s = *last;
        s.failed = s.reported = s.pending = 0;
        memset(s.freed, 0, sizeof(s.freed));
        for (usec_t t = dt; t <= MAX(TAIL, 40 * dt); t += dt) {
                s.mono += dt;
                s.wall += dt;
                if (s.has & SAMPLE_HAS_UPTIME)
                        s.uptime += dt;
                s.memory_current = s.inactive_file + low;
                s.rss = s.rss_anon = low;
                s.ws = low;
                s.psi.some.avg10 = s.psi.some.avg60 = s.psi.full.avg10 = s.psi.full.avg60 = 0;
                trace_add(ret, &cap, &s);
        }
        ret->dt_max = MAX(ret->dt_max, dt);
        return true;
}

/* ---- policies ---- */

typedef struct NamedPolicy {
        char name[128];
        Policy p;
} NamedPolicy;

static void report_problem(void *userdata, const char *message) {
        fprintf(stderr, "%s\n", message);
}

static void load_policies_in(const char *dir, const char *label, NamedPolicy *ret, unsigned *n, unsigned max) {
        DIR *d = opendir(dir);
        struct dirent *de;
        char path[4096];

        assert_non_null(d);
        while ((de = readdir(d)) && *n < max) {
                size_t l = strlen(de->d_name);
                if (l < 5 || !streq(de->d_name + l - 4, ".ini") || streq(de->d_name, "default.ini"))
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                NamedPolicy *np = &ret[*n];
                assert_int_equal(policy_load_default(&np->p), 0);
                if (policy_load_file(path, &np->p, report_problem, NULL) != 0)
                        fail_msg("policy %s does not load", path);
                snprintf(np->name, sizeof(np->name), "%s/%s", label, de->d_name);
                (*n)++;
        }
        closedir(d);
}

/* ---- one run ---- */

enum {
        LOSE_CGROUP,
        LOSE_EVENTS,
        LOSE_PSI,
        LOSE_PROCESS,
        LOSE_HOST,
        LOSE_ALL,
        _LOSE_MAX,
};

static const struct {
        const char *name;
        unsigned bits;  /* what the sampler leaves out when this fails */
        unsigned needs; /* applicable when the trace has one of these */
} lose_modes[_LOSE_MAX] = {
        [LOSE_CGROUP] = { "cgroup files unreadable", SAMPLE_HAS_CGROUP | SAMPLE_HAS_EVENTS | SAMPLE_HAS_PSI,
                          SAMPLE_HAS_CGROUP },
        [LOSE_EVENTS] = { "memory.events unreadable", SAMPLE_HAS_EVENTS, SAMPLE_HAS_EVENTS },
        [LOSE_PSI] = { "memory.pressure unreadable", SAMPLE_HAS_PSI, SAMPLE_HAS_PSI },
        [LOSE_PROCESS] = { "process gone or unreadable", SAMPLE_HAS_PROCESS | SAMPLE_HAS_UPTIME, SAMPLE_HAS_PROCESS },
        [LOSE_HOST] = { "meminfo unreadable", SAMPLE_HAS_HOST, SAMPLE_HAS_HOST },
        [LOSE_ALL] = { "nothing readable",
                       SAMPLE_HAS_CGROUP | SAMPLE_HAS_EVENTS | SAMPLE_HAS_PSI | SAMPLE_HAS_PROCESS | SAMPLE_HAS_UPTIME |
                               SAMPLE_HAS_HOST | SAMPLE_HAS_WS,
                       ~0U },
};

typedef struct Fault {
        unsigned fail_nth;  /* actuator call that fails, 1-based; 0 = none */
        unsigned fail_mask; /* every call of these kinds fails (1 << DecisionKind) */
        int fail_errno;
        size_t lose_at, lose_len; /* samples [lose_at, lose_at + lose_len) lose lose_bits */
        unsigned lose_bits;
        bool lose_with_feedback; /* the sample carrying a failure loses lose_bits too */
        char what[160];
} Fault;

typedef struct Rec {
        usec_t at;
        size_t tick;
        Decision d;
        int error; /* what the fake actuator returned */
} Rec;

typedef struct Totals {
        unsigned long runs, samples, injected, reported, calm_checks, actions, violations;
} Totals;

typedef struct Scenario {
        const Trace *t;
        const NamedPolicy *np;
        Policy p; /* with the trace's --budget */
        bool simulate;
        /* derived from the policy */
        uint32_t calm_bp;  /* calm below this share (min step.at - hysteresis) */
        usec_t calm_eta;   /* and with the ETA above this */
        /* per run */
        Rec *rec;
        size_t n_rec, cap_rec;
        unsigned actions, injected, reported;
        char violation[1024];
        Totals *tot;
        unsigned dumps;
} Scenario;

/* The backoff after a failure, and the rung of an action: from the registry, as the engine. */
static usec_t backoff_of(const Policy *p, ActionKind a) {
        return action_info(a)->backoff(p);
}

_printf_(2, 3) static bool violated(Scenario *sc, const char *fmt, ...) {
        va_list ap;
        if (sc->violation[0])
                return false; /* the first one of a run is the one that counts */
        va_start(ap, fmt);
        vsnprintf(sc->violation, sizeof(sc->violation), fmt, ap);
        va_end(ap);
        return false;
}

static void rec_add(Scenario *sc, usec_t at, size_t tick, const Decision *d, int error) {
        if (sc->n_rec == sc->cap_rec) {
                sc->cap_rec = sc->cap_rec ? sc->cap_rec * 2 : 256;
                sc->rec = realloc(sc->rec, sc->cap_rec * sizeof(Rec));
                assert_non_null(sc->rec);
        }
        sc->rec[sc->n_rec++] = (Rec) { .at = at, .tick = tick, .d = *d, .error = error };
}

static void dump(const Scenario *sc, const Fault *f) {
        usec_t t0 = sc->t->s[0].mono;
        fprintf(stderr, "--- %s, policy %s, %s, %s\n", sc->t->name, sc->np->name, sc->simulate ? "dry run" : "live",
                f->what);
        for (size_t i = 0; i < sc->n_rec; i++)
                fprintf(stderr, "  #%-5zu %8" PRIu64 "s %-11s %-8s%s%s\n", sc->rec[i].tick, (sc->rec[i].at - t0) / USEC_PER_SEC,
                        decision_name(&sc->rec[i].d), level_to_string(sc->rec[i].d.level),
                        sc->rec[i].d.reason, sc->rec[i].error < 0 ? "  [call failed]" : "");
}

/* Runs the trace once with fault f; returns false (and sc->violation) on the first broken rule. */
static bool run(Scenario *sc, const Fault *f) {
        const Trace *t = sc->t;
        const Policy *p = &sc->p;
        Engine *e = NULL;
        EngineOutput out;
        FakeActuator fake = { .fail_nth = f->fail_nth, .fail_mask = f->fail_mask, .fail_errno = f->fail_errno };
        ActionTarget target = { .cgroup_fd = -1 };
        ActionContext ctx = { .target = &target, .policy = p, .dry_run = sc->simulate };
        ActionFeedback fb = {};
        EngineOptions o = { .simulate = sc->simulate, .effects_assumed = sc->simulate };

        assert_int_equal(engine_new(p, &o, &e), 0);
        sc->n_rec = 0;
        sc->actions = sc->injected = sc->reported = 0;
        sc->violation[0] = '\0';

        /* Live: what the actuators wrote shows in the next samples, and a restart makes a new
         * server process. */
        bool ov_high = false, ov_max = false;
        uint64_t high = 0, max = 0;
        unsigned generation = 0;
        usec_t restarted_at = 0;

        unsigned unreported = 0; /* failed actions fed to the engine and not reported yet */
        usec_t last_of[_ACTION_KIND_MAX] = {}, last_ladder = 0, backoff_until[_ACTION_KIND_MAX] = {};
        bool acted[_ACTION_KIND_MAX] = {}, any_ladder = false; /* a trace's clock may start at 0 */
        bool emergency_reset_done = false, last_reset_emergency = false, carry_again = false;
        usec_t emergency_backoff_until = 0; /* an emergency reset failed: none again before this */
        usec_t restarts[RESTART_HISTORY * 4];
        unsigned n_restarts = 0;
        usec_t calm_since = 0;
        Level calm_level = LEVEL_NORMAL;
        char tb[FORMAT_TIMESPAN_MAX];

        for (size_t i = 0; i < t->n && !sc->violation[0]; i++) {
                Sample s = t->s[i];
                /* What the recording memgov's actions reported is not this run's: its own come below. */
                s.failed = s.reported = s.pending = s.not_done = s.found_nothing = s.found_fewer = 0;
                memset(s.freed, 0, sizeof(s.freed));
                if (!sc->simulate) {
                        if ((s.has & SAMPLE_HAS_CGROUP) && ov_high)
                                s.memory_high = high;
                        if ((s.has & SAMPLE_HAS_CGROUP) && ov_max)
                                s.memory_max = max;
                        if (generation > 0 && (s.has & SAMPLE_HAS_PROCESS))
                                s.pid += (pid_t) (100000 * generation);
                        if (generation > 0 && (s.has & SAMPLE_HAS_UPTIME))
                                s.uptime = s.mono - restarted_at;
                }
                bool true_uptime = s.has & SAMPLE_HAS_UPTIME;
                usec_t uptime = s.uptime;

                if (i >= f->lose_at && i < f->lose_at + f->lose_len)
                        s.has &= ~f->lose_bits;
                if (f->lose_with_feedback && fb.failed)
                        s.has &= ~f->lose_bits;
                unsigned fed = fb.failed;
                if (fed & unreported)
                        violated(sc, "tick %zu: a second failure of %s before the first was reported", i,
                                 action_kind_to_string((ActionKind) __builtin_ctz(fed & unreported)));
                unreported |= fed;

                Level before = engine_level(e);
                engine_tick(e, &fb, p, &s, 0, &out);
                usec_t now = s.mono;

                for (unsigned j = 0; j < out.n_decisions; j++) {
                        const Decision *d = &out.decisions[j];
                        int error = 0;

                        if (strlen(d->reason) + 1 >= sizeof(d->reason))
                                violated(sc, "tick %zu: a reason cut at %zu bytes: \"%s\"", i, sizeof(d->reason) - 1,
                                         d->reason);

                        /* A failure against a server process that is gone (decided for it, reported
                         * after the new one was seen): reported, with no backoff (engine.c,
                         * observe_failures). */
                        if (d->kind == DECISION_EFFECT && d->code == EFFECT_FAILED_GONE) {
                                ActionKind a = d->action;
                                if (!(unreported & (1u << a)) || action_info(a)->lane != ACTION_LANE_SERVER)
                                        violated(sc, "tick %zu: \"%s\" with no failure of %s to report, or not of "
                                                 "an action on the server", i, d->reason, action_kind_to_string(a));
                                unreported &= ~(1u << a);
                                sc->reported++;
                        } else if (d->kind == DECISION_EFFECT && d->code == EFFECT_FAILED_CARRY) {
                                /* The lowering carried to a new server process, tried again at
                                 * once (engine.c, observe_failures): reported, no backoff, and its
                                 * next try not held by the cooldown of the one that failed. */
                                ActionKind a = d->action;
                                if (!(unreported & (1u << a)) || a != ACTION_ADMIT)
                                        violated(sc, "tick %zu: \"%s\" with no failure of admission to report", i,
                                                 d->reason);
                                unreported &= ~(1u << a);
                                carry_again = true;
                                sc->reported++;
                        } else if (d->kind == DECISION_EFFECT && strstr(d->reason, " failed: ")) {
                                ActionKind a = d->action;
                                char want[128];
                                snprintf(want, sizeof(want), "%s failed: not tried again for %s",
                                         action_kind_to_string(a), format_timespan(tb, backoff_of(p, a)));
                                if (!(unreported & (1u << a)))
                                        violated(sc, "tick %zu: \"%s\" reported with no failure of %s to report", i,
                                                 d->reason, action_kind_to_string(a));
                                else if (strncmp(d->reason, want, strlen(want)) != 0)
                                        violated(sc, "tick %zu: \"%s\", expected \"%s...\"", i, d->reason, want);
                                /* The failure of a reset at reset.min-memory does not hold the
                                 * emergency reset back, and says so; an emergency reset's own does. */
                                bool excepted = a == ACTION_RESET && !last_reset_emergency &&
                                                p->reset_emergency_max > 0 && p->reset_method == RESET_SQL;
                                if (!!strstr(d->reason, "(an emergency reset excepted)") != excepted)
                                        violated(sc, "tick %zu: \"%s\" %s the emergency reset", i, d->reason,
                                                 excepted ? "does not except" : "excepts");
                                if (a == ACTION_RESET && last_reset_emergency)
                                        emergency_backoff_until = now + backoff_of(p, a);
                                unreported &= ~(1u << a);
                                backoff_until[a] = now + backoff_of(p, a);
                                sc->reported++;
                        }

                        /* A new server process starts without the settings memgov changed:
                         * their changes are paced afresh; and no failure against the old process
                         * holds what acts on the server (engine.c, observe_events). */
                        if (d->kind == DECISION_EVENT &&
                            (d->code == EVENT_RESTART_DONE || d->code == EVENT_RESTART_FOREIGN)) {
                                for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++) {
                                        if (unreported & (1u << a))
                                                continue;
                                        if (action_info(a)->process_setting)
                                                acted[a] = false;
                                        if (action_info(a)->process_setting || action_info(a)->lane == ACTION_LANE_SERVER)
                                                backoff_until[a] = 0;
                                        if (a == ACTION_RESET)
                                                emergency_backoff_until = 0;
                                }
                                /* The emergency reset ended sessions of the old process: the
                                 * new one's may be ended in this emergency. */
                                emergency_reset_done = false;
                        }

                        if (decision_is_action(d)) {
                                ActionKind a = d->action;
                                /* The emergency reset: once an emergency (the fake actuator's
                                 * resets end no session it reports), past the cooldown and the
                                 * backoff of a reset at reset.min-memory, never within the
                                 * backoff of its own failure (engine.c, emergency_reset_ready). */
                                bool exempt = d->code == ACTION_EMERGENCY_RESET && d->emergency;
                                sc->actions++;
                                if (exempt && emergency_reset_done)
                                        violated(sc, "tick %zu: a second emergency reset in one emergency", i);
                                if (exempt)
                                        emergency_reset_done = true;
                                if (a == ACTION_RESET)
                                        last_reset_emergency = exempt;
                                usec_t until = exempt ? emergency_backoff_until : backoff_until[a];
                                if (now < until)
                                        violated(sc, "tick %zu: %s %s before the end of the backoff announced for it",
                                                 i, decision_name(d), format_timespan(tb, until - now));
                                if (action_info(a)->paced) {
                                        usec_t cd = p->step[action_info(a)->level].cooldown;
                                        bool again = a == ACTION_ADMIT && carry_again && d->admit.carried;
                                        if (a == ACTION_ADMIT)
                                                carry_again = false;
                                        if (acted[a] && !exempt && !again && now - last_of[a] < cd)
                                                violated(sc, "tick %zu: %s %s after the previous one, under its cooldown",
                                                         i, decision_name(d),
                                                         format_timespan(tb, now - last_of[a]));
                                        if (any_ladder && !d->emergency && !(a == ACTION_ADMIT && d->admit.carried) && now - last_ladder < p->settle)
                                                violated(sc, "tick %zu: %s %s after the previous ladder action, under settle",
                                                         i, decision_name(d),
                                                         format_timespan(tb, now - last_ladder));
                                        last_of[a] = last_ladder = now;
                                        acted[a] = any_ladder = true;
                                }
                                if (d->action == ACTION_RESTART) {
                                        usec_t c = (s.has & SAMPLE_HAS_WALL) ? s.wall : s.mono;
                                        unsigned within = 1;
                                        for (unsigned k = 0; k < n_restarts; k++)
                                                if (restarts[k] <= c && c - restarts[k] < USEC_PER_DAY)
                                                        within++;
                                        if (within > p->restart_max_per_day)
                                                violated(sc, "tick %zu: restart number %u in 24h (max-per-day %u)", i,
                                                         within, p->restart_max_per_day);
                                        if (n_restarts < ELEMENTSOF(restarts))
                                                restarts[n_restarts++] = c;
                                        /* Only a server already at restart.at in an emergency is
                                         * restarted young: the kernel would restart it anyway. */
                                        bool due = d->emergency && p->step[LEVEL_RESTART].at > 0 &&
                                                   out.ws_bp >= p->step[LEVEL_RESTART].at;
                                        if (true_uptime && uptime < p->restart_min_uptime && !due)
                                                violated(sc, "tick %zu: restart of a server up for %s (min-uptime %s)", i,
                                                         format_timespan(tb, uptime),
                                                         format_timespan((char[FORMAT_TIMESPAN_MAX]) {},
                                                                         p->restart_min_uptime));
                                        if (p->n_windows > 0 && !d->emergency &&
                                            (!(s.has & SAMPLE_HAS_WALL) ||
                                             !windows_contain(p->windows, p->n_windows,
                                                              minute_of_week(s.wall, s.utc_offset))))
                                                violated(sc, "tick %zu: restart outside restart.windows, not an emergency", i);
                                }

                                ActionResult res;
                                actuator_run(&actuator_ops_fake, &fake, &ctx, d, &res);
                                error = res.error;
                                if (res.error < 0)
                                        sc->injected++;
                                action_feedback_add(&fb, d, &res);
                                if (!sc->simulate && res.error == 0) {
                                        if (d->action == ACTION_SET_HIGH) {
                                                ov_high = true;
                                                high = d->value;
                                        } else if (d->action == ACTION_SET_MAX) {
                                                ov_max = true;
                                                max = d->value;
                                        } else if (d->action == ACTION_RESTART) {
                                                generation++;
                                                restarted_at = now;
                                        }
                                }
                        }
                        rec_add(sc, now, i, d, error);
                }

                /* The engine had a working set and a budget: every failure fed so far is known. */
                if (out.ws != SIZE_UNKNOWN && out.budget != SIZE_UNKNOWN && unreported)
                        violated(sc, "tick %zu: the failure of %s fed to the engine is not reported", i,
                                 action_kind_to_string((ActionKind) __builtin_ctz(unreported)));

                if (!(p->emergency_eta > 0 && out.eta <= p->emergency_eta))
                        emergency_reset_done = false; /* the emergency is over */
                bool calm = out.ws != SIZE_UNKNOWN && out.budget != SIZE_UNKNOWN && out.ws_bp < sc->calm_bp &&
                            (out.eta == USEC_INFINITY || out.eta > sc->calm_eta);
                if (!calm)
                        calm_since = 0;
                else {
                        if (calm_since == 0) {
                                calm_since = now;
                                calm_level = out.level;
                        } else if (out.level > before)
                                violated(sc, "tick %zu: the level rose to %s while calm", i, level_to_string(out.level));
                        if (now - calm_since >= (usec_t) calm_level * (p->settle + t->dt_max)) {
                                sc->tot->calm_checks++;
                                if (out.level != LEVEL_NORMAL)
                                        violated(sc, "tick %zu: level %s, calm for %s", i, level_to_string(out.level),
                                                 format_timespan(tb, now - calm_since));
                        }
                }
        }
        /* Live: memory.max is raised only while a restart is under way, and always put back. */
        if (!sc->simulate && ov_max && (t->s[t->n - 1].has & SAMPLE_HAS_CGROUP) && max != t->s[t->n - 1].memory_max)
                violated(sc, "memory.max left at %" PRIu64 " after the run, not put back to %" PRIu64, max,
                         t->s[t->n - 1].memory_max);
        if (!sc->violation[0] && unreported)
                violated(sc, "the failure of %s was never reported", action_kind_to_string((ActionKind) __builtin_ctz(unreported)));
        if (!sc->violation[0] && sc->injected != sc->reported)
                violated(sc, "%u failure(s) injected, %u reported", sc->injected, sc->reported);

        sc->tot->runs++;
        sc->tot->samples += t->n;
        sc->tot->injected += sc->injected;
        sc->tot->reported += sc->reported;
        sc->tot->actions += sc->actions;
        engine_free(e);
        if (sc->violation[0]) {
                sc->tot->violations++;
                fprintf(stderr, "VIOLATION: %s, policy %s, %s, %s: %s\n", t->name, sc->np->name,
                        sc->simulate ? "dry run" : "live", f->what, sc->violation);
                if (sc->dumps++ < MAX_DUMPS && getenv("MEMGOV_FAULTS_VERBOSE"))
                        dump(sc, f);
                return false;
        }
        return true;
}

/* ---- the scenarios ---- */

typedef struct Case {
        const Trace *t;
        const NamedPolicy *np;
        Totals *tot;
} Case;

static void scenario_init(Scenario *sc, const Case *c, bool simulate) {
        *sc = (Scenario) { .t = c->t, .np = c->np, .p = c->np->p, .simulate = simulate, .tot = c->tot };
        if (c->t->budget) {
                sc->p.budget_mode = BUDGET_SIZE;
                sc->p.budget_size = c->t->budget;
        }
        uint32_t min_at = BP_ONE * 10;
        usec_t max_eta = 0;
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++) {
                const StepPolicy *st = &sc->p.step[l];
                if (!st->enabled)
                        continue;
                if (st->at > 0)
                        min_at = MIN(min_at, st->at);
                if (st->eta > 0)
                        max_eta = MAX(max_eta, st->eta + apply_bp(st->eta, sc->p.eta_hysteresis));
        }
        sc->calm_bp = min_at > sc->p.hysteresis ? min_at - sc->p.hysteresis : 0;
        sc->calm_eta = max_eta;
}

static unsigned run_scenario(const Case *c, bool simulate) {
        Scenario sc;
        Fault f = {};
        unsigned bad = 0;

        scenario_init(&sc, c, simulate);

        /* The run without faults: how many actions, and after which samples. */
        snprintf(f.what, sizeof(f.what), "no fault");
        bad += !run(&sc, &f);
        if (getenv("MEMGOV_FAULTS_DUMP"))
                dump(&sc, &f);
        unsigned actions = sc.actions;
        size_t after_action[POST_ACTION];
        unsigned n_after = 0;
        for (size_t i = 0; i < sc.n_rec && n_after < POST_ACTION; i++)
                if (decision_is_action(&sc.rec[i].d) && (n_after == 0 || after_action[n_after - 1] != sc.rec[i].tick + 1))
                        after_action[n_after++] = sc.rec[i].tick + 1;
        unsigned kinds = 0;
        for (size_t i = 0; i < sc.n_rec; i++)
                if (decision_is_action(&sc.rec[i].d))
                        kinds |= 1u << sc.rec[i].d.action;

        /* (a) call N fails, for every N. */
        for (unsigned n = 1; n <= actions; n++) {
                int err = errnos[n % ELEMENTSOF(errnos)];
                f = (Fault) { .fail_nth = n, .fail_errno = err };
                snprintf(f.what, sizeof(f.what), "actuator call %u of %u fails with %s", n, actions, strerrorname_np(err));
                bool ok = run(&sc, &f);
                bad += !ok;
                if (ok && sc.injected != 1) {
                        fprintf(stderr, "VIOLATION: %s, policy %s: %s: %u failures injected\n", c->t->name,
                                c->np->name, f.what, sc.injected);
                        bad++;
                }
        }
        /* Every call of one kind fails. */
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++) {
                if (!(kinds & (1u << k)))
                        continue;
                f = (Fault) { .fail_mask = 1u << k, .fail_errno = k == ACTION_SET_HIGH ? EPERM : ESRCH };
                snprintf(f.what, sizeof(f.what), "every %s call fails", action_kind_to_string(k));
                bad += !run(&sc, &f);
        }
        /* Call N fails, and the sample that brings the failure back holds nothing. */
        for (unsigned n = 1; n <= actions; n++) {
                f = (Fault) { .fail_nth = n, .fail_errno = EIO, .lose_bits = lose_modes[LOSE_ALL].bits,
                              .lose_with_feedback = true };
                snprintf(f.what, sizeof(f.what), "actuator call %u fails and the next sample is unreadable", n);
                bad += !run(&sc, &f);
        }

        /* (b) sample N, or BURST samples from N, lost a group of fields. */
        for (unsigned m = 0; m < _LOSE_MAX; m++) {
                if (!(c->t->has & lose_modes[m].needs))
                        continue;
                size_t at[POSITIONS + POST_ACTION];
                unsigned n_at = 0;
                for (unsigned k = 0; k < POSITIONS; k++)
                        at[n_at++] = c->t->n_trace * k / POSITIONS + (k % 3);
                for (unsigned k = 0; k < n_after; k++)
                        at[n_at++] = after_action[k];
                for (unsigned k = 0; k < n_at; k++)
                        for (size_t len = 1; len <= BURST; len += BURST - 1) {
                                f = (Fault) { .lose_at = at[k], .lose_len = len, .lose_bits = lose_modes[m].bits };
                                snprintf(f.what, sizeof(f.what), "samples %zu..%zu: %s", at[k], at[k] + len - 1,
                                         lose_modes[m].name);
                                bad += !run(&sc, &f);
                        }
        }
        free(sc.rec);
        return bad;
}

static void test_case(void **state) {
        const Case *c = *state;
        unsigned long runs = c->tot->runs;
        unsigned bad = run_scenario(c, true) + run_scenario(c, false);
        printf("# %s, policy %s: %lu runs\n", c->t->name, c->np->name, c->tot->runs - runs);
        if (bad)
                fail_msg("%u run(s) broke an invariant (see above; MEMGOV_FAULTS_VERBOSE=1 for the decisions)", bad);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int main(int argc, char **argv) {
        char dir[4096], pdir[4096];
        unsigned shard = 1, shards = 1;
        NamedPolicy *pols = calloc(16, sizeof(NamedPolicy));
        Trace traces[16];
        char *names[16];
        unsigned n_pol = 0, n_names = 0, n_traces = 0;
        Totals tot = {};

        if (argc > 2 || (argc == 2 && (sscanf(argv[1], "%u/%u", &shard, &shards) != 2 || shards == 0 ||
                                       shard == 0 || shard > shards))) {
                fprintf(stderr, "usage: %s [SHARD/SHARDS], e.g. 1/2\n", argv[0]);
                return EXIT_FAILURE;
        }
        assert_non_null(pols);
        snprintf(dir, sizeof(dir), "%s/tests/replay", source_root());
        snprintf(pdir, sizeof(pdir), "%s/policies", source_root());

        assert_int_equal(policy_load_default(&pols[0].p), 0);
        snprintf(pols[0].name, sizeof(pols[0].name), "default");
        n_pol = 1;
        load_policies_in(pdir, "policies", pols, &n_pol, 16);
        load_policies_in(dir, "tests/replay", pols, &n_pol, 16);

        DIR *d = opendir(dir);
        struct dirent *de;
        assert_non_null(d);
        while ((de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (l > 4 && (streq(de->d_name + l - 4, ".csv") || streq(de->d_name + l - 4, ".tsv"))) {
                        if (n_names == ELEMENTSOF(names))
                                fail_msg("more than %zu traces in %s: make room for them here", ELEMENTSOF(names), dir);
                        names[n_names++] = strdup(de->d_name);
                }
        }
        closedir(d);
        qsort(names, n_names, sizeof(char *), cmp_str);
        for (unsigned i = 0; i < n_names; i++) {
                if (trace_load(dir, names[i], &traces[n_traces]))
                        n_traces++;
                free(names[i]);
        }

        const char *only = getenv("MEMGOV_FAULTS_ONLY"); /* "trace" or "trace:policy", to narrow a run */
        struct CMUnitTest *tests = calloc(n_traces * n_pol, sizeof(struct CMUnitTest));
        Case *cases = calloc(n_traces * n_pol, sizeof(Case));
        char **tnames = calloc(n_traces * n_pol, sizeof(char *));
        unsigned n = 0, seen = 0;
        assert_true(tests && cases && tnames);
        for (unsigned i = 0; i < n_traces; i++)
                for (unsigned j = 0; j < n_pol; j++) {
                        char name[300];
                        snprintf(name, sizeof(name), "%s:%s", traces[i].name, pols[j].name);
                        if (only && !strstr(name, only))
                                continue;
                        if (seen++ % shards != shard - 1)
                                continue;
                        cases[n] = (Case) { .t = &traces[i], .np = &pols[j], .tot = &tot };
                        tnames[n] = strdup(name);
                        tests[n] = (struct CMUnitTest) { .name = tnames[n], .test_func = test_case,
                                                         .initial_state = &cases[n] };
                        n++;
                }
        int r = _cmocka_run_group_tests("engine-faults", tests, n, NULL, NULL);
        printf("# engine faults: %lu runs over %u traces and %u policies, %lu samples, %lu action decisions, "
               "%lu failures injected, %lu reported, %lu no-stuck-level checks, %lu violations\n",
               tot.runs, n_traces, n_pol, tot.samples, tot.actions, tot.injected, tot.reported, tot.calm_checks,
               tot.violations);
        for (unsigned i = 0; i < n; i++)
                free(tnames[i]);
        for (unsigned i = 0; i < n_traces; i++)
                free(traces[i].s);
        free(tnames);
        free(tests);
        free(cases);
        free(pols);
        return r;
}
