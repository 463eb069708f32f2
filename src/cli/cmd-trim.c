/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trim.h"
#include "cli.h"
#include "memgov/json-output.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov trim [OPTIONS] --pid PID\n"
               "\n"
               "Give back to the kernel the memory the allocator of a running server keeps after\n"
               "the server freed it: glibc malloc_trim(0), jemalloc arena.<all>.purge, tcmalloc\n"
               "ReleaseFreeMemory, called inside the server. With --method ptrace one thread,\n"
               "blocked in a system call, is stopped for well under a millisecond while the others\n"
               "go on serving; its system call then resumes as if nothing had happened.\n"
               "\n"
               "  -p --pid PID        the server process\n"
               "     --process[=NAMES] the server by name (default mariadbd,mysqld)\n"
               "  -t --thread TID     use this thread (default: the best blocked one)\n"
               "  -m --method METHOD  auto (default: ptrace, then sql), ptrace or sql\n"
               "  -P --policy FILE    policy file ([sql] settings for the sql method)\n"
               "  -n --dry-run        choose the thread and resolve the function, do not call it\n"
               "  -j --json           print the report as JSON\n"
               "  -h --help           show this help\n");
}

enum { ARG_PROCESS_NAME = 0x300 };

int cmd_trim(int argc, char **argv) {
        static const struct option options[] = {
                { "pid", required_argument, NULL, 'p' },   { "process", optional_argument, NULL, ARG_PROCESS_NAME },
                { "thread", required_argument, NULL, 't' }, { "method", required_argument, NULL, 'm' },
                { "dry-run", no_argument, NULL, 'n' },     { "json", no_argument, NULL, 'j' },
                { "policy", required_argument, NULL, 'P' }, { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *policy_file = NULL;
        pid_t pid = 0, tid = 0;
        const char *process = NULL;
        TrimMethod method = TRIM_AUTO;
        bool dry_run = false, json = false;
        int c;

        while ((c = getopt_long(argc, argv, "p:t:m:P:njh", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                case 't': {
                        char *end;
                        long v = strtol(optarg, &end, 10);
                        if (*end || v <= 0 || v > INT32_MAX) {
                                fprintf(stderr, "memgov trim: '%s' is not a process id\n", optarg);
                                return EXIT_USAGE;
                        }
                        if (c == 'p')
                                pid = (pid_t) v;
                        else
                                tid = (pid_t) v;
                        break;
                }
                case ARG_PROCESS_NAME:
                        process = optarg ? optarg : TARGET_DEFAULT_PROCESSES;
                        break;
                case 'm':
                        if (streq(optarg, "auto"))
                                method = TRIM_AUTO;
                        else if (streq(optarg, "ptrace"))
                                method = TRIM_PTRACE;
                        else if (streq(optarg, "sql"))
                                method = TRIM_SQL;
                        else {
                                fprintf(stderr, "memgov trim: --method '%s' (expected auto, ptrace or sql)\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'n':
                        dry_run = true;
                        break;
                case 'P':
                        policy_file = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("trim");
                        return EXIT_USAGE;
                }
        if (optind < argc || (!pid && !process)) {
                fprintf(stderr, "memgov trim: %s\n", optind < argc ? "unexpected argument" : "--pid PID or --process is required");
                usage_hint("trim");
                return EXIT_USAGE;
        }
        char why[1024];
        if (!pid) {
                _cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int r = proc < 0 ? negative_errno() : find_server_process(proc, process, &pid, why, sizeof(why));
                if (r < 0) {
                        fprintf(stderr, "memgov trim: %s\n", proc < 0 ? strerror(-r) : why);
                        return EXIT_FAILURE;
                }
        }

        /* A test hook: the injection's progress, one byte per step, on this descriptor. */
        const char *e = getenv("MEMGOV_TEST_PHASE_FD");
        int phase_fd = e ? atoi(e) : -1;

        _cleanup_free_ Policy *policy = malloc(sizeof(Policy));
        char origin[512];
        if (!policy)
                return EXIT_FAILURE;
        int r = cli_load_policy(policy_file, policy, origin, sizeof(origin));
        if (r != 0)
                return r;
        sql_library_init();

        TrimReport rep;
        r = trim_run(policy, pid, 0, tid, method, dry_run, phase_fd, &rep, why, sizeof(why));
        if (json) {
                json_object *o = trim_report_json(pid, &rep, r, why, dry_run);
                json_escape_untrusted(o); /* a path or an error from the server's side */
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(o);
        } else {
                char line[1024], shown[4 * sizeof(line)];
                trim_report_text(pid, &rep, r, why, dry_run, line, sizeof(line));
                fprintf(r < 0 ? stderr : stdout, "%s\n", escape_untrusted(line, shown, sizeof(shown)));
        }
        return r < 0 ? EXIT_FAILURE : 0;
}
