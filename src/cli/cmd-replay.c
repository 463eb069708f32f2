/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memgov/trace.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov replay [OPTIONS] TRACE\n"
               "\n"
               "Run a recorded trace through the decision engine, as the daemon would have run it,\n"
               "and print the timeline of decisions with their reasons, then a summary.\n"
               "TRACE is memgov's own CSV (memgov record) or a plain log with a timestamp and one\n"
               "memory column, e.g. 'Timestamp, RSS_MB'. '-' reads standard input.\n"
               "\n"
               "  -p --policy FILE   policy file over the embedded default\n"
               "  -b --budget SIZE   the budget (e.g. 60G), for traces without memory.max\n"
               "  -u --unit UNIT     unit of a plain log's memory column (B, K, M, G; binary)\n"
               "  -c --column NAME   the memory column of a plain log with several\n"
               "  -j --json          print one JSON document instead of text\n"
               "  -s --summary       print only the summary\n"
               "  -h --help          show this help\n");
}

typedef struct Replay {
        const char *trace;
        bool json, summary_only;
        Policy policy;
        Engine engine;
        ReplaySummary summary;
        TimelineClock clock;
        bool started;
        json_object *decisions;
} Replay;

static void print_line(void *userdata, const char *text) {
        (void) userdata;
        printf("%s\n", text);
}

static int replay_sample(Replay *rp, const Sample *s) {
        EngineOutput out;

        engine_step(&rp->engine, &rp->policy, s, s->mono, &out);
        if (!rp->started) {
                rp->started = true;
                rp->clock.start_mono = s->mono;
                rp->clock.show_wall = (s->has & SAMPLE_HAS_WALL) != 0;
                if (out.budget == SIZE_UNKNOWN) {
                        fprintf(stderr,
                                "%s: no budget: the trace has no memory_max or host_total column "
                                "(expected --budget SIZE, or budget.size in the policy)\n",
                                rp->trace);
                        return -EINVAL;
                }
        }
        replay_summary_add(&rp->summary, &out);
        for (unsigned i = 0; i < out.n_decisions; i++) {
                if (rp->json) {
                        json_object_array_add(rp->decisions, decision_to_json(&out, &out.decisions[i], rp->clock.start_mono));
                        continue;
                }
                if (rp->summary_only)
                        continue;
                char line[1024];
                format_decision_line(line, sizeof(line), &rp->clock, &out, &out.decisions[i], false);
                printf("%s\n", line);
        }
        return 0;
}

int cmd_replay(int argc, char **argv) {
        static const struct option options[] = {
                { "policy", required_argument, NULL, 'p' }, { "budget", required_argument, NULL, 'b' },
                { "unit", required_argument, NULL, 'u' },   { "column", required_argument, NULL, 'c' },
                { "json", no_argument, NULL, 'j' },         { "summary", no_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },         {},
        };
        const char *policy_file = NULL, *column = NULL;
        uint64_t budget = 0, unit = 0;
        bool json = false, summary_only = false;
        char origin[512];
        int c, r;

        while ((c = getopt_long(argc, argv, "p:b:u:c:jsh", options, NULL)) >= 0)
                switch (c) {
                case 'p':
                        policy_file = optarg;
                        break;
                case 'b':
                        if (parse_size(optarg, &budget) < 0 || budget < (16ULL << 20)) {
                                fprintf(stderr, "memgov replay: --budget '%s' is not a size of at least 16M (expected e.g. 60G)\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'u': {
                        char tmp[16];
                        /* A unit is a size of one: "M" -> "1M". */
                        if (optarg[0] == '\0' || strlen(optarg) > 8 ||
                            (snprintf(tmp, sizeof(tmp), "1%s", optarg), parse_size(tmp, &unit) < 0)) {
                                fprintf(stderr, "memgov replay: --unit '%s' is not a unit (expected B, K, M, G or T)\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                }
                case 'c':
                        column = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 's':
                        summary_only = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("replay");
                        return EXIT_USAGE;
                }
        if (optind + 1 != argc) {
                fprintf(stderr, "memgov replay: expected exactly one TRACE\n");
                usage_hint("replay");
                return EXIT_USAGE;
        }

        _cleanup_free_ Replay *rp = calloc(1, sizeof(Replay));
        if (!rp)
                return EXIT_FAILURE;
        rp->trace = argv[optind];
        rp->json = json;
        rp->summary_only = summary_only;
        r = cli_load_policy(policy_file, &rp->policy, origin, sizeof(origin));
        if (r != 0)
                return r;
        if (budget > 0) {
                rp->policy.budget_mode = BUDGET_SIZE;
                rp->policy.budget_size = budget;
        }

        FILE *f = streq(rp->trace, "-") ? stdin : fopen(rp->trace, "re");
        if (!f) {
                fprintf(stderr, "%s: cannot open: %m\n", rp->trace);
                return EXIT_BAD_INPUT;
        }

        EngineOptions opts = { .simulate = true };
        engine_init(&rp->engine, &rp->policy, &opts);
        replay_summary_init(&rp->summary);
        if (json)
                rp->decisions = json_object_new_array();
        else if (!summary_only) {
                char b[FORMAT_BYTES_MAX];
                printf("memgov replay of %s\npolicy: %s\n", rp->trace, origin);
                if (budget > 0)
                        printf("budget: %s (--budget)\n", format_bytes(b, budget));
                printf("\n");
        }

        TraceReader reader;
        trace_reader_init(&reader, unit, column);
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        int ret = 0;
        while ((n = getline(&line, &cap, f)) >= 0) {
                Sample s;
                if (n > 0 && line[n - 1] == '\n')
                        n--;
                r = trace_reader_line(&reader, line, (size_t) n, &s);
                if (r < 0) {
                        fprintf(stderr, "%s:%u: %s\n", rp->trace, reader.lineno, reader.error);
                        ret = EXIT_BAD_INPUT;
                        break;
                }
                if (r == 0)
                        continue;
                if (replay_sample(rp, &s) < 0) {
                        ret = EXIT_BAD_INPUT;
                        break;
                }
        }
        if (ferror(f)) {
                fprintf(stderr, "%s: read error: %m\n", rp->trace);
                ret = EXIT_BAD_INPUT;
        }
        if (f != stdin)
                fclose(f);
        if (ret == 0 && rp->summary.samples == 0) {
                fprintf(stderr, "%s: no samples in the trace\n", rp->trace);
                ret = EXIT_BAD_INPUT;
        }
        if (ret != 0) {
                if (rp->decisions)
                        json_object_put(rp->decisions);
                return ret;
        }

        if (json) {
                json_object *doc = json_object_new_object();
                json_object_object_add(doc, "trace", json_object_new_string(rp->trace));
                json_object_object_add(doc, "policy", json_object_new_string(origin));
                json_object_object_add(doc, "decisions", rp->decisions);
                json_object_object_add(doc, "summary", summary_to_json(&rp->summary));
                printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(doc);
                return 0;
        }
        if (!summary_only)
                printf("\n");
        replay_summary_format(&rp->summary, print_line, NULL);
        return 0;
}
