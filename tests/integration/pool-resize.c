/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One step of the buffer-pool rung against a real server: pool_run() called as the daemon's
 * action worker would, its ActionResult printed as key=value lines (detail last) for
 * pool-mariadbd.sh to check.
 *   memgov-pool-resize PID shrink|grow DRY_RUN(0|1) CONFIGURED STEP_BP FLOOR_BP GROW_MAX|max
 *                      [TIMEOUT_SECONDS [CGROUP_DIR]]
 * CONFIGURED 0 = the size found. MEMGOV_TEST_OPTION_FILE: the [sql] option-file to log in with
 * (another account). MEMGOV_TEST_KEPT_SIGNAL=DIR: a session kept open first, as the daemon's
 * action thread keeps it, then DIR/kept made, and the step taken once DIR/go is there (the test
 * makes the server turn new connections away in between; at most 30 s). Exits 0 when pool_run()
 * ran (whatever it returned), 2 on a usage error or a signal that did not come. */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"
#include "memgov/actuator.h"
#include "memgov/engine.h"
#include "memgov/policy.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"

static int usage(void) {
        fprintf(stderr, "usage: memgov-pool-resize PID shrink|grow DRY_RUN CONFIGURED STEP_BP FLOOR_BP GROW_MAX|max "
                        "[TIMEOUT_SECONDS [CGROUP_DIR]]\n");
        return 2;
}

int main(int argc, char **argv) {
        uint64_t pid, dry, configured, step, floor, grow_max, timeout = 60;
        Policy p;

        if (argc < 8 || argc > 10 || !parse_decimal_u64(argv[1], &pid) || (strcmp(argv[2], "shrink") && strcmp(argv[2], "grow")) ||
            !parse_decimal_u64(argv[3], &dry) || !parse_decimal_u64(argv[4], &configured) || !parse_decimal_u64(argv[5], &step) ||
            !parse_decimal_u64(argv[6], &floor) || (strcmp(argv[7], "max") && !parse_decimal_u64(argv[7], &grow_max)) ||
            (argc >= 9 && !parse_decimal_u64(argv[8], &timeout)) || step > 10000 || floor > 10000)
                return usage();
        if (!strcmp(argv[7], "max"))
                grow_max = SIZE_UNLIMITED;
        if (policy_load_default(&p) < 0) {
                fprintf(stderr, "memgov-pool-resize: the default policy does not load\n");
                return 2;
        }
        p.pool_resize_timeout = timeout * USEC_PER_SEC;
        /* An option file with another account's credentials, for a test of the privilege. */
        const char *opt = getenv("MEMGOV_TEST_OPTION_FILE");
        if (opt)
                snprintf(p.sql_option_file, sizeof(p.sql_option_file), "%s", opt);
        sql_library_init();

        ActionTarget t = {.kind = TARGET_PID, .cgroup_fd = -1, .pid = (pid_t) pid};
        if (argc == 10) {
                t.cgroup_fd = open(argv[9], O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (t.cgroup_fd < 0) {
                        perror(argv[9]);
                        return 2;
                }
                snprintf(t.cgroup, sizeof(t.cgroup), "%s", argv[9]);
        }
        snprintf(t.description, sizeof(t.description), "process %d", (int) t.pid);
        ActionContext c = {.target = &t, .policy = &p, .dry_run = dry != 0};
        Decision d = {
                .pool.grow = !strcmp(argv[2], "grow"),
                .pool.configured = configured,
                .pool.step = (uint32_t) step,
                .pool.floor = (uint32_t) floor,
                .pool.grow_max = grow_max,
        };
        ActionResult res = {};

        const char *signal_dir = getenv("MEMGOV_TEST_KEPT_SIGNAL");
        if (signal_dir) {
                char why[512], path[PATH_MAX];
                SqlConn kept;
                sql_keep_begin();
                if (sql_connect(&p, t.pid, &kept, why, sizeof(why)) < 0) {
                        fprintf(stderr, "memgov-pool-resize: no session to keep: %s\n", why);
                        return 2;
                }
                sql_close(&kept); /* given back, still open */
                snprintf(path, sizeof(path), "%s/kept", signal_dir);
                int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
                if (fd < 0) {
                        perror(path);
                        return 2;
                }
                close(fd);
                snprintf(path, sizeof(path), "%s/go", signal_dir);
                unsigned waited = 0;
                for (; access(path, F_OK) < 0 && waited < 300; waited++)
                        usleep(100 * 1000);
                if (waited == 300) {
                        fprintf(stderr, "memgov-pool-resize: %s did not come within 30 s\n", path);
                        return 2;
                }
        }
        int r = pool_run(&c, &d, &res);
        printf("error=%d\n", r);
        printf("explained=%d\n", res.explained);
        printf("value_before=%" PRIu64 "\n", res.value_before);
        printf("value=%" PRIu64 "\n", res.value);
        printf("baseline=%" PRIu64 "\n", res.baseline);
        printf("has_freed=%d\n", res.has_freed);
        printf("freed=%" PRIu64 "\n", res.freed);
        printf("detail=%s\n", res.detail);
        if (t.cgroup_fd >= 0)
                close(t.cgroup_fd);
        if (signal_dir)
                sql_keep_end();
        return 0;
}
