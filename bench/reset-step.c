/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One step of the reset rung against a real server, for bench/pool-vs-reset.sh: reset_action()
 * called as the daemon's action worker calls it, with the default policy's [reset] (method sql:
 * KILL CONNECTION of up to max-per-step sessions holding min-memory or more, idle ones first and
 * the largest first, then a trim), its ActionResult printed as key=value lines (detail last).
 *   bench-reset-step PID
 * Exits 0 when reset_action() ran (whatever it returned), 2 on a usage error. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memgov/actuator.h"
#include "memgov/engine.h"
#include "memgov/policy.h"
#include "memgov/sql.h"
#include "reset.h"

int main(int argc, char **argv) {
        Policy p;
        char *end;

        long pid = argc == 2 ? strtol(argv[1], &end, 10) : 0;
        if (argc != 2 || pid <= 0 || *end) {
                fprintf(stderr, "usage: bench-reset-step PID\n");
                return 2;
        }
        if (policy_load_default(&p) < 0) {
                fprintf(stderr, "bench-reset-step: the default policy does not load\n");
                return 2;
        }
        sql_library_init();

        ActionTarget t = {.kind = TARGET_PID, .cgroup_fd = -1, .pid = (pid_t) pid};
        snprintf(t.description, sizeof(t.description), "process %ld", pid);
        ActionContext c = {.target = &t, .policy = &p};
        /* What the engine puts in a reset decision (outside an emergency). */
        Decision d = {
                .kind = DECISION_ACTION,
                .action = ACTION_RESET,
                .reset.max = p.reset_max,
                .reset.min_memory = p.reset_min_memory,
                .reset.min_idle = p.reset_min_idle,
                .reset.in_trx = false,
        };
        ActionResult res = {};

        int r = reset_action(NULL, &c, &d, &res);
        printf("error=%d\n", r);
        printf("has_freed=%d\n", res.has_freed);
        printf("freed=%" PRIu64 "\n", res.freed);
        printf("detail=%s\n", res.detail);
        return 0;
}
