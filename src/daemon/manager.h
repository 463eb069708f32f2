/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "decision-log.h"
#include "memgov/action-worker.h"
#include "memgov/daemon.h"
#include "memgov/actuator.h"
#include "memgov/engine.h"
#include "memgov/explain-watch.h"
#include "memgov/metrics.h"
#include "memgov/roots.h"
#include "memgov/sampler.h"
#include "memgov/state-file.h"
#include "memgov/target.h"

/* The Manager's inside (its interface: include/memgov/daemon.h). */

#define MANAGER_HISTORY 64
/* The metrics endpoint's connections at once (libmicrohttpd's limit), 4 from one address. */
#define METRICS_CONNECTIONS 16
#define METRICS_CONNECTIONS_PER_ADDRESS 4


typedef struct HistoryEntry {
        uint64_t job; /* the action job carrying it out, 0 = not an action */
        usec_t mono, wall;
        int32_t utc_offset;
        Decision decision;
        char line[DECISION_LINE_MAX]; /* as the logs print it */
        char result[512]; /* what the actuator did, or why it failed */
        int error;
} HistoryEntry;

struct Manager {
        ManagerOptions opts;
        sd_event *event;
        sd_bus *bus;
        Roots roots;
        Target target;
        Sampler sampler;
        Policy policy;
        char policy_origin[512];
        Engine *engine;
        ActionWorker *worker;
        ActionJob *collected; /* ACTION_QUEUE, for collecting results */
        ActionJob *scratch;   /* a job being put together */
        uint64_t overdue_job[_ACTION_LANE_MAX]; /* per lane, the job already reported as overdue */
        ActionFeedback feedback;

        sd_event_source *timer, *psi_source, *events_source, *pidfd_source, *control_source, *worker_source;
        int psi_fd, inotify_fd, pidfd, control_fd;
        struct ControlConn *control_conns; /* clients being answered, each on its own sources */
        unsigned n_control_conns, n_control_refused;
        ino_t watched_ino; /* the cgroup whose PSI trigger and memory.events are watched */
        dev_t watched_dev;
        char instance[128];
        char socket_path[256];
        StateFile *state; /* NULL: none (no state directory, or refused) */

        FILE *record;
        usec_t started;
        unsigned long ticks;
        char waiting[512]; /* why there is nothing to sample right now, "" when there is */
        char governing[768]; /* the target's description last logged */
        EngineOutput last;
        bool have_last;
        Sample last_sample;
        HistoryEntry history[MANAGER_HISTORY];
        unsigned history_n, history_head;
        bool exiting;
        /* The cgroup's limits the memgov before left changed (the state file's inherited
         * memory.high and memory.max): looked at, and put back, before the samples. */
        bool limits_put_back;
        bool max_put_back_said;

        /* metrics: counters, the rendering buffer, the HTTP endpoint, the textfile's last error */
        MetricsCounters metrics;
        char *metrics_buf;
        struct MHD_Daemon *httpd;
        sd_event_source *http_io, *http_timer;
        /* The endpoint's connections as they came, each ended at METRICS_CONNECTION_LIFE whatever
         * it sends: libmicrohttpd's own timeout is one of inactivity. */
        struct MetricsConnection {
                struct MHD_Connection *connection; /* NULL: a free slot */
                int fd;                            /* libmicrohttpd's, valid while connection is set */
                usec_t since;
        } http_conns[METRICS_CONNECTIONS];
        char metrics_listening[96];
        int textfile_error;

        bool locked;   /* mlockall succeeded */
        bool cli_dry_run; /* --dry-run: a reload cannot end it */
        bool dry_run_waits; /* a reload asked for a dry run: it begins once the restart under way is over */
        /* The put-backs of the last reload into a dry run not yet carried out (their job, 0: not
         * queued): memgov stopping writes them itself, as the lanes' queues are not run then. */
        Decision leaving[ENGINE_LEAVE_MAX];
        uint64_t leaving_job[ENGINE_LEAVE_MAX];
        unsigned n_leaving;
        bool readonly_said; /* the read-only cgroup file system was reported */
        int cgroup_error_said, process_error_said; /* the read errors reported, 0 = none */
        char cgroup_error_file_said[32], process_error_file_said[32]; /* and in which file */
        uint64_t caps; /* the capabilities kept after startup */
};

/* memgov explain's parts of the governed server: its own figures as last measured (explain.every),
 * the cgroup's from the last sample (the parts add up to its memory.current). false before the
 * first measure of this process. */
bool manager_explanation(const Manager *m, ExplainWatchInfo *w, Explanation *e);
