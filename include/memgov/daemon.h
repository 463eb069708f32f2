/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "memgov/actuator.h"
#include "memgov/clock.h"
#include "memgov/macro.h"
#include "memgov/roots.h"
#include "memgov/target.h"

/* The governor (src/daemon): what memgov run, record, status and demo start. The Manager owns
 * the event loop: it samples the target on a timer, on PSI triggers, on memory.events changes and
 * when the server process exits; runs the engine; hands decisions to the actuators; answers
 * `memgov status` on its control socket. */

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

typedef struct Manager Manager;

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
