/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One step of the admission rung against a real server: admit_run() called as the daemon's action
 * worker would, with what memgov remembers of the server given and printed back, and its
 * ActionResult printed as key=value lines (detail last) for admit-mariadbd.sh to check.
 *   memgov-admit-run PID lower|carry|restore DRY_RUN(0|1) HEADROOM FLOOR [CONFIGURED SET ERRORS|-]
 * carry: a lowering carried to a new server process (Decision.admit_carried), MEMGOV_TEST_CONNECTIONS
 * the count before the storm; the clients over it are ended (admit.end-excess, as in the default
 * policy).
 * MEMGOV_TEST_OPTION_FILE: the [sql] option-file to log in with (another account);
 * MEMGOV_TEST_CONNECTIONS: the server's connection count in the decision, as the daemon's sampler
 * counts its socket descriptors (without it, the server is asked); MEMGOV_TEST_FIT: the
 * connections more that fit (Decision.admit_fit, admit.fit); MEMGOV_TEST_ADMIN=1: the session kept
 * open as the daemon's action thread keeps it (sql.keep-open), and while it is still open, one more
 * login of the same account, an administrator's: admin=ok, or admin=WHY. Exits 0 when
 * admit_run() ran (whatever it returned), 2 on a usage error. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "memgov/actuator.h"
#include "memgov/policy.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"

static int usage(void) {
        fprintf(stderr, "usage: memgov-admit-run PID lower|carry|restore DRY_RUN HEADROOM FLOOR [CONFIGURED SET ERRORS]\n");
        return 2;
}

int main(int argc, char **argv) {
        uint64_t pid, dry, headroom, floor, configured = 0, set = 0, errors = 0;
        Policy p;

        if ((argc != 6 && argc != 9) || !parse_decimal_u64(argv[1], &pid) || (strcmp(argv[2], "lower") && strcmp(argv[2], "carry") && strcmp(argv[2], "restore")) ||
            !parse_decimal_u64(argv[3], &dry) || !parse_decimal_u64(argv[4], &headroom) || !parse_decimal_u64(argv[5], &floor) ||
            (argc == 9 && (!parse_decimal_u64(argv[6], &configured) || !parse_decimal_u64(argv[7], &set) ||
                           (strcmp(argv[8], "-") && !parse_decimal_u64(argv[8], &errors)))))
                return usage();
        if (policy_load_default(&p) < 0) {
                fprintf(stderr, "memgov-admit-run: the default policy does not load\n");
                return 2;
        }
        const char *opt = getenv("MEMGOV_TEST_OPTION_FILE");
        if (opt)
                snprintf(p.sql_option_file, sizeof(p.sql_option_file), "%s", opt);
        sql_library_init();

        ActionTarget t = { .kind = TARGET_PID, .cgroup_fd = -1, .pid = (pid_t) pid };
        snprintf(t.description, sizeof(t.description), "process %d", (int) t.pid);
        ActionContext c = { .target = &t, .policy = &p, .dry_run = dry != 0 };
        Decision d = {
                .kind = DECISION_ACTION,
                .action = ACTION_ADMIT,
                .admit.restore = !strcmp(argv[2], "restore"),
                .admit.carried = !strcmp(argv[2], "carry"),
                .admit.headroom = (unsigned) headroom,
                .admit.floor = (unsigned) floor,
        };
        const char *counted = getenv("MEMGOV_TEST_CONNECTIONS");
        uint64_t connections;
        if (counted) {
                if (!parse_decimal_u64(counted, &connections) || connections > UINT32_MAX)
                        return usage();
                d.admit.connections = (unsigned) connections;
        }
        const char *fit = getenv("MEMGOV_TEST_FIT");
        if (fit) {
                uint64_t n;
                if (!parse_decimal_u64(fit, &n) || n > UINT32_MAX)
                        return usage();
                d.admit.fit = (unsigned) n;
        }
        AdmitMemory m = { .pid = t.pid, .configured = configured, .set = set, .errors = errors,
                          .errors_known = argc == 9 && strcmp(argv[8], "-") };
        ActionResult res = {};

        bool admin = getenv("MEMGOV_TEST_ADMIN") && streq(getenv("MEMGOV_TEST_ADMIN"), "1");
        unsigned long long kept_id = 0;
        char why[512];
        if (admin) {
                /* The session kept before the action, as the daemon's action thread has it. */
                SqlConn kept;
                sql_keep_begin();
                if (sql_connect(&p, t.pid, &kept, why, sizeof(why)) < 0) {
                        fprintf(stderr, "memgov-admit-run: %s\n", why);
                        return 2;
                }
                kept_id = kept.own_id;
                sql_close(&kept);
        }
        int r = admit_run(&c, &d, &m, &res);
        if (admin) {
                /* The kept session taken again, as the daemon's next action would: the same one
                 * (or the check below would pass for a session that went); a second login beside
                 * it is a new session. */
                SqlConn kept, other;
                if (sql_connect(&p, t.pid, &kept, why, sizeof(why)) < 0)
                        printf("admin=memgov's kept session is gone: %s\n", why);
                else if (kept.own_id != kept_id) {
                        printf("admin=memgov's kept session #%llu went during the action (now #%llu)\n", kept_id,
                               kept.own_id);
                        sql_close(&kept);
                } else {
                        if (sql_connect(&p, t.pid, &other, why, sizeof(why)) < 0)
                                printf("admin=%s\n", why);
                        else {
                                printf("admin=ok\n");
                                sql_close(&other);
                        }
                        sql_close(&kept);
                }
                sql_keep_end();
        }
        printf("error=%d\n", r);
        printf("explained=%d\n", res.explained);
        printf("value_before=%" PRIu64 "\n", res.value_before);
        printf("value=%" PRIu64 "\n", res.value);
        printf("baseline=%" PRIu64 "\n", res.baseline);
        if (m.errors_known || m.configured == 0)
                printf("memory=%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", m.configured, m.set, m.errors);
        else
                printf("memory=%" PRIu64 " %" PRIu64 " -\n", m.configured, m.set);
        printf("detail=%s\n", res.detail);
        return 0;
}
