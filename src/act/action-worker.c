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

struct ActionWorker {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool started, stop;
        const ActuatorOps *ops;
        void *userdata;
        int eventfd;

        ActionJob *queue; /* ACTION_QUEUE pending jobs */
        unsigned head, n;
        ActionJob *running; /* the one being carried out (a copy) */
        bool busy;
        ActionJob *done; /* ACTION_QUEUE finished jobs waiting to be collected */
        unsigned done_n;
        uint64_t next_id;
        usec_t (*timeout)(const Policy *p, ActionKind k); /* NULL = no limit */

        /* The idle hook's server (action_worker_keep), and when it runs next. */
        bool keep_set, keep_now;
        ActionTarget keep_target;
        Policy *keep_policy;
        bool keep_dry_run;
        usec_t next_idle;
};

/* Runs the idle hook with the lock released, on a copy of what action_worker_keep gave. */
static void run_idle(ActionWorker *w, ActionJob *scratch) {
        scratch->target = w->keep_target;
        scratch->target.cgroup_fd = -1;
        scratch->policy = *w->keep_policy;
        scratch->dry_run = w->keep_dry_run;
        w->keep_now = false;
        w->next_idle = now_clock(CLOCK_MONOTONIC) + ACTION_IDLE_EVERY;
        pthread_mutex_unlock(&w->lock);
        ActionContext c = { .target = &scratch->target, .policy = &scratch->policy, .dry_run = scratch->dry_run };
        w->ops->idle(w->userdata, &c);
        pthread_mutex_lock(&w->lock);
}

static void *worker_main(void *arg) {
        ActionWorker *w = arg;

        if (w->ops->thread_begin)
                w->ops->thread_begin(w->userdata);
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->stop && w->n == 0) {
                        bool idle = w->ops->idle && w->keep_set;
                        if (idle && (w->keep_now || now_clock(CLOCK_MONOTONIC) >= w->next_idle)) {
                                run_idle(w, w->running);
                                continue;
                        }
                        if (!idle) {
                                pthread_cond_wait(&w->cond, &w->lock);
                                continue;
                        }
                        struct timespec ts = { .tv_sec = (time_t) (w->next_idle / USEC_PER_SEC),
                                               .tv_nsec = (long) (w->next_idle % USEC_PER_SEC) * 1000 };
                        pthread_cond_timedwait(&w->cond, &w->lock, &ts);
                }
                if (w->stop)
                        break;
                *w->running = w->queue[w->head];
                w->head = (w->head + 1) % ACTION_QUEUE;
                w->n--;
                w->busy = true;
                w->running->started = now_clock(CLOCK_MONOTONIC);
                pthread_mutex_unlock(&w->lock);

                ActionJob *j = w->running;
                ActionContext c = { .target = &j->target, .policy = &j->policy, .dry_run = j->dry_run };
                actuator_run(w->ops, w->userdata, &c, &j->decision, &j->result);
                if (j->target.cgroup_fd >= 0) {
                        close(j->target.cgroup_fd);
                        j->target.cgroup_fd = -1;
                }
                j->finished = now_clock(CLOCK_MONOTONIC);

                pthread_mutex_lock(&w->lock);
                if (w->done_n < ACTION_QUEUE)
                        w->done[w->done_n++] = *j;
                w->busy = false;
                uint64_t one = 1;
                (void) !write(w->eventfd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&w->lock);
        if (w->ops->thread_end)
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
        w->queue = calloc(ACTION_QUEUE, sizeof(ActionJob));
        w->done = calloc(ACTION_QUEUE, sizeof(ActionJob));
        w->running = calloc(1, sizeof(ActionJob));
        w->keep_policy = calloc(1, sizeof(Policy));
        w->eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (!w->queue || !w->done || !w->running || !w->keep_policy || w->eventfd < 0) {
                int r = w->eventfd < 0 ? negative_errno() : -ENOMEM;
                worker_stop(w);
                free(w);
                return r;
        }
        pthread_mutex_init(&w->lock, NULL);
        /* The idle hook's timed wait is on the monotonic clock, as now_clock(). */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &ca);
        pthread_condattr_destroy(&ca);
        /* The thread needs little stack and must not take signals meant for the loop. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        int r = pthread_create(&w->thread, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0) {
                worker_stop(w);
                free(w);
                return -r;
        }
        w->started = true;
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

/* Stops the thread and frees its buffers; true when a job is stuck in it (blocked in the kernel,
 * a memory.high write under reclaim): the thread is left behind with everything it uses, the
 * worker included, since it may still come back to them; the process exits anyway. */
static bool worker_stop(ActionWorker *w) {
        if (w->started) {
                pthread_mutex_lock(&w->lock);
                w->stop = true;
                bool stuck = w->busy;
                pthread_cond_signal(&w->cond);
                pthread_mutex_unlock(&w->lock);
                if (stuck) {
                        pthread_detach(w->thread);
                        return true;
                }
                pthread_join(w->thread, NULL);
                pthread_mutex_destroy(&w->lock);
                pthread_cond_destroy(&w->cond);
                w->started = false;
        }
        free(w->running);
        free(w->keep_policy);
        free(w->queue);
        free(w->done);
        if (w->eventfd >= 0)
                close(w->eventfd);
        w->eventfd = -1;
        w->queue = w->done = w->running = NULL;
        w->keep_policy = NULL;
        return false;
}

int action_worker_submit(ActionWorker *w, ActionJob *job) {
        assert(job);
        if (!w)
                return -ENODEV;
        pthread_mutex_lock(&w->lock);
        job->id = w->next_id++;
        job->submitted = now_clock(CLOCK_MONOTONIC);
        job->result = (ActionResult) {};
        if (action_info(job->decision.action)->sets_limit)
                for (unsigned i = 0; i < w->n; i++) {
                        ActionJob *q = &w->queue[(w->head + i) % ACTION_QUEUE];
                        if (q->decision.action == job->decision.action) {
                                if (q->target.cgroup_fd >= 0)
                                        close(q->target.cgroup_fd);
                                *q = *job;
                                pthread_mutex_unlock(&w->lock);
                                return 0;
                        }
                }
        if (w->n == ACTION_QUEUE) {
                pthread_mutex_unlock(&w->lock);
                return -EBUSY;
        }
        w->queue[(w->head + w->n) % ACTION_QUEUE] = *job;
        w->n++;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return 0;
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
                pthread_cond_signal(&w->cond);
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
        pthread_mutex_unlock(&w->lock);
        return n;
}

unsigned action_worker_pending(ActionWorker *w) {
        assert(w);
        unsigned mask = 0;
        if (!w)
                return 0;
        pthread_mutex_lock(&w->lock);
        if (w->busy)
                mask |= 1u << w->running->decision.action;
        for (unsigned i = 0; i < w->n; i++)
                mask |= 1u << w->queue[(w->head + i) % ACTION_QUEUE].decision.action;
        /* Finished, but its result is not collected yet: to the engine it is still outstanding.
         * Otherwise a job that ends while a sample is read looks done with no result, and the
         * engine would judge it by the working set alone. */
        for (unsigned i = 0; i < w->done_n; i++)
                mask |= 1u << w->done[i].decision.action;
        pthread_mutex_unlock(&w->lock);
        return mask;
}

/* Looking does not change the worker: the lock is taken all the same. */
bool action_worker_current(const ActionWorker *w, uint64_t *ret_id, Decision *ret_decision, usec_t *ret_started) {
        if (!w)
                return false;
        assert(ret_id);
        assert(ret_decision);
        assert(ret_started);
        pthread_mutex_t *lock = (pthread_mutex_t *) &w->lock;
        pthread_mutex_lock(lock);
        bool busy = w->busy;
        if (busy) {
                *ret_id = w->running->id;
                *ret_decision = w->running->decision;
                *ret_started = w->running->started;
        }
        pthread_mutex_unlock(lock);
        return busy;
}

bool action_worker_wedged(const ActionWorker *w, usec_t now, Decision *ret_decision, usec_t *ret_running) {
        assert(w);
        assert(ret_decision);
        assert(ret_running);
        pthread_mutex_t *lock = (pthread_mutex_t *) &w->lock;
        bool wedged = false;

        if (!w || !w->started || !w->timeout)
                return false;
        pthread_mutex_lock(lock);
        if (w->busy) {
                usec_t running = now > w->running->started ? now - w->running->started : 0;
                wedged = running >= w->timeout(&w->running->policy, w->running->decision.action) + ACTION_WEDGED_MARGIN;
                if (wedged) {
                        *ret_decision = w->running->decision;
                        *ret_running = running;
                }
        }
        pthread_mutex_unlock(lock);
        return wedged;
}
