/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memgov/daemon.h"
#include "memgov/policy-file.h"
#include "memgov/units.h"

static void print_problem(void *userdata, const char *message) {
        (void) userdata;
        fprintf(stderr, "%s\n", message);
}

int cli_load_policy(const char *file, Policy *ret, char *origin, size_t origin_size) {
        int r = policy_load_default(ret);
        if (r < 0) {
                fprintf(stderr, "memgov: the embedded default policy does not load: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        if (!file) {
                snprintf(origin, origin_size, "embedded default");
                return 0;
        }
        r = policy_load_file(file, ret, print_problem, NULL);
        if (r != 0)
                return EXIT_BAD_INPUT;
        snprintf(origin, origin_size, "%s over the embedded default", file);
        return 0;
}

void usage_hint(const char *verb) {
        fprintf(stderr, "Try 'memgov %s --help'.\n", verb);
}


void target_args_init(TargetArgs *t) {
        *t = (TargetArgs) { .spec = { .kind = TARGET_PROCESS } };
}

int target_args_parse(TargetArgs *t, int c, const char *arg, const char *verb) {
        TargetKind kind;

        switch (c) {
        case ARG_UNIT:
                kind = TARGET_UNIT;
                break;
        case ARG_CGROUP:
                kind = TARGET_CGROUP;
                break;
        case ARG_PID:
                kind = TARGET_PID;
                break;
        case ARG_PROCESS:
                kind = TARGET_PROCESS;
                break;
        case ARG_CGROUP_ROOT:
                t->roots.cgroup_root = arg;
                return 1;
        case ARG_PROC_ROOT:
                t->roots.proc_root = arg;
                return 1;
        default:
                return 0;
        }
        if (t->given) {
                fprintf(stderr, "memgov %s: one target only (--unit, --cgroup, --pid or --process)\n", verb);
                return -1;
        }
        t->given = true;
        t->spec.kind = kind;
        if (kind == TARGET_PID) {
                char *end;
                long pid = strtol(arg, &end, 10);
                if (*end || pid <= 0 || pid > INT32_MAX) {
                        fprintf(stderr, "memgov %s: --pid '%s' is not a process id\n", verb, arg);
                        return -1;
                }
                t->spec.pid = (pid_t) pid;
                return 1;
        }
        if (arg && strlen(arg) >= sizeof(t->spec.value)) {
                fprintf(stderr, "memgov %s: '%s' is too long\n", verb, arg);
                return -1;
        }
        snprintf(t->spec.value, sizeof(t->spec.value), "%s", arg ? arg : "");
        return 1;
}

int cli_run_manager(ManagerOptions *o, const TargetArgs *t) {
        Manager *m = NULL;
        int r;

        o->target = t->spec;
        o->roots = t->roots;
        r = manager_new(o, &m);
        if (r < 0)
                return EXIT_FAILURE;
        r = manager_run(m);
        manager_free(m);
        return r < 0 ? EXIT_FAILURE : 0;
}
