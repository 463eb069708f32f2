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
int cmd_plot(int argc, char **argv);

/* memgov replay and memgov plot: what they share. */
typedef struct ReplayArgs {
        const char *trace;
        const char *policy_file;
        const char *column;
        uint64_t budget, unit;
        bool json, summary_only;
        bool quiet;       /* print nothing but errors */
        const char *plot; /* also draw a chart there (FILE.svg or FILE.png), NULL = none */
} ReplayArgs;

/* Handles --policy, --budget, --unit and --column: 1 if c was one of them, 0 if not, -1 on a
 * bad value (said on stderr). */
int replay_args_parse(ReplayArgs *a, int c, const char *arg, const char *verb);
/* Runs a trace through the engine; returns 0 or an exit code. */
int replay_run(const ReplayArgs *a, const char *verb);

/* Charts of a replay (cmd-plot.c): the figures of each tick go to the plot module. */
typedef struct PlotFeed PlotFeed;
/* Checks path's extension and creates the temporary file next to it that becomes path once the
 * chart is drawn; says what is wrong on stderr and returns an exit code, or 0. */
int plot_feed_new(const char *path, const char *verb, const char *title, const Policy *policy, PlotFeed **ret);
void plot_feed_step(PlotFeed *pf, const Sample *s, const EngineOutput *out);
/* Draws the chart and renames it to path; frees pf; returns 0 or an exit code (said on stderr). */
int plot_feed_finish(PlotFeed *pf);
/* Without plot_feed_finish(): the temporary file is removed, path is left as it was. */
PlotFeed *plot_feed_free(PlotFeed *pf);

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

/* memgov run and memgov record: the daemon on the parsed target, until it stops; the exit code. */
struct ManagerOptions;
int cli_run_manager(struct ManagerOptions *o, const TargetArgs *t);

int cmd_run(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_status(int argc, char **argv);
/* The daemon's reply to "status" (pure: fuzzed on its own): 0 and the status document, -EACCES
 * and the reply's "error" in error (a refused request), or -EBADMSG when it is not JSON. */
int status_reply_parse(const char *buf, json_object **ret, char *error, size_t error_size);
/* The status document as `memgov status` prints it, on stdout. */
void print_status(json_object *st, bool color, const char *note);
int cmd_record(int argc, char **argv);
int cmd_trim(int argc, char **argv);
int cmd_explain(int argc, char **argv);
