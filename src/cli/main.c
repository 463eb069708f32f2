/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memgov/log.h"

#ifndef MEMGOV_VERSION
#define MEMGOV_VERSION "unknown"
#endif

static void help(void) {
        printf("Usage: memgov COMMAND [OPTIONS]\n"
               "\n"
               "A memory governor for MySQL, Percona Server and MariaDB on cgroup v2: it watches the\n"
               "server's memory, predicts the time left before memory.max, and escalates (allocator\n"
               "trim, memory.high, connection reset, graceful restart) so that the kernel OOM killer\n"
               "never fires.\n"
               "\n"
               "Commands:\n"
               "  run [TARGET]     govern a server (--dry-run: decide and log, change nothing)\n"
               "  status [TARGET]  what the running memgov sees and did\n"
               "  record [TARGET]  write a trace of a server's memory\n"
               "  trim --pid PID   give the allocator's free memory back to the kernel, now\n"
               "  explain [TARGET] where the server's memory is, and what would stop it growing\n"
               "  replay TRACE     show what memgov would have done on a recorded trace\n"
               "  plot TRACE       draw a chart of a replay: -o FILE.svg or -o FILE.png\n"
               "  check FILE...    validate policy files\n"
               "  demo             watch memgov govern a real MariaDB server (a few minutes)\n"
               "  version          print the version\n"
               "\n"
               "'memgov COMMAND --help' describes each command; see memgov(8).\n");
}

int main(int argc, char **argv) {
        static const struct {
                const char *name;
                int (*run)(int argc, char **argv);
        } verbs[] = {
                { "run", cmd_run },
                { "status", cmd_status },
                { "record", cmd_record },
                { "trim", cmd_trim },
                { "explain", cmd_explain },
                { "replay", cmd_replay },
                { "plot", cmd_plot },
                { "check", cmd_check },
                { "demo", cmd_demo },
        };

        log_setup(LOG_TARGET_AUTO);

        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
                help();
                return argc < 2 ? EXIT_USAGE : 0;
        }
        if (streq(argv[1], "--version") || streq(argv[1], "version")) {
                printf("memgov %s\n", MEMGOV_VERSION);
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[1], verbs[i].name))
                        return verbs[i].run(argc - 1, argv + 1);

        fprintf(stderr, "memgov: unknown command '%s'\n", argv[1]);
        fprintf(stderr, "Try 'memgov --help'.\n");
        return EXIT_USAGE;
}
