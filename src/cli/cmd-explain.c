/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "cli.h"
#include "explain-gather.h"
#include "explain-report.h"
#include "memgov/sql.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov explain [OPTIONS] [TARGET]\n"
               "\n"
               "Where the server's memory is, in parts that add up to its cgroup's memory.current\n"
               "(or, without a cgroup, to its resident set): page cache, kernel, the buffer pool,\n"
               "what the server counts, its sessions, the memory its allocator holds free (asked of\n"
               "the allocator itself, by the same kind of call as `memgov trim`) and what is left\n"
               "unaccounted; then what would stop it growing for good, and what that gives back.\n"
               "\n"
               TARGET_OPTIONS_HELP
               "\n"
               "  -P --policy FILE    policy file ([sql] settings to reach the server)\n"
               "     --no-allocator   do not call into the server for its allocator's statistics\n"
               "  -j --json           print the explanation as JSON\n"
               "  -h --help           show this help\n");
}

enum { ARG_NO_ALLOCATOR = 0x300 };

int cmd_explain(int argc, char **argv) {
        static const struct option options[] = {
                TARGET_OPTIONS,
                { "policy", required_argument, NULL, 'P' },
                { "no-allocator", no_argument, NULL, ARG_NO_ALLOCATOR },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        TargetArgs targs;
        const char *policy_file = NULL;
        bool json = false, allocator = true;
        int c, r;

        target_args_init(&targs);
        while ((c = getopt_long(argc, argv, "P:jh", options, NULL)) >= 0) {
                r = target_args_parse(&targs, c, optarg, "explain");
                if (r < 0)
                        return EXIT_USAGE;
                if (r > 0)
                        continue;
                switch (c) {
                case 'P':
                        policy_file = optarg;
                        break;
                case ARG_NO_ALLOCATOR:
                        allocator = false;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("explain");
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "memgov explain: unexpected argument '%s'\n", argv[optind]);
                usage_hint("explain");
                return EXIT_USAGE;
        }

        _cleanup_free_ Policy *policy = malloc(sizeof(Policy));
        char origin[512];
        if (!policy)
                return EXIT_FAILURE;
        r = cli_load_policy(policy_file, policy, origin, sizeof(origin));
        if (r != 0)
                return r;
        sql_library_init();

        Roots roots;
        char why[1024];
        r = roots_open(&roots, &targs.roots, why, sizeof(why));
        if (r < 0) {
                fprintf(stderr, "memgov explain: %s\n", why);
                return EXIT_FAILURE;
        }
        sd_bus *bus = NULL;
        if (targs.spec.kind == TARGET_UNIT && (r = sd_bus_open_system(&bus)) < 0) {
                fprintf(stderr, "memgov explain: cannot connect to the system bus to find %s: %s\n", targs.spec.value,
                        strerror(-r));
                roots_close(&roots);
                return EXIT_FAILURE;
        }
        _cleanup_free_ Target *t = malloc(sizeof(Target));
        _cleanup_free_ ExplainInput *in = malloc(sizeof(ExplainInput));
        _cleanup_free_ Explanation *e = malloc(sizeof(Explanation));
        char notes[4096];
        int ret = EXIT_FAILURE;
        if (!t || !in || !e)
                goto out;
        target_init(t, &targs.spec);
        r = target_resolve(t, &roots, bus, why, sizeof(why));
        if (r < 0) {
                char shown[4 * sizeof(why)];
                fprintf(stderr, "memgov explain: %s\n", escape_untrusted(why, shown, sizeof(shown)));
                goto release;
        }
        ExplainTarget et = {
                .pid = t->pid,
                .starttime = t->starttime,
                .cgroup_fd = t->has_cgroup ? t->cgroup_fd : -1,
                .cgroup = t->cgroup,
                .proc_fd = roots.proc_fd,
        };
        r = explain_gather(&et, policy, allocator, in, notes, sizeof(notes));
        if (r < 0) {
                char shown[4 * sizeof(notes)];
                fprintf(stderr, "memgov explain: nothing to measure for %s\n%s", t->description,
                        escape_untrusted(notes, shown, sizeof(shown)));
                goto release;
        }
        /* The unit a drop-in goes to: the one named, else the one whose cgroup the server is in. */
        const char *unit = t->spec.kind == TARGET_UNIT ? t->spec.value : NULL;
        const char *leaf = t->has_cgroup ? strrchr(t->cgroup, '/') : NULL;
        if (!unit && leaf && strlen(leaf) > STRLEN("/.service") &&
            streq(leaf + strlen(leaf) - STRLEN(".service"), ".service"))
                unit = leaf + 1;
        explain(in, unit, e);
        if (json) {
                json_object *o = explanation_json(t->pid, t->comm, t->has_cgroup ? t->cgroup : NULL, in, e, notes);
                json_escape_untrusted(o);
                printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(o);
        } else
                explanation_print(t->pid, t->comm, t->has_cgroup ? t->cgroup : NULL, in, e, notes);
        ret = 0;
release:
        target_release(t);
out:
        sd_bus_flush_close_unref(bus);
        roots_close(&roots);
        return ret;
}
