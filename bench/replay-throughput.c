/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How fast replay goes through a week of samples at 1 s resolution, side by side with the cost
 * of only reading the same trace, in one run. Prints figures and ratios; never fails on noise. */
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "memgov/engine.h"
#include "memgov/trace.h"

extern char **environ;

#define GB (1ULL << 30)
#define MB (1ULL << 20)
#define WEEK_SAMPLES (7U * 24 * 3600)

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A week under memory.max 60G: a daily cycle, 250M/h of slow growth, noise, and a sawtooth of
 * trims every few hours, so that every part of the engine is exercised. */
static void make_week(Sample *s) {
        uint64_t x = 0x9E3779B97F4A7C15ULL;
        double ws = 35.0 * GB, trimmed = 0;
        for (unsigned i = 0; i < WEEK_SAMPLES; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                double noise = (double) (x % 200) * MB / 10.0;
                ws += 250.0 * MB / 3600.0;
                if (i % (4 * 3600) == 0)
                        trimmed += 0.5 * GB;
                double day = 4.0 * GB * (0.5 + 0.5 * __builtin_sin((double) i / 86400.0 * 6.283185307));
                uint64_t cur = (uint64_t) (ws - trimmed + day + noise);
                s[i] = (Sample) {
                        .mono = (usec_t) i * USEC_PER_SEC,
                        .wall = 1786320000ULL * USEC_PER_SEC + (usec_t) i * USEC_PER_SEC,
                        .has = SAMPLE_HAS_WALL | SAMPLE_HAS_CGROUP | SAMPLE_HAS_EVENTS | SAMPLE_HAS_PSI |
                               SAMPLE_HAS_PROCESS | SAMPLE_HAS_UPTIME,
                        .memory_current = cur + 2 * GB,
                        .memory_high = SIZE_UNLIMITED,
                        .memory_max = 60 * GB,
                        .anon = cur,
                        .file = 2 * GB,
                        .inactive_file = 2 * GB,
                        .psi = { .has_full = true },
                        .pid = 1234,
                        .uptime = 86400ULL * USEC_PER_SEC + (usec_t) i * USEC_PER_SEC,
                        .rss = cur,
                };
        }
}

int main(int argc, char **argv) {
        const char *memgov = argc > 1 ? argv[1] : "./memgov";
        Sample *samples = malloc(sizeof(Sample) * WEEK_SAMPLES);
        Engine *e = NULL;
        Policy p;
        EngineOutput out;
        char path[] = "/tmp/memgov-bench-XXXXXX";
        unsigned long decisions = 0;

        if (!samples || policy_load_default(&p) < 0)
                return 1;
        make_week(samples);

        /* 1. The engine alone. */
        EngineOptions o = { .simulate = true };
        if (engine_new(&p, &o, &e) < 0)
                return 1;
        double t0 = now_s();
        for (unsigned i = 0; i < WEEK_SAMPLES; i++) {
                engine_step(e, &p, &samples[i], samples[i].mono, &out);
                decisions += out.n_decisions;
        }
        double engine_s = now_s() - t0;

        /* 2. The same week as a trace file. */
        int fd = mkstemp(path);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f)
                return 1;
        char line[TRACE_LINE_MAX];
        trace_format_header(line, sizeof(line));
        fprintf(f, "%s\n", line);
        for (unsigned i = 0; i < WEEK_SAMPLES; i++) {
                trace_format_row(&samples[i], line, sizeof(line));
                fprintf(f, "%s\n", line);
        }
        fclose(f);

        /* 3. Reading the trace only: the floor any replay pays. */
        TraceReader r;
        trace_reader_init(&r, 0, NULL);
        f = fopen(path, "r");
        char *buf = NULL;
        size_t cap = 0;
        ssize_t n;
        unsigned long rows = 0;
        t0 = now_s();
        while ((n = getline(&buf, &cap, f)) > 0) {
                Sample s;
                if (trace_reader_line(&r, buf, (size_t) n - 1, &s) == 1)
                        rows++;
        }
        double parse_s = now_s() - t0;
        fclose(f);
        free(buf);

        /* 4. The whole command, as a user runs it. */
        char *args[] = { (char *) memgov, (char *) "replay", (char *) "--summary", path, NULL };
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", 1, 0);
        pid_t pid;
        int status = -1;
        t0 = now_s();
        if (posix_spawn(&pid, memgov, &fa, NULL, args, environ) == 0)
                waitpid(pid, &status, 0);
        double cmd_s = now_s() - t0;
        unlink(path);

        double week = 7.0 * 86400.0;
        printf("replay throughput, one week at 1 s resolution (%u samples, %lu decisions)\n", WEEK_SAMPLES, decisions);
        printf("  engine alone         %8.3f s  %10.0f samples/s  %9.0fx real time\n", engine_s,
               WEEK_SAMPLES / engine_s, week / engine_s);
        printf("  reading the trace    %8.3f s  %10.0f samples/s  (%lu rows)\n", parse_s, rows / parse_s, rows);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                printf("  memgov replay        %8.3f s  %10.0f samples/s  %9.0fx real time\n", cmd_s,
                       WEEK_SAMPLES / cmd_s, week / cmd_s);
        else
                printf("  memgov replay        failed to run %s\n", memgov);
        printf("  ratio engine / reading the trace: %.2f\n", engine_s / parse_s);
        free(samples);
        engine_free(e);
        return 0;
}
