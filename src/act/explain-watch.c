/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

#include "explain-gather.h"
#include "memgov/explain-watch.h"
#include "memgov/log.h"
#include "memgov/sql-keep.h"
#include "memgov/sql.h"

static struct {
        pthread_mutex_t lock;
        ExplainWatchInfo info;
} watch = { .lock = PTHREAD_MUTEX_INITIALIZER };

void explain_watch(const ActionContext *c) {
        const Policy *p = c->policy;
        const ActionTarget *t = c->target;
        ExplainWatchInfo was;

        explain_watch_info(&was);
        usec_t now = now_clock(CLOCK_MONOTONIC);
        if (p->explain_every == 0 || t->pid <= 0 ||
            (was.known && was.pid == t->pid && was.starttime == t->starttime && now - was.when < p->explain_every))
                return;

        /* A server still starting (crash recovery, its caches allocated) is measured once it
         * accepts clients: its own figures come over SQL. */
        SqlKeepInfo k;
        sql_keep_info(&k);
        if (k.pid == t->pid && k.accepting == ACCEPTING_NOT_YET)
                return;
        /* Nor while the kept session waits for a reply: the action thread would wait with it. */
        if (sql_keep_awaiting())
                return;

        /* The cgroup's figures come from the samples (explain_input_from_sample). */
        ExplainTarget et = { .pid = t->pid, .starttime = t->starttime, .cgroup_fd = -1, .proc_fd = AT_FDCWD };
        _cleanup_free_ ExplainWatchInfo *now_info = calloc(1, sizeof(ExplainWatchInfo));
        if (!now_info)
                return;
        bool allocator = p->explain_allocator && !c->dry_run;
        int r = explain_gather(&et, p, allocator, &now_info->input, now_info->notes, sizeof(now_info->notes));
        if (r < 0)
                return;
        if (p->explain_allocator && c->dry_run)
                strncat(now_info->notes, "a dry run: the allocator is not called\n",
                        sizeof(now_info->notes) - strlen(now_info->notes) - 1);
        now_info->known = true;
        now_info->pid = t->pid;
        now_info->starttime = t->starttime;
        now_info->when = now;
        now_info->took = now_clock(CLOCK_MONOTONIC) - now;
        if (!was.known || was.pid != t->pid)
                log_info("explain: the server's memory measured in %llu ms (every %llus)",
                         (unsigned long long) (now_info->took / 1000),
                         (unsigned long long) (p->explain_every / USEC_PER_SEC));
        pthread_mutex_lock(&watch.lock);
        watch.info = *now_info;
        pthread_mutex_unlock(&watch.lock);
}

void explain_watch_info(ExplainWatchInfo *ret) {
        pthread_mutex_lock(&watch.lock);
        *ret = watch.info;
        pthread_mutex_unlock(&watch.lock);
}

void explain_watch_sample(pid_t pid, uint64_t starttime, Sample *s) {
        pthread_mutex_lock(&watch.lock);
        const ExplainWatchInfo *w = &watch.info;
        if (w->known && w->pid == pid && w->starttime == starttime) {
                const ExplainInput *in = &w->input;
                if (in->has_pool || in->has_sessions || in->has_accounted) {
                        s->server_pool = in->has_pool ? in->pool : 0;
                        s->server_accounted = in->has_accounted ? in->accounted : 0;
                        s->server_sessions = in->has_sessions ? in->sessions_total : 0;
                        s->has |= SAMPLE_HAS_SERVER_MEMORY;
                }
                if (in->has_allocator) {
                        s->allocator_free = in->allocator.free;
                        s->allocator_in_use = in->allocator.in_use;
                        s->has |= SAMPLE_HAS_ALLOCATOR;
                }
        }
        pthread_mutex_unlock(&watch.lock);
}
