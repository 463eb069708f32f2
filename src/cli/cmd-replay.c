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
               "     --plot FILE     also draw a chart of the run: FILE.svg or FILE.png\n"
               "  -h --help          show this help\n");
}

typedef struct Replay {
        const ReplayArgs *args;
        Policy policy;
        Engine *engine;
        ReplaySummary summary;
        TimelineClock clock;
        bool started;
        json_object *decisions;
        PlotFeed *plot;
} Replay;

static void print_line(void *userdata, const char *text) {
        (void) userdata;
        printf("%s\n", text);
}

static int replay_sample(Replay *rp, const Sample *s) {
        const ReplayArgs *a = rp->args;
        EngineOutput out;

        engine_step(rp->engine, &rp->policy, s, s->mono, &out);
        if (!rp->started) {
                rp->started = true;
                rp->clock.start_mono = s->mono;
                rp->clock.show_wall = (s->has & SAMPLE_HAS_WALL) != 0;
                if (out.budget == SIZE_UNKNOWN) {
                        fprintf(stderr,
                                "%s: no budget: the trace has no memory_max or host_total column "
                                "(expected --budget SIZE, or budget.size in the policy)\n",
                                a->trace);
                        return -EINVAL;
                }
        }
        replay_summary_add(&rp->summary, &out);
        replay_summary_add_sample(&rp->summary, s);
        if (rp->plot)
                plot_feed_step(rp->plot, s, &out);
        for (unsigned i = 0; i < out.n_decisions; i++) {
                if (a->json) {
                        json_object_array_add(rp->decisions, decision_to_json(&out, &out.decisions[i], rp->clock.start_mono));
                        continue;
                }
                if (a->summary_only || a->quiet)
                        continue;
                char line[1024];
                format_decision_line(line, sizeof(line), &rp->clock, &out, &out.decisions[i], false);
                printf("%s\n", line);
        }
        return 0;
}

int replay_args_parse(ReplayArgs *a, int c, const char *arg, const char *verb) {
        switch (c) {
        case 'p':
                a->policy_file = arg;
                return 1;
        case 'b':
                if (parse_size(arg, &a->budget) < 0 || a->budget < (16ULL << 20)) {
                        fprintf(stderr, "memgov %s: --budget '%s' is not a size of at least 16M (expected e.g. 60G)\n", verb, arg);
                        return -1;
                }
                return 1;
        case 'u': {
                char tmp[16];
                /* A unit is a size of one: "M" -> "1M". */
                if (arg[0] == '\0' || strlen(arg) > 8 ||
                    (snprintf(tmp, sizeof(tmp), "1%s", arg), parse_size(tmp, &a->unit) < 0)) {
                        fprintf(stderr, "memgov %s: --unit '%s' is not a unit (expected B, K, M, G or T)\n", verb, arg);
                        return -1;
                }
                return 1;
        }
        case 'c':
                a->column = arg;
                return 1;
        default:
                return 0;
        }
}

static const char *base_name(const char *path) {
        const char *slash = strrchr(path, '/');
        return slash && slash[1] != '\0' ? slash + 1 : path;
}

static Replay *replay_free(Replay *rp) {
        if (rp) {
                engine_free(rp->engine);
                free(rp);
        }
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Replay *, replay_free);

int replay_run(const ReplayArgs *a, const char *verb) {
        char origin[512];
        int r;

        _cleanup_(replay_freep) Replay *rp = calloc(1, sizeof(Replay));
        if (!rp)
                return EXIT_FAILURE;
        rp->args = a;
        r = cli_load_policy(a->policy_file, &rp->policy, origin, sizeof(origin));
        if (r != 0)
                return r;
        if (a->budget > 0) {
                rp->policy.budget_mode = BUDGET_SIZE;
                rp->policy.budget_size = a->budget;
        }

        FILE *f = streq(a->trace, "-") ? stdin : fopen(a->trace, "re");
        if (!f) {
                fprintf(stderr, "%s: cannot open: %m\n", a->trace);
                return EXIT_BAD_INPUT;
        }
        if (a->plot) {
                char title[1024], b[FORMAT_BYTES_MAX];
                if (a->budget > 0)
                        snprintf(title, sizeof(title), "memgov replay of %s (policy: %s, budget %s)",
                                 streq(a->trace, "-") ? "standard input" : base_name(a->trace), origin,
                                 format_bytes(b, a->budget));
                else
                        snprintf(title, sizeof(title), "memgov replay of %s (policy: %s)",
                                 streq(a->trace, "-") ? "standard input" : base_name(a->trace), origin);
                r = plot_feed_new(a->plot, verb, title, &rp->policy, &rp->plot);
                if (r != 0) {
                        if (f != stdin)
                                fclose(f);
                        return r;
                }
        }

        EngineOptions opts = { .simulate = true };
        if (engine_new(&rp->policy, &opts, &rp->engine) < 0) {
                if (f != stdin)
                        fclose(f);
                rp->plot = plot_feed_free(rp->plot);
                fprintf(stderr, "memgov %s: out of memory\n", verb);
                return EXIT_FAILURE;
        }
        replay_summary_init(&rp->summary);
        if (a->json)
                rp->decisions = json_object_new_array();
        else if (!a->summary_only && !a->quiet) {
                char b[FORMAT_BYTES_MAX];
                printf("memgov replay of %s\npolicy: %s\n", a->trace, origin);
                if (a->budget > 0)
                        printf("budget: %s (--budget)\n", format_bytes(b, a->budget));
                printf("\n");
        }

        TraceReader reader;
        trace_reader_init(&reader, a->unit, a->column);
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
                        fprintf(stderr, "%s:%u: %s\n", a->trace, reader.lineno, reader.error);
                        ret = EXIT_BAD_INPUT;
                        break;
                }
                if (r == 0)
                        continue;
                /* A trace recorded by a daemon that acted shows its actions' effects. */
                engine_set_effects_assumed(rp->engine, !reader.acting);
                if (replay_sample(rp, &s) < 0) {
                        ret = EXIT_BAD_INPUT;
                        break;
                }
        }
        if (ferror(f)) {
                fprintf(stderr, "%s: read error: %m\n", a->trace);
                ret = EXIT_BAD_INPUT;
        }
        if (f != stdin)
                fclose(f);
        if (ret == 0 && rp->summary.samples == 0) {
                fprintf(stderr, "%s: no samples in the trace\n", a->trace);
                ret = EXIT_BAD_INPUT;
        }
        if (ret == 0 && rp->plot) {
                ret = plot_feed_finish(rp->plot);
                rp->plot = NULL;
        }
        if (ret != 0) {
                rp->plot = plot_feed_free(rp->plot);
                if (rp->decisions)
                        json_object_put(rp->decisions);
                return ret;
        }

        if (a->json) {
                json_object *doc = json_object_new_object();
                json_object_object_add(doc, "trace", json_object_new_string(a->trace));
                json_object_object_add(doc, "policy", json_object_new_string(origin));
                json_object_object_add(doc, "decisions", rp->decisions);
                json_object_object_add(doc, "summary", summary_to_json(&rp->summary));
                printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(doc);
                return 0;
        }
        if (a->quiet)
                return 0;
        if (!a->summary_only)
                printf("\n");
        replay_summary_format(&rp->summary, print_line, NULL);
        return 0;
}

enum { ARG_PLOT = 0x100 };

int cmd_replay(int argc, char **argv) {
        static const struct option options[] = {
                { "policy", required_argument, NULL, 'p' }, { "budget", required_argument, NULL, 'b' },
                { "unit", required_argument, NULL, 'u' },   { "column", required_argument, NULL, 'c' },
                { "json", no_argument, NULL, 'j' },         { "summary", no_argument, NULL, 's' },
                { "plot", required_argument, NULL, ARG_PLOT }, { "help", no_argument, NULL, 'h' },
                {},
        };
        ReplayArgs a = {};
        int c, r;

        while ((c = getopt_long(argc, argv, "p:b:u:c:jsh", options, NULL)) >= 0) {
                r = replay_args_parse(&a, c, optarg, "replay");
                if (r < 0)
                        return EXIT_USAGE;
                if (r > 0)
                        continue;
                switch (c) {
                case 'j':
                        a.json = true;
                        break;
                case 's':
                        a.summary_only = true;
                        break;
                case ARG_PLOT:
                        a.plot = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("replay");
                        return EXIT_USAGE;
                }
        }
        if (optind + 1 != argc) {
                fprintf(stderr, "memgov replay: expected exactly one TRACE\n");
                usage_hint("replay");
                return EXIT_USAGE;
        }
        a.trace = argv[optind];
        return replay_run(&a, "replay");
}
