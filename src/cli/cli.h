/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>

#include "memgov/engine.h"
#include "memgov/format.h"
#include "memgov/json-output.h"
#include "memgov/policy.h"

/* Exit codes of every subcommand. */
#define EXIT_BAD_INPUT 1 /* a file or value was wrong: the message says what */
#define EXIT_USAGE 2     /* the command line itself was wrong */

int cmd_check(int argc, char **argv);
int cmd_replay(int argc, char **argv);

/* Loads the embedded default, then FILE over it when given; prints problems on stderr.
 * Returns 0, or an exit code. origin describes where the policy came from. */
int cli_load_policy(const char *file, Policy *ret, char *origin, size_t origin_size);


void usage_hint(const char *verb);

#include "memgov/target.h"
#include "memgov/roots.h"

/* The target options every live command takes: --unit, --cgroup, --pid, --process[=NAMES],
 * --cgroup-root, --proc-root. */
enum {
        ARG_UNIT = 0x100,
        ARG_CGROUP,
        ARG_PID,
        ARG_PROCESS,
        ARG_CGROUP_ROOT,
        ARG_PROC_ROOT,
};

#define TARGET_OPTIONS                                                          \
        { "unit", required_argument, NULL, ARG_UNIT },                          \
        { "cgroup", required_argument, NULL, ARG_CGROUP },                      \
        { "pid", required_argument, NULL, ARG_PID },                            \
        { "process", optional_argument, NULL, ARG_PROCESS },                    \
        { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },            \
        { "proc-root", required_argument, NULL, ARG_PROC_ROOT }

#define TARGET_OPTIONS_HELP                                                                          \
        "Target (default: the running mariadbd or mysqld process):\n"                               \
        "  --unit NAME          a systemd unit, e.g. mariadb.service\n"                             \
        "  --cgroup PATH        a cgroup, e.g. /system.slice/mariadb.service\n"                     \
        "  --pid PID            a process\n"                                                        \
        "  --process[=NAMES]    the server process by name (default mariadbd,mysqld)\n"             \
        "  --cgroup-root DIR    the cgroup v2 file system (default /sys/fs/cgroup)\n"               \
        "  --proc-root DIR      the proc file system (default /proc)\n"

typedef struct TargetArgs {
        TargetSpec spec;
        bool given;
        RootsOptions roots;
} TargetArgs;

void target_args_init(TargetArgs *t);
/* Handles one getopt result; 1 if it was a target option, 0 if not, -1 on a bad value. */
int target_args_parse(TargetArgs *t, int c, const char *arg, const char *verb);

int cmd_run(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_trim(int argc, char **argv);
