/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memgov/daemon.h"
#include "memgov/log.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov run [OPTIONS] [TARGET]\n"
               "\n"
               "Govern a database server's memory: sample it, decide, act, log every decision with\n"
               "its reason. With --dry-run every decision is taken and logged as \"would ...\", and\n"
               "nothing is changed.\n"
               "\n"
               "  -p --policy FILE     policy file over the embedded default (default:\n"
               "                       /etc/memgov/INSTANCE.ini if it exists, e.g. mariadb.ini\n"
               "                       for --unit mariadb.service)\n"
               "     --policy-dir DIR  where INSTANCE.ini is looked for (default /etc/memgov)\n"
               "  -n --dry-run         decide and log, change nothing\n"
               "  -l --log-level LVL   err, warning, notice, info (default) or debug\n"
               "     --socket PATH     control socket for memgov status (default\n"
               "                       /run/memgov/INSTANCE.sock; \"\" for none)\n"
               "     --record FILE     write every sample to FILE as a trace memgov replay reads\n"
               "     --state-dir DIR   where the restart history is kept (default /var/lib/memgov)\n"
               "     --duration TIME   stop after TIME (e.g. 10m)\n"
               "  -h --help            show this help\n"
               "\n" TARGET_OPTIONS_HELP);
}

enum { ARG_SOCKET = 0x200, ARG_RECORD, ARG_DURATION, ARG_STATE_DIR, ARG_POLICY_DIR };

int cmd_run(int argc, char **argv) {
        static const struct option options[] = {
                { "policy", required_argument, NULL, 'p' },
                { "dry-run", no_argument, NULL, 'n' },
                { "log-level", required_argument, NULL, 'l' },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "record", required_argument, NULL, ARG_RECORD },
                { "duration", required_argument, NULL, ARG_DURATION },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "policy-dir", required_argument, NULL, ARG_POLICY_DIR },
                { "help", no_argument, NULL, 'h' },
                TARGET_OPTIONS,
                {},
        };
        ManagerOptions o = {};
        TargetArgs t;
        int c, r;

        target_args_init(&t);
        while ((c = getopt_long(argc, argv, "p:nl:h", options, NULL)) >= 0) {
                if ((r = target_args_parse(&t, c, optarg, "run")) != 0) {
                        if (r < 0)
                                return EXIT_USAGE;
                        continue;
                }
                switch (c) {
                case 'p':
                        o.policy_path = optarg;
                        break;
                case 'n':
                        o.dry_run = true;
                        break;
                case 'l': {
                        int lvl = log_level_from_string(optarg);
                        if (lvl < 0) {
                                fprintf(stderr, "memgov run: --log-level '%s' (expected err, warning, notice, info or debug)\n", optarg);
                                return EXIT_USAGE;
                        }
                        log_set_max_level(lvl);
                        break;
                }
                case ARG_SOCKET:
                        o.socket_path = optarg;
                        break;
                case ARG_RECORD:
                        o.record_path = optarg;
                        break;
                case ARG_STATE_DIR:
                        o.state_dir = optarg;
                        break;
                case ARG_POLICY_DIR:
                        o.policy_dir = optarg;
                        break;
                case ARG_DURATION:
                        if (parse_timespan(optarg, &o.duration) < 0 || o.duration == 0) {
                                fprintf(stderr, "memgov run: --duration '%s' is not a duration (expected e.g. 10m)\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("run");
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "memgov run: unexpected argument '%s'\n", argv[optind]);
                usage_hint("run");
                return EXIT_USAGE;
        }
        return cli_run_manager(&o, &t);
}
