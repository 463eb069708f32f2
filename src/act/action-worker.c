/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "memgov/action-worker.h"
#include "memgov/clock.h"
#include "memgov/units.h"

/* One thread and its queue per lane (action.h): a job waits only behind its own lane's. */
typedef struct Lane {
        ActionWorker *w;
        ActionLane id;
        pthread_t thread;
        bool started;
        pthread_cond_t cond;
        ActionJob *queue; /* ACTION_QUEUE pending jobs */
        unsigned head, n;
        ActionJob *running; /* the one being carried out (a copy) */
        bool busy;
        bool idle_running; /* the idle hook, on the server's lane */
} Lane;

struct ActionWorker {
        pthread_mutex_t lock; /* the lanes', the results' and the idle hook's */
        bool stop;
        const ActuatorOps *ops;
        void *userdata;
        StateFile *state; /* given to every job and to the idle hook */
        int eventfd;

        Lane lane[_ACTION_LANE_MAX];
        ActionJob *done; /* DONE_MAX finished jobs waiting to be collected */
        unsigned done_n;
        uint64_t next_id;
        usec_t (*timeout)(const Policy *p, ActionKind k); /* NULL = no limit */

        /* The idle hook's server (action_worker_keep), and when it runs next: on the server's
         * lane, the one that talks to it. */
        bool keep_set, keep_now;
        ActionTarget keep_target;
        Policy *keep_policy;
        bool keep_dry_run;
        usec_t next_idle;
};

#define DONE_MAX (ACTION_QUEUE * _ACTION_LANE_MAX)

/* Runs the idle hook with the lock released, on a copy of what action_worker_keep gave. */
static void run_idle(ActionWorker *w, ActionJob *scratch) {
        scratch->target = w->keep_target;
        scratch->target.cgroup_fd = -1;
        scratch->policy = *w->keep_policy;
        scratch->dry_run = w->keep_dry_run;
        w->keep_now = false;
        w->next_idle = now_clock(CLOCK_MONOTONIC) + ACTION_IDLE_EVERY;
        Lane *l = &w->lane[ACTION_LANE_SERVER];
        l->idle_running = true;
        pthread_mutex_unlock(&w->lock);
        ActionContext c = { .target = &scratch->target, .policy = &scratch->policy, .dry_run = scratch->dry_run,
                            .state = w->state };
        usec_t again = w->ops->idle(w->userdata, &c);
        pthread_mutex_lock(&w->lock);
        l->idle_running = false;
        w->next_idle = now_clock(CLOCK_MONOTONIC) + (again > 0 ? again : ACTION_IDLE_EVERY);
}

/* A job of the restart lane waits for the limits submitted before it (the raise of memory.max
 * and memory.high out of the way of the stop): the two lanes apart, so that a limit decided
 * while the server stops is not queued behind the restart, which holds its thread until the
 * server is back.
 * Seen with one lane: a raise decided 2 s into a 9 s restart replaced by the restore unwritten. */
static bool behind_limits(const ActionWorker *w, const Lane *l) {
        if (l->id != ACTION_LANE_RESTART || l->n == 0)
                return false;
        uint64_t order = l->queue[l->head].order;
        const Lane *p = &w->lane[ACTION_LANE_PROMPT];
        if (p->busy && p->running->order < order)
                return true;
        for (unsigned k = 0; k < p->n; k++)
                if (p->queue[(p->head + k) % ACTION_QUEUE].order < order)
                        return true;
        return false;
}

static void *lane_main(void *arg) {
        Lane *l = arg;
        ActionWorker *w = l->w;
        /* The thread hooks (the kept SQL session) and the idle hook belong to the lane that
         * talks to the server; the prompt lane's restart opens what it needs itself. */
        bool server = l->id == ACTION_LANE_SERVER;

        if (server && w->ops->thread_begin)
                w->ops->thread_begin(w->userdata);
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->stop && (l->n == 0 || behind_limits(w, l))) {
                        bool idle = server && w->ops->idle && w->keep_set;
                        if (idle && (w->keep_now || now_clock(CLOCK_MONOTONIC) >= w->next_idle)) {
                                run_idle(w, l->running);
                                continue;
                        }
                        if (!idle) {
                                pthread_cond_wait(&l->cond, &w->lock);
                                continue;
                        }
                        struct timespec ts = { .tv_sec = (time_t) (w->next_idle / USEC_PER_SEC),
                                               .tv_nsec = (long) (w->next_idle % USEC_PER_SEC) * 1000 };
                        pthread_cond_timedwait(&l->cond, &w->lock, &ts);
                }
                if (w->stop)
                        break;
                *l->running = l->queue[l->head];
                l->head = (l->head + 1) % ACTION_QUEUE;
                l->n--;
                l->busy = true;
                l->running->started = now_clock(CLOCK_MONOTONIC);
                pthread_mutex_unlock(&w->lock);

                ActionJob *j = l->running;
                ActionContext c = { .target = &j->target, .policy = &j->policy, .dry_run = j->dry_run,
                                    .state = w->state };
                actuator_run(w->ops, w->userdata, &c, &j->decision, &j->result);
                if (j->target.cgroup_fd >= 0) {
                        close(j->target.cgroup_fd);
                        j->target.cgroup_fd = -1;
                }
                j->finished = now_clock(CLOCK_MONOTONIC);

                pthread_mutex_lock(&w->lock);
                if (w->done_n < DONE_MAX)
                        w->done[w->done_n++] = *j;
                l->busy = false;
                if (l->id == ACTION_LANE_PROMPT)
                        pthread_cond_signal(&w->lane[ACTION_LANE_RESTART].cond);
                uint64_t one = 1;
                (void) !write(w->eventfd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&w->lock);
        if (server && w->ops->thread_end)
                w->ops->thread_end(w->userdata);
        return NULL;
}

static bool worker_stop(ActionWorker *w);

int action_worker_new(ActionWorker **ret, const ActuatorOps *ops, void *userdata,
                      usec_t (*timeout)(const Policy *p, ActionKind k)) {
        assert(ret && ops);
        ActionWorker *w = calloc(1, sizeof(ActionWorker));
        if (!w)
                return -ENOMEM;
        *w = (ActionWorker) { .ops = ops, .userdata = userdata, .eventfd = -1, .next_id = 1, .timeout = timeout };
        pthread_mutex_init(&w->lock, NULL);
        /* The idle hook's timed wait is on the monotonic clock, as now_clock(). */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        bool ok = true;
        for (ActionLane i = 0; i < _ACTION_LANE_MAX; i++) {
                Lane *l = &w->lane[i];
                *l = (Lane) { .w = w, .id = i };
                pthread_cond_init(&l->cond, &ca);
                l->queue = calloc(ACTION_QUEUE, sizeof(ActionJob));
                l->running = calloc(1, sizeof(ActionJob));
                ok = ok && l->queue && l->running;
        }
        pthread_condattr_destroy(&ca);
        w->done = calloc(DONE_MAX, sizeof(ActionJob));
        w->keep_policy = calloc(1, sizeof(Policy));
        w->eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!ok || !w->done || !w->keep_policy || w->eventfd < 0) {
                int r = w->eventfd < 0 ? negative_errno() : -ENOMEM;
                worker_stop(w);
                free(w);
                return r;
        }
        /* The threads need little stack and must not take signals meant for the loop. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        int r = 0;
        for (ActionLane i = 0; i < _ACTION_LANE_MAX && r == 0; i++) {
                r = pthread_create(&w->lane[i].thread, &attr, lane_main, &w->lane[i]);
                w->lane[i].started = r == 0;
        }
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                if (!worker_stop(w))
                        free(w);
                return -r;
        }
        *ret = w;
        return 0;
}

int action_worker_fd(const ActionWorker *w) {
        return w ? w->eventfd : -1;
}

ActionWorker *action_worker_free(ActionWorker *w) {
        if (!w)
                return NULL;
        if (!worker_stop(w))
                free(w);
        return NULL;
}

/* Stops the threads and frees the buffers; true when a job is stuck in a thread (blocked in the
 * kernel, a memory.high write under reclaim): that thread is left behind with everything it
 * uses, the worker included, since it may still come back to them; the process exits anyway. */
static bool worker_stop(ActionWorker *w) {
        bool stuck = false;
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        for (ActionLane i = 0; i < _ACTION_LANE_MAX; i++)
                pthread_cond_signal(&w->lane[i].cond);
        pthread_mutex_unlock(&w->lock);
        for (ActionLane i = 0; i < _ACTION_LANE_MAX; i++) {
                Lane *l = &w->lane[i];
                if (!l->started)
                        continue;
                pthread_mutex_lock(&w->lock);
                bool busy = l->busy;
                pthread_mutex_unlock(&w->lock);
                if (busy) {
                        pthread_detach(l->thread);
                        stuck = true;
                } else
                        pthread_join(l->thread, NULL);
                l->started = false;
        }
        if (stuck)
                return true;
        for (ActionLane i = 0; i < _ACTION_LANE_MAX; i++) {
                Lane *l = &w->lane[i];
                pthread_cond_destroy(&l->cond);
                free(l->running);
                free(l->queue);
                l->queue = l->running = NULL;
        }
        pthread_mutex_destroy(&w->lock);
        free(w->keep_policy);
        free(w->done);
        if (w->eventfd >= 0)
                close(w->eventfd);
        w->eventfd = -1;
        w->done = NULL;
        w->keep_policy = NULL;
        return false;
}

/* The emergency reset goes ahead of the jobs waiting on its lane: it is decided with the OOM
 * nearer than restart.emergency-eta, and what it ends is given back within seconds, where a trim,
 * an admission or a pool step decided before it gives back little or nothing as soon. Seen in
 * the outcome benchmark's storm (MySQL 9.7): an emergency reset decided 2m48s before the OOM
 * waited 20 s behind a trim and an admission, and freed 232M 5 s after the restart had begun. */
static bool goes_first(const ActionJob *j) {
        return j->decision.kind == DECISION_ACTION && j->decision.code == ACTION_EMERGENCY_RESET;
}

int action_worker_submit(ActionWorker *w, ActionJob *job) {
        assert(job);
        if (!w)
                return -ENODEV;
        const ActionInfo *info = action_info(job->decision.action);
        Lane *l = &w->lane[info->lane];
        pthread_mutex_lock(&w->lock);
        job->id = job->order = w->next_id++;
        job->submitted = now_clock(CLOCK_MONOTONIC);
        job->result = (ActionResult) {};
        /* A limit's newer value replaces the one still queued, in its place; never a dry run's
         * for a real write (the put-back of a reload into a dry run), nor the other way round. */
        if (info->sets_limit)
                for (unsigned i = 0; i < l->n; i++) {
                        ActionJob *q = &l->queue[(l->head + i) % ACTION_QUEUE];
                        if (q->decision.action == job->decision.action && q->dry_run == job->dry_run) {
                                if (q->target.cgroup_fd >= 0)
                                        close(q->target.cgroup_fd);
                                job->order = q->order;
                                *q = *job;
                                pthread_mutex_unlock(&w->lock);
                                return 0;
                        }
                }
        if (l->n == ACTION_QUEUE) {
                pthread_mutex_unlock(&w->lock);
                return -EBUSY;
        }
        /* Its place: the end of the queue, or for one that goes first, before the first waiting
         * that does not (the one under way goes on). */
        unsigned at = l->n;
        if (goes_first(job))
                for (at = 0; at < l->n && goes_first(&l->queue[(l->head + at) % ACTION_QUEUE]); at++)
                        ;
        job->behind_idle = l->idle_running;
        job->behind_jobs = (l->busy ? 1 : 0) + at;
        for (unsigned i = l->n; i > at; i--)
                l->queue[(l->head + i) % ACTION_QUEUE] = l->queue[(l->head + i - 1) % ACTION_QUEUE];
        l->queue[(l->head + at) % ACTION_QUEUE] = *job;
        l->n++;
        pthread_cond_signal(&l->cond);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

void action_job_waited(const ActionJob *j, char *buf, size_t size) {
        char t[FORMAT_TIMESPAN_MAX], what[96] = "";
        assert(j && buf);
        buf[0] = '\0';
        if (j->started < j->submitted + ACTION_WAITED_SAY)
                return;
        if (j->behind_idle)
                snprintf(what, sizeof(what), ", behind the upkeep of the server (its session, the buffer pool's fill)");
        if (j->behind_jobs > 0)
                snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s %u other action(s)",
                         j->behind_idle ? " and" : ", behind", j->behind_jobs);
        snprintf(buf, size, "; begun %s after it was decided%s", format_timespan(t, j->started - j->submitted), what);
}

void action_worker_set_state(ActionWorker *w, StateFile *state) {
        pthread_mutex_lock(&w->lock);
        w->state = state;
        pthread_mutex_unlock(&w->lock);
}

void action_worker_keep(ActionWorker *w, const ActionTarget *target, const Policy *policy, bool dry_run) {
        assert(target);
        assert(policy);
        if (!w || !w->ops->idle)
                return;
        pthread_mutex_lock(&w->lock);
        bool changed = !w->keep_set || w->keep_target.pid != target->pid ||
                       w->keep_target.starttime != target->starttime;
        w->keep_target = *target;
        w->keep_target.cgroup_fd = -1;
        *w->keep_policy = *policy;
        w->keep_dry_run = dry_run;
        w->keep_set = true;
        if (changed) {
                w->keep_now = true;
                pthread_cond_signal(&w->lane[ACTION_LANE_SERVER].cond);
        }
        pthread_mutex_unlock(&w->lock);
}

unsigned action_worker_collect(ActionWorker *w, ActionJob *out, unsigned max) {
        assert(w);
        assert(out);
        uint64_t v;
        if (!w)
                return 0;
        (void) !read(w->eventfd, &v, sizeof(v));
        pthread_mutex_lock(&w->lock);
        unsigned n = MIN(w->done_n, max);
        memcpy(out, w->done, n * sizeof(ActionJob));
        memmove(w->done, w->done + n, (w->done_n - n) * sizeof(ActionJob));
        w->done_n -= n;
        /* More than max were waiting: the eventfd says so again, for the next call. */
        if (w->done_n > 0) {
                uint64_t one = 1;
                (void) !write(w->eventfd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&w->lock);
        return n;
}

unsigned action_worker_pending(ActionWorker *w) {
        assert(w);
        unsigned mask = 0;
        if (!w)
                return 0;
        pthread_mutex_lock(&w->lock);
        for (ActionLane i = 0; i < _ACTION_LANE_MAX; i++) {
                const Lane *l = &w->lane[i];
                if (l->busy)
                        mask |= 1u << l->running->decision.action;
                for (unsigned k = 0; k < l->n; k++)
                        mask |= 1u << l->queue[(l->head + k) % ACTION_QUEUE].decision.action;
        }
        /* Finished, but its result is not collected yet: to the engine it is still outstanding.
         * Otherwise a job that ends while a sample is read looks done with no result, and the
         * engine would judge it by the working set alone. */
        for (unsigned i = 0; i < w->done_n; i++)
                mask |= 1u << w->done[i].decision.action;
        pthread_mutex_unlock(&w->lock);
        return mask;
}

/* Lane lane's job, or (lane _ACTION_LANE_MAX) the one carried out for the longest of all lanes.
 * Looking does not change the worker: the lock is taken all the same. */
static bool running_job(const ActionWorker *w, ActionLane lane, uint64_t *ret_id, Decision *ret_decision,
                        usec_t *ret_started) {
        if (!w)
                return false;
        assert(ret_id);
        assert(ret_decision);
        assert(ret_started);
        pthread_mutex_t *lock = (pthread_mutex_t *) &w->lock;
        pthread_mutex_lock(lock);
        const ActionJob *j = NULL;
        for (ActionLane i = 0; i < _ACTION_LANE_MAX; i++) {
                const Lane *l = &w->lane[i];
                if ((lane == _ACTION_LANE_MAX || lane == i) && l->busy && (!j || l->running->started < j->started))
                        j = l->running;
        }
        if (j) {
                *ret_id = j->id;
                *ret_decision = j->decision;
                *ret_started = j->started;
        }
        pthread_mutex_unlock(lock);
        return j != NULL;
}

bool action_worker_current(const ActionWorker *w, uint64_t *ret_id, Decision *ret_decision, usec_t *ret_started) {
        return running_job(w, _ACTION_LANE_MAX, ret_id, ret_decision, ret_started);
}

bool action_worker_current_in(const ActionWorker *w, ActionLane lane, uint64_t *ret_id, Decision *ret_decision,
                              usec_t *ret_started) {
        assert(lane < _ACTION_LANE_MAX);
        return running_job(w, lane, ret_id, ret_decision, ret_started);
}

bool action_worker_wedged(const ActionWorker *w, usec_t now, Decision *ret_decision, usec_t *ret_running) {
        assert(w);
        assert(ret_decision);
        assert(ret_running);
        pthread_mutex_t *lock = (pthread_mutex_t *) &w->lock;
        bool wedged = false;

        if (!w || !w->timeout)
                return false;
        pthread_mutex_lock(lock);
        for (ActionLane i = 0; i < _ACTION_LANE_MAX && !wedged; i++) {
                const Lane *l = &w->lane[i];
                if (!l->started || !l->busy)
                        continue;
                usec_t running = now > l->running->started ? now - l->running->started : 0;
                wedged = running >= w->timeout(&l->running->policy, l->running->decision.action) + ACTION_WEDGED_MARGIN;
                if (wedged) {
                        *ret_decision = l->running->decision;
                        *ret_running = running;
                }
        }
        pthread_mutex_unlock(lock);
        return wedged;
}
