/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The action threads: what counts as outstanding to the engine, from queued to collected, and
 * which job waits behind which. */
#include "test-util.h"

#include <poll.h>
#include <pthread.h>
#include <time.h>

#include "memgov/action-worker.h"

/* An actuator that holds each job until the test lets it go. */
typedef struct Gate {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned entered, released;
} Gate;

/* Enters the gate and waits there until the test lets this entry go. */
static void gate_hold(Gate *g) {
        pthread_mutex_lock(&g->lock);
        unsigned me = g->entered++;
        pthread_cond_broadcast(&g->cond);
        while (g->released <= me)
                pthread_cond_wait(&g->cond, &g->lock);
        pthread_mutex_unlock(&g->lock);
}

static int held_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        gate_hold(userdata);
        ret->has_freed = true;
        ret->freed = 7;
        return 0;
}

static int quick_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        snprintf(ret->detail, sizeof(ret->detail), "done");
        return 0;
}

/* The server's lane held at the gate; the limits and the restart go through at once. */
static const ActuatorOps gated_ops = {
        .name = "gated",
        .run = { [ACTION_TRIM] = held_action, [ACTION_RESET] = held_action, [ACTION_POOL] = held_action,
                 [ACTION_SET_HIGH] = quick_action, [ACTION_SET_MAX] = quick_action, [ACTION_RESTART] = quick_action },
};

static void wait_entered(Gate *g, unsigned n) {
        pthread_mutex_lock(&g->lock);
        while (g->entered < n)
                pthread_cond_wait(&g->cond, &g->lock);
        pthread_mutex_unlock(&g->lock);
}

static void release_one(Gate *g) {
        pthread_mutex_lock(&g->lock);
        g->released++;
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
}

/* 1 once the eventfd says a result waits, 0 if none does within ms. */
static int results_within(ActionWorker *w, int ms) {
        struct pollfd p = { .fd = action_worker_fd(w), .events = POLLIN };
        return poll(&p, 1, ms);
}

/* Until the eventfd says a result waits, or 10 s. */
static void wait_result(ActionWorker *w) {
        assert_int_equal(results_within(w, 10000), 1);
}

static void submit_decision(ActionWorker *w, Decision d) {
        ActionJob job = { .decision = d };
        job.target.cgroup_fd = -1;
        assert_int_equal(action_worker_submit(w, &job), 0);
}

static void submit(ActionWorker *w, ActionKind a) {
        submit_decision(w, (Decision) { .kind = DECISION_ACTION, .action = a });
}

static void test_pending_until_collected(void **state) {
        Gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        ActionWorker *w = NULL;
        ActionJob out[ACTION_QUEUE];

        assert_int_equal(action_worker_new(&w, &gated_ops, &g, NULL), 0);
        assert_int_equal(action_worker_pending(w), 0);

        /* Carried out, and one more waiting behind it. */
        submit(w, ACTION_RESET);
        submit(w, ACTION_TRIM);
        wait_entered(&g, 1);
        assert_int_equal(action_worker_pending(w), (1u << ACTION_RESET) | (1u << ACTION_TRIM));

        /* The reset finished: until its result is collected it is still outstanding, or the
         * engine would see neither the reset pending nor its result. */
        release_one(&g);
        wait_entered(&g, 2);
        wait_result(w);
        assert_int_equal(action_worker_pending(w), (1u << ACTION_RESET) | (1u << ACTION_TRIM));
        assert_int_equal(action_worker_collect(w, out, ACTION_QUEUE), 1);
        assert_int_equal(out[0].decision.action, ACTION_RESET);
        assert_int_equal(out[0].result.freed, 7);
        assert_int_equal(action_worker_pending(w), 1u << ACTION_TRIM);

        release_one(&g);
        wait_result(w);
        assert_int_equal(action_worker_pending(w), 1u << ACTION_TRIM);
        assert_int_equal(action_worker_collect(w, out, ACTION_QUEUE), 1);
        assert_int_equal(out[0].decision.action, ACTION_TRIM);
        assert_int_equal(action_worker_pending(w), 0);
        assert_int_equal(action_worker_collect(w, out, ACTION_QUEUE), 0);

        assert_null(action_worker_free(w));
}

/* Until n results were collected into out (in the order they came), or 10 s. */
static unsigned collect_n(ActionWorker *w, ActionJob *out, unsigned n) {
        unsigned got = 0;
        while (got < n) {
                wait_result(w);
                got += action_worker_collect(w, out + got, n - got);
        }
        return got;
}

static usec_t timeout_1s(const Policy *p, ActionKind k) {
        return USEC_PER_SEC;
}

/* In the outcome benchmark's storm a buffer-pool resize on the swamped server took 20 s, and
 * the memory.high that was to make way waited behind it. A pool step (or a trim, a reset) that
 * does not end holds neither a limit nor the restart, which keep their own order. */
static void test_limits_and_restart_not_behind_the_server(void **state) {
        Gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        ActionWorker *w = NULL;
        ActionJob out[ACTION_QUEUE * 2];
        uint64_t id;
        Decision d;
        usec_t started;

        assert_int_equal(action_worker_new(&w, &gated_ops, &g, timeout_1s), 0);
        submit(w, ACTION_POOL);
        wait_entered(&g, 1);
        submit(w, ACTION_TRIM);
        submit(w, ACTION_SET_MAX);
        submit(w, ACTION_SET_HIGH);
        submit(w, ACTION_RESTART);
        assert_int_equal(collect_n(w, out, 3), 3);
        assert_int_equal(out[0].decision.action, ACTION_SET_MAX);
        assert_int_equal(out[1].decision.action, ACTION_SET_HIGH);
        assert_int_equal(out[2].decision.action, ACTION_RESTART);
        assert_string_equal(out[2].result.detail, "done");
        /* Ids are the worker's, across the lanes: in the order submitted. */
        assert_true(out[0].id < out[1].id && out[1].id < out[2].id);
        assert_int_equal(action_worker_pending(w), (1u << ACTION_POOL) | (1u << ACTION_TRIM));
        assert_true(action_worker_current(w, &id, &d, &started));
        assert_int_equal(d.action, ACTION_POOL);
        assert_true(action_worker_current_in(w, ACTION_LANE_SERVER, &id, &d, &started));
        assert_int_equal(d.action, ACTION_POOL);
        assert_false(action_worker_current_in(w, ACTION_LANE_PROMPT, &id, &d, &started));
        assert_false(action_worker_current_in(w, ACTION_LANE_RESTART, &id, &d, &started));

        /* The pool step past its timeout: wedged, whatever the other lane does. */
        usec_t running;
        assert_true(action_worker_wedged(w, started + USEC_PER_SEC + ACTION_WEDGED_MARGIN, &d, &running));
        assert_int_equal(d.action, ACTION_POOL);
        assert_false(action_worker_wedged(w, started + USEC_PER_SEC, &d, &running));

        /* The server's lane in its own order: the trim after the pool step. */
        release_one(&g);
        assert_int_equal(collect_n(w, out, 1), 1);
        assert_int_equal(out[0].decision.action, ACTION_POOL);
        release_one(&g);
        assert_int_equal(collect_n(w, out, 1), 1);
        assert_int_equal(out[0].decision.action, ACTION_TRIM);
        assert_int_equal(action_worker_pending(w), 0);
        assert_null(action_worker_free(w));
}

/* The emergency reset goes ahead of the jobs waiting on the server's lane (not of the one under
 * way), in the order it came among those that go first. Seen behind a trim and an admission in
 * the outcome benchmark's storm: 20 s, and the restart came first. */
static void submit_emergency_reset(ActionWorker *w, unsigned tag) {
        submit_decision(w, (Decision) { .kind = DECISION_ACTION, .action = ACTION_RESET, .code = ACTION_EMERGENCY_RESET,
                                        .value = tag });
}

static void test_emergency_reset_goes_first(void **state) {
        Gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        ActionWorker *w = NULL;
        ActionJob out[ACTION_QUEUE];

        assert_int_equal(action_worker_new(&w, &gated_ops, &g, NULL), 0);
        submit(w, ACTION_POOL);
        wait_entered(&g, 1);
        submit(w, ACTION_TRIM);
        submit(w, ACTION_RESET); /* not an emergency's: in its place */
        submit_emergency_reset(w, 1);
        submit_emergency_reset(w, 2);
        static const struct { ActionKind a; uint64_t tag; } want[] = {
                { ACTION_POOL, 0 }, { ACTION_RESET, 1 }, { ACTION_RESET, 2 }, { ACTION_TRIM, 0 }, { ACTION_RESET, 0 },
        };
        /* What each found ahead of it when submitted: the pool step under way, and those waiting
         * ahead in the place it took. */
        static const unsigned behind[] = { 0, 1, 2, 1, 2 };
        for (unsigned i = 0; i < ELEMENTSOF(want); i++) {
                release_one(&g);
                assert_int_equal(collect_n(w, out, 1), 1);
                assert_int_equal(out[0].decision.action, want[i].a);
                assert_int_equal(out[0].decision.value, want[i].tag);
                assert_int_equal(out[0].behind_jobs, behind[i]);
                assert_false(out[0].behind_idle);
        }
        assert_int_equal(action_worker_pending(w), 0);
        assert_null(action_worker_free(w));
}

/* A result says how long its job waited for its lane, and behind what, from a second on. */
static void test_waited(void **state) {
        char buf[200];
        ActionJob j = { .submitted = 10 * USEC_PER_SEC, .started = 10 * USEC_PER_SEC + 999 * USEC_PER_MSEC,
                        .behind_idle = true, .behind_jobs = 2 };
        action_job_waited(&j, buf, sizeof(buf));
        assert_string_equal(buf, "");
        j.started = 17 * USEC_PER_SEC;
        action_job_waited(&j, buf, sizeof(buf));
        assert_string_equal(buf, "; begun 7s after it was decided, behind the upkeep of the server (its session, the "
                                 "buffer pool's fill) and 2 other action(s)");
        j.behind_idle = false;
        action_job_waited(&j, buf, sizeof(buf));
        assert_string_equal(buf, "; begun 7s after it was decided, behind 2 other action(s)");
        j.behind_idle = true;
        j.behind_jobs = 0;
        action_job_waited(&j, buf, sizeof(buf));
        assert_string_equal(buf, "; begun 7s after it was decided, behind the upkeep of the server (its session, the "
                                 "buffer pool's fill)");
}

/* The restart holds its thread until the server is back (a systemd job's stop and start): in the
 * outcome benchmark, a raise of memory.max decided 2 s into a 9 s restart waited behind it and
 * was replaced by the restore before it was written. A limit is not held by a restart under way;
 * but the restart does not start before the limits submitted before it are written (the raise of
 * memory.max, memory.high out of the way of the stop), a limit's newer value queued in their
 * place included. */
static const ActuatorOps restart_gated_ops = {
        .name = "restart-gated",
        .run = { [ACTION_SET_HIGH] = quick_action, [ACTION_SET_MAX] = quick_action, [ACTION_RESTART] = held_action },
};

static const ActuatorOps limits_gated_ops = {
        .name = "limits-gated",
        .run = { [ACTION_SET_HIGH] = held_action, [ACTION_SET_MAX] = held_action, [ACTION_RESTART] = quick_action },
};

static void test_restart_and_limits_apart(void **state) {
        Gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        ActionWorker *w = NULL;
        ActionJob out[ACTION_QUEUE];
        uint64_t id;
        Decision d;
        usec_t started;

        /* memory.max written while the restart is held. */
        assert_int_equal(action_worker_new(&w, &restart_gated_ops, &g, NULL), 0);
        submit(w, ACTION_RESTART);
        wait_entered(&g, 1);
        submit(w, ACTION_SET_MAX);
        assert_int_equal(collect_n(w, out, 1), 1);
        assert_int_equal(out[0].decision.action, ACTION_SET_MAX);
        assert_true(action_worker_current_in(w, ACTION_LANE_RESTART, &id, &d, &started));
        assert_int_equal(d.action, ACTION_RESTART);
        release_one(&g);
        assert_int_equal(collect_n(w, out, 1), 1);
        assert_int_equal(out[0].decision.action, ACTION_RESTART);
        assert_null(action_worker_free(w));

        /* The restart held by the limits submitted before it. */
        g.entered = g.released = 0;
        assert_int_equal(action_worker_new(&w, &limits_gated_ops, &g, NULL), 0);
        submit(w, ACTION_SET_HIGH);
        wait_entered(&g, 1);
        submit(w, ACTION_SET_MAX);
        submit(w, ACTION_RESTART);
        ActionJob newer = { .decision = { .kind = DECISION_ACTION, .action = ACTION_SET_MAX, .value = 42 } };
        newer.target.cgroup_fd = -1;
        assert_int_equal(action_worker_submit(w, &newer), 0);
        /* The restart waits for memory.high: no result within 200 ms, and it is not being
         * carried out. */
        assert_int_equal(results_within(w, 200), 0);
        assert_false(action_worker_current_in(w, ACTION_LANE_RESTART, &id, &d, &started));
        assert_int_equal(action_worker_pending(w),
                         (1u << ACTION_SET_HIGH) | (1u << ACTION_SET_MAX) | (1u << ACTION_RESTART));
        release_one(&g);
        assert_int_equal(collect_n(w, out, 1), 1);
        assert_int_equal(out[0].decision.action, ACTION_SET_HIGH);
        /* And for memory.max, whose newer value took the place of the one before the restart. */
        wait_entered(&g, 2);
        assert_int_equal(results_within(w, 200), 0);
        assert_false(action_worker_current_in(w, ACTION_LANE_RESTART, &id, &d, &started));
        release_one(&g);
        assert_int_equal(collect_n(w, out, 2), 2);
        assert_int_equal(out[0].decision.action, ACTION_SET_MAX);
        assert_int_equal(out[0].decision.value, 42);
        assert_int_equal(out[1].decision.action, ACTION_RESTART);
        assert_null(action_worker_free(w));
}

/* A limit's newer value replaces the one still queued; a dry run's never replaces a real write
 * (the put-back of a reload into a dry run, queued behind a write under way: a dry run's step
 * decided at the next sample took its place, and memory.high stayed lowered for good). */
static void test_dry_run_never_replaces_a_write(void **state) {
        Gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        ActionWorker *w = NULL;
        ActionJob out[ACTION_QUEUE];

        assert_int_equal(action_worker_new(&w, &limits_gated_ops, &g, NULL), 0);
        submit(w, ACTION_SET_HIGH);
        wait_entered(&g, 1);
        const struct { uint64_t value; bool dry_run; } jobs[] = { { 1, false }, { 2, false }, { 3, true }, { 4, true } };
        for (size_t i = 0; i < ELEMENTSOF(jobs); i++) {
                ActionJob j = { .decision = { .kind = DECISION_ACTION, .action = ACTION_SET_HIGH, .value = jobs[i].value },
                                .dry_run = jobs[i].dry_run };
                j.target.cgroup_fd = -1;
                assert_int_equal(action_worker_submit(w, &j), 0);
        }
        for (unsigned i = 0; i < 3; i++)
                release_one(&g);
        assert_int_equal(collect_n(w, out, 3), 3);
        assert_int_equal(out[1].decision.value, 2);
        assert_false(out[1].dry_run);
        assert_int_equal(out[2].decision.value, 4);
        assert_true(out[2].dry_run);
        assert_int_equal(action_worker_pending(w), 0);
        assert_null(action_worker_free(w));
}

/* The idle hook is called again after the time it returns (a server that is starting is looked
 * at every second), and after ACTION_IDLE_EVERY when it returns 0. */
typedef struct IdleCount {
        pthread_mutex_t lock;
        unsigned calls;
        usec_t again;
} IdleCount;

static usec_t counting_idle(void *userdata, const ActionContext *c) {
        IdleCount *n = userdata;
        pthread_mutex_lock(&n->lock);
        n->calls++;
        usec_t again = n->again;
        pthread_mutex_unlock(&n->lock);
        return again;
}

static const ActuatorOps idle_ops = { .name = "idle", .idle = counting_idle };

static unsigned idle_calls_in_1s(usec_t again) {
        IdleCount n = { .lock = PTHREAD_MUTEX_INITIALIZER, .again = again };
        ActionWorker *w = NULL;
        Policy p = {};
        ActionTarget t = { .pid = 1, .cgroup_fd = -1 };
        assert_int_equal(action_worker_new(&w, &idle_ops, &n, NULL), 0);
        action_worker_keep(w, &t, &p, false);
        struct timespec ts = { .tv_sec = 1 };
        nanosleep(&ts, NULL);
        assert_null(action_worker_free(w));
        return n.calls;
}

static void test_idle_again_after(void **state) {
        assert_true(idle_calls_in_1s(100 * USEC_PER_MSEC) >= 5);
        assert_int_equal(idle_calls_in_1s(0), 1);
}

/* A job submitted while the idle hook runs waits for it, and says so. */
static usec_t held_idle(void *userdata, const ActionContext *c) {
        gate_hold(userdata);
        return 0;
}

static const ActuatorOps held_idle_ops = { .name = "held-idle", .run = { [ACTION_TRIM] = quick_action }, .idle = held_idle };

static void test_behind_idle(void **state) {
        Gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        ActionWorker *w = NULL;
        ActionJob out[1];
        Policy p = {};
        ActionTarget t = { .pid = 1, .cgroup_fd = -1 };

        assert_int_equal(action_worker_new(&w, &held_idle_ops, &g, NULL), 0);
        action_worker_keep(w, &t, &p, false);
        wait_entered(&g, 1);
        submit(w, ACTION_TRIM);
        assert_int_equal(results_within(w, 200), 0);
        release_one(&g);
        assert_int_equal(collect_n(w, out, 1), 1);
        assert_true(out[0].behind_idle);
        assert_int_equal(out[0].behind_jobs, 0);
        assert_true(out[0].started >= out[0].submitted + 200 * USEC_PER_MSEC);
        assert_null(action_worker_free(w));
}

/* More results than one collect takes: the eventfd says the rest wait, or they would wait for the
 * next job to end. */
static void test_collect_in_parts(void **state) {
        Gate g = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        ActionWorker *w = NULL;
        ActionJob out[ACTION_QUEUE];
        uint64_t id;
        Decision d;
        usec_t started;

        assert_int_equal(action_worker_new(&w, &gated_ops, &g, NULL), 0);
        submit(w, ACTION_TRIM);
        submit(w, ACTION_RESET);
        submit(w, ACTION_POOL);
        for (unsigned i = 0; i < 3; i++)
                release_one(&g);
        /* All three finished, their results waiting, before the first collect. */
        wait_entered(&g, 3);
        while (action_worker_current(w, &id, &d, &started))
                usleep(1000);
        for (unsigned i = 0; i < 3; i++) {
                wait_result(w);
                assert_int_equal(action_worker_collect(w, out, 1), 1);
        }
        assert_int_equal(out[0].decision.action, ACTION_POOL);
        assert_int_equal(action_worker_pending(w), 0);
        assert_int_equal(action_worker_collect(w, out, ACTION_QUEUE), 0);
        assert_null(action_worker_free(w));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pending_until_collected),
                cmocka_unit_test(test_limits_and_restart_not_behind_the_server),
                cmocka_unit_test(test_emergency_reset_goes_first),
                cmocka_unit_test(test_waited),
                cmocka_unit_test(test_behind_idle),
                cmocka_unit_test(test_restart_and_limits_apart),
                cmocka_unit_test(test_dry_run_never_replaces_a_write),
                cmocka_unit_test(test_idle_again_after),
                cmocka_unit_test(test_collect_in_parts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
