/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "memgov/plot.h"
#include "memgov/units.h"

static void help(void) {
        printf("Usage: memgov plot [OPTIONS] -o FILE TRACE\n"
               "\n"
               "Run a recorded trace through the decision engine, as memgov replay does, and draw\n"
               "a chart of it instead of printing the timeline: the working set, memory.current,\n"
               "memory.high, memory.max and the budget over time, every action memgov would have\n"
               "taken, and the time it predicted was left before the budget.\n"
               "TRACE is memgov's own CSV (memgov record) or a plain log with a timestamp and one\n"
               "memory column, e.g. 'Timestamp, RSS_MB'. '-' reads standard input.\n"
               "\n"
               "  -o --output FILE   the chart: FILE.svg or FILE.png\n"
               "  -p --policy FILE   policy file over the embedded default\n"
               "  -b --budget SIZE   the budget (e.g. 60G), for traces without memory.max\n"
               "  -u --unit UNIT     unit of a plain log's memory column (B, K, M, G; binary)\n"
               "  -c --column NAME   the memory column of a plain log with several\n"
               "  -h --help          show this help\n");
}

/* The chart format path asks for: 0, or the exit code after saying what is wrong. */
static int chart_format(const char *path, const char *verb, PlotFormat *ret) {
        int format = plot_format_from_path(path);
        if (format == -EOPNOTSUPP) {
                fprintf(stderr, "memgov %s: this memgov was built without cairo and draws no charts (build it with "
                                "libcairo2-dev installed, or -Dplot=enabled)\n", verb);
                return EXIT_FAILURE;
        }
        if (format < 0) {
                fprintf(stderr, "memgov %s: '%s': unknown chart format (supported: %s)\n", verb, path,
                        PLOT_FORMATS_SUPPORTED);
                return EXIT_USAGE;
        }
        *ret = (PlotFormat) format;
        return 0;
}

int cmd_plot(int argc, char **argv) {
        static const struct option options[] = {
                { "output", required_argument, NULL, 'o' },
                { "policy", required_argument, NULL, 'p' },
                { "budget", required_argument, NULL, 'b' },
                { "unit", required_argument, NULL, 'u' },
                { "column", required_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        ReplayArgs a = { .quiet = true };
        int c, r;

        while ((c = getopt_long(argc, argv, "o:p:b:u:c:h", options, NULL)) >= 0) {
                r = replay_args_parse(&a, c, optarg, "plot");
                if (r < 0)
                        return EXIT_USAGE;
                if (r > 0)
                        continue;
                switch (c) {
                case 'o':
                        a.plot = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        usage_hint("plot");
                        return EXIT_USAGE;
                }
        }
        if (!a.plot) {
                fprintf(stderr, "memgov plot: expected -o FILE.svg or -o FILE.png\n");
                usage_hint("plot");
                return EXIT_USAGE;
        }
        PlotFormat format;
        if ((r = chart_format(a.plot, "plot", &format)) != 0)
                return r;
        if (optind + 1 != argc) {
                fprintf(stderr, "memgov plot: expected exactly one TRACE\n");
                usage_hint("plot");
                return EXIT_USAGE;
        }
        a.trace = argv[optind];
        return replay_run(&a, "plot");
}

/* ---- from the engine's ticks to the plot ----------------------------------------------------- */

struct PlotFeed {
        char *path;
        char *tmp; /* written there, renamed to path once complete */
        PlotFormat format;
        FILE *f;
        Plot *plot;
        bool dry_run;

        /* Replay simulates: the trace does not show what the engine wrote, so memory.high and
         * memory.max are drawn as the engine left them. */
        bool high_set;
        uint64_t high;
        bool max_set;
        uint64_t max;
};

PlotFeed *plot_feed_free(PlotFeed *pf) {
        if (!pf)
                return NULL;
        if (pf->f)
                fclose(pf->f);
        if (pf->tmp)
                (void) unlink(pf->tmp);
        plot_free(pf->plot);
        free(pf->tmp);
        free(pf->path);
        free(pf);
        return NULL;
}

/* The chart goes to a temporary file next to path, created now so that a path that cannot be
 * written fails before the replay, and renamed over path only once complete: a failed run
 * leaves no file, and keeps the one that was there. */
static int plot_feed_open(PlotFeed *pf) {
        struct stat st;

        if (stat(pf->path, &st) == 0 && S_ISDIR(st.st_mode)) {
                errno = EISDIR;
                return -EISDIR;
        }
        if (asprintf(&pf->tmp, "%s.XXXXXX", pf->path) < 0) {
                pf->tmp = NULL;
                return -ENOMEM;
        }
        int fd = mkostemp(pf->tmp, O_CLOEXEC);
        if (fd < 0) {
                int r = negative_errno();
                free(TAKE_PTR(pf->tmp));
                errno = -r;
                return r;
        }
        /* As a file fopen() creates would be. */
        mode_t mask = umask(0);
        umask(mask);
        (void) fchmod(fd, 0666 & ~mask);
        pf->f = fdopen(fd, "w");
        if (!pf->f) {
                int r = negative_errno();
                close(fd);
                errno = -r;
                return r;
        }
        return 0;
}

int plot_feed_new(const char *path, const char *verb, const char *title, const Policy *policy, PlotFeed **ret) {
        PlotFormat format;
        int r = chart_format(path, verb, &format);
        if (r != 0)
                return r;

        PlotFeed *pf = calloc(1, sizeof(PlotFeed));
        if (!pf)
                return EXIT_FAILURE;
        pf->format = format;
        pf->dry_run = policy->dry_run;
        pf->path = strdup(path);
        pf->plot = plot_new();
        if (!pf->path || !pf->plot || plot_set_title(pf->plot, title) < 0) {
                plot_feed_free(pf);
                return EXIT_FAILURE;
        }
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++) {
                char label[32];
                if (!policy->step[l].enabled || policy->step[l].eta == 0)
                        continue;
                snprintf(label, sizeof(label), "%s.eta", level_to_string(l));
                (void) plot_add_eta_threshold(pf->plot, policy->step[l].eta, label);
        }

        if (plot_feed_open(pf) < 0) {
                fprintf(stderr, "%s: cannot write: %m\n", path);
                plot_feed_free(pf);
                return EXIT_BAD_INPUT;
        }
        *ret = pf;
        return 0;
}

static bool event_kind(const Decision *d, PlotEventKind *ret) {
        if (decision_is_action(d)) {
                *ret = d->action;
                return true;
        }
        /* Of what the engine observes, the OOM kills go on the chart. */
        if (d->kind == DECISION_EVENT && d->oom_kill) {
                *ret = PLOT_EVENT_OOM_KILL;
                return true;
        }
        return false;
}

void plot_feed_step(PlotFeed *pf, const Sample *s, const EngineOutput *out) {
        bool cgroup = (s->has & SAMPLE_HAS_CGROUP) != 0;

        for (unsigned i = 0; i < out->n_decisions; i++) {
                const Decision *d = &out->decisions[i];
                if (!decision_is_action(d))
                        continue;
                if (d->action == ACTION_SET_HIGH) {
                        pf->high_set = true;
                        pf->high = d->value;
                } else if (d->action == ACTION_SET_MAX) {
                        /* Raised during a restart, then put back to what the trace shows. */
                        pf->max_set = !(cgroup && d->value == s->memory_max);
                        pf->max = d->value;
                }
        }

        PlotPoint pt = {
                .t = out->now,
                .wall = out->wall,
                .utc_offset = out->utc_offset,
        };
        pt.value[PLOT_WORKING_SET] = out->ws;
        pt.value[PLOT_MEMORY_CURRENT] = cgroup ? s->memory_current : SIZE_UNKNOWN;
        pt.value[PLOT_MEMORY_HIGH] = pf->high_set ? pf->high : cgroup ? s->memory_high : SIZE_UNKNOWN;
        pt.value[PLOT_MEMORY_MAX] = pf->max_set ? pf->max : cgroup ? s->memory_max : SIZE_UNKNOWN;
        pt.value[PLOT_BUDGET] = out->budget;
        pt.value[PLOT_ETA] = out->trend_valid ? out->eta : USEC_INFINITY;
        /* A trace with memgov explain's figures: its parts, split again at each sample. */
        Explanation e;
        if (explain_sample(s, &e)) {
                pt.has_parts = true;
                for (ExplainPart q = 0; q < _PART_MAX; q++)
                        pt.part[q] = e.has[q] ? e.parts[q] : 0;
        }
        (void) plot_add_sample(pf->plot, &pt);

        for (unsigned i = 0; i < out->n_decisions; i++) {
                const Decision *d = &out->decisions[i];
                PlotEventKind k;
                if (!event_kind(d, &k))
                        continue;
                bool value = decision_is_action(d) && action_info(d->action)->sets_limit;
                (void) plot_add_event(pf->plot, out->now, k, value ? d->value : SIZE_UNKNOWN,
                                      pf->dry_run && decision_is_action(d));
        }
}

int plot_feed_finish(PlotFeed *pf) {
        char err[256];
        int r;

        r = plot_render_to(pf->plot, pf->format, pf->f);
        if (r < 0) {
                fprintf(stderr, "%s: cannot write the chart: %s\n", pf->path, strerror_r(-r, err, sizeof(err)));
                plot_feed_free(pf);
                return EXIT_BAD_INPUT;
        }
        FILE *f = TAKE_PTR(pf->f);
        if (fclose(f) != 0 || rename(pf->tmp, pf->path) < 0) {
                fprintf(stderr, "%s: cannot write the chart: %m\n", pf->path);
                plot_feed_free(pf);
                return EXIT_BAD_INPUT;
        }
        free(TAKE_PTR(pf->tmp));
        plot_feed_free(pf);
        return 0;
}
