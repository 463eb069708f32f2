/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "memgov/policy-file.h"

static void help(void) {
        printf("Usage: memgov check [--quiet] FILE...\n"
               "\n"
               "Validate policy files. Each file is read over the embedded default, as memgov\n"
               "would use it; every problem is printed as FILE:LINE: KEY: what is wrong\n"
               "(expected ...). Exit status 0 when all files are valid, 1 otherwise.\n"
               "Running as root, a file that is not a regular file, not owned by root, or writable by its\n"
               "group or others is refused.\n"
               "\n"
               "  -q --quiet   print nothing for valid files\n"
               "  -h --help    show this help\n");
}

static void print_problem(void *userdata, const char *message) {
        unsigned *count = userdata;
        (*count)++;
        fprintf(stderr, "%s\n", message);
}

int cmd_check(int argc, char **argv) {
        static const struct option options[] = {
                { "quiet", no_argument, NULL, 'q' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        bool quiet = false;
        int c, ret = 0;

        while ((c = getopt_long(argc, argv, "qh", options, NULL)) >= 0)
                switch (c) {
                case 'q':
                        quiet = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("check");
                        return EXIT_USAGE;
                }
        if (optind >= argc) {
                fprintf(stderr, "memgov check: no policy file given\n");
                usage_hint("check");
                return EXIT_USAGE;
        }

        for (int i = optind; i < argc; i++) {
                Policy *p = malloc(sizeof(Policy));
                unsigned problems = 0;
                if (!p) {
                        fprintf(stderr, "memgov check: out of memory\n");
                        return EXIT_FAILURE;
                }
                if (policy_load_default(p) < 0) {
                        fprintf(stderr, "memgov check: the embedded default policy does not load\n");
                        free(p);
                        return EXIT_FAILURE;
                }
                int r = policy_load_file(argv[i], p, print_problem, &problems);
                free(p);
                if (r != 0) {
                        if (r > 0)
                                fprintf(stderr, "%s: %d problem%s\n", argv[i], r, r == 1 ? "" : "s");
                        ret = EXIT_BAD_INPUT;
                } else if (!quiet)
                        printf("%s: ok\n", argv[i]);
        }
        return ret;
}
