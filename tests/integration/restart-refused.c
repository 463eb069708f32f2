/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A restart with a pre-flush that systemd refuses (a unit that does not exist), against a real
 * server: restart_action() must fail, and leave the server's innodb_max_dirty_pages_pct as it
 * found it (trim-mariadbd.sh reads it before and after).
 *   memgov-restart-refused PID */
#include <stdio.h>
#include <stdlib.h>

#include "memgov/actuator.h"
#include "memgov/engine.h"
#include "memgov/policy.h"
#include "restart.h"

int main(int argc, char **argv) {
        Policy p;
        if (argc != 2 || policy_load_default(&p) < 0) {
                fprintf(stderr, "usage: memgov-restart-refused PID\n");
                return 2;
        }
        p.preflush_timeout = 2 * USEC_PER_SEC;
        p.stop_timeout = 5 * USEC_PER_SEC;
        ActionTarget t = { .kind = TARGET_UNIT, .cgroup_fd = -1, .pid = atoi(argv[1]) };
        snprintf(t.unit, sizeof(t.unit), "memgov-no-such-unit.service");
        snprintf(t.description, sizeof(t.description), "process %d", (int) t.pid);
        ActionContext c = { .target = &t, .policy = &p };
        Decision d = { .kind = DECISION_ACTION, .action = ACTION_RESTART, .restart.preflush = true };
        ActionResult res = {};

        int r = restart_action(NULL, &c, &d, &res);
        printf("%s\n", res.detail);
        if (r >= 0) {
                fprintf(stderr, "memgov-restart-refused: the restart of a unit that does not exist succeeded\n");
                return 1;
        }
        return 0;
}
