/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "memgov/action-worker.h"
#include "memgov/actuator.h"
#include "memgov/engine.h"
#include "memgov/metrics.h"
#include "memgov/roots.h"
#include "memgov/sampler.h"
#include "memgov/state-file.h"
#include "memgov/target.h"

/* The Manager owns the event loop: it samples the target on a timer, on PSI triggers, on
 * memory.events changes and when the server process exits; runs the engine; hands decisions to
 * the actuators; answers `memgov status` on its control socket. */

#define MANAGER_HISTORY 64
/* The metrics endpoint's connections at once (libmicrohttpd's limit), 4 from one address. */
#define METRICS_CONNECTIONS 16
#define METRICS_CONNECTIONS_PER_ADDRESS 4

typedef struct ManagerOptions {
        TargetSpec target;
        const char *policy_path; /* NULL = <policy_dir>/<instance>.ini if it exists, else the embedded default */
        const char *policy_dir;  /* NULL = /etc/memgov */
        bool dry_run;
        RootsOptions roots;
        const char *socket_path; /* NULL = /run/memgov/<instance>.sock; "" = none */
        const char *record_path; /* write every sample as a trace */
        const char *state_dir;   /* restart history across governor restarts; NULL = /var/lib/memgov, "" = none */
        usec_t duration;         /* stop after this long (tests, demos); 0 = run until told */
        const ActuatorOps *ops;  /* NULL = chosen from dry_run */
        void *ops_userdata;
        /* memgov record: sample every record_interval and write the trace; decide nothing. */
        bool record_only;
        usec_t record_interval;
        bool quiet; /* one-shot snapshots: no "governing ..." line */
} ManagerOptions;

typedef struct HistoryEntry {
        uint64_t job; /* the action job carrying it out, 0 = not an action */
        usec_t mono, wall;
        int32_t utc_offset;
        Decision decision;
        char line[640];   /* as the logs print it */
        char result[512]; /* what the actuator did, or why it failed */
        int error;
} HistoryEntry;

typedef struct Manager {
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
} Manager;

int manager_new(const ManagerOptions *o, Manager **ret);
int manager_run(Manager *m);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free)

/* Runs one tick now (sample, decide, act): the event sources all end up here. reason says
 * what woke us ("timer", "psi", "memory.events", "process exit", "start"). */
void manager_tick(Manager *m, const char *reason);

/* The status document `memgov status` prints. */
struct json_object *manager_status_json(const Manager *m);

/* "mariadb.service" -> "mariadb", cgroup "/system.slice/x" -> "cgroup-system.slice-x": a file name. */
void target_instance_name(const TargetSpec *t, char *buf, size_t size);

/* Where the daemons' control sockets are, and the one of a target: RUN_DIR/<instance>.sock. */
#define MEMGOV_RUN_DIR "/run/memgov"
void control_socket_path(const TargetSpec *t, char *buf, size_t size);
