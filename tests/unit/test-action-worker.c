/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The action thread: what counts as outstanding to the engine, from queued to collected. */
#include "test-util.h"

#include <poll.h>
#include <pthread.h>

#include "memgov/action-worker.h"

/* An actuator that holds each job until the test lets it go. */
typedef struct Gate {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned entered, released;
} Gate;

static int held_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret) {
        Gate *g = userdata;
        pthread_mutex_lock(&g->lock);
        unsigned me = g->entered++;
        pthread_cond_broadcast(&g->cond);
        while (g->released <= me)
                pthread_cond_wait(&g->cond, &g->lock);
        pthread_mutex_unlock(&g->lock);
        ret->has_freed = true;
        ret->freed = 7;
        return 0;
}

static const ActuatorOps gated_ops = {
        .name = "gated",
        .run = { [ACTION_TRIM] = held_action, [ACTION_RESET] = held_action },
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

/* Until the eventfd says a result waits, or 10 s. */
static void wait_result(ActionWorker *w) {
        struct pollfd p = { .fd = action_worker_fd(w), .events = POLLIN };
        assert_int_equal(poll(&p, 1, 10000), 1);
}

static void submit(ActionWorker *w, ActionKind a) {
        ActionJob job = { .decision = { .kind = DECISION_ACTION, .action = a } };
        job.target.cgroup_fd = -1;
        assert_int_equal(action_worker_submit(w, &job), 0);
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pending_until_collected),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
