/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memgov/daemon.h"
#include "memgov/log.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov record [OPTIONS] --out FILE [TARGET]\n"
               "\n"
               "Sample a server every INTERVAL and write the samples as a trace that memgov replay\n"
               "reads. Nothing is decided or changed. The target is followed across restarts.\n"
               "\n"
               "  -o --out FILE        the trace to write ('-' for standard output)\n"
               "  -i --interval TIME   time between samples (default 1s)\n"
               "  -d --duration TIME   stop after TIME (default: until interrupted)\n"
               "  -h --help            show this help\n"
               "\n" TARGET_OPTIONS_HELP);
}

int cmd_record(int argc, char **argv) {
        static const struct option options[] = {
                { "out", required_argument, NULL, 'o' },
                { "interval", required_argument, NULL, 'i' },
                { "duration", required_argument, NULL, 'd' },
                { "help", no_argument, NULL, 'h' },
                TARGET_OPTIONS,
                {},
        };
        ManagerOptions o = { .record_only = true, .record_interval = USEC_PER_SEC, .socket_path = "", .dry_run = true };
        TargetArgs t;
        int c, r;

        target_args_init(&t);
        while ((c = getopt_long(argc, argv, "o:i:d:h", options, NULL)) >= 0) {
                if ((r = target_args_parse(&t, c, optarg, "record")) != 0) {
                        if (r < 0)
                                return EXIT_USAGE;
                        continue;
                }
                switch (c) {
                case 'o':
                        o.record_path = streq(optarg, "-") ? "/dev/stdout" : optarg;
                        break;
                case 'i':
                        if (parse_timespan(optarg, &o.record_interval) < 0 || o.record_interval < 10 * USEC_PER_MSEC) {
                                fprintf(stderr, "memgov record: --interval '%s' is not a duration of at least 10ms\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'd':
                        if (parse_timespan(optarg, &o.duration) < 0 || o.duration == 0) {
                                fprintf(stderr, "memgov record: --duration '%s' is not a duration\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("record");
                        return EXIT_USAGE;
                }
        }
        if (!o.record_path || optind < argc) {
                fprintf(stderr, "memgov record: %s\n", o.record_path ? "unexpected argument" : "--out FILE is required");
                usage_hint("record");
                return EXIT_USAGE;
        }
        return cli_run_manager(&o, &t);
}
