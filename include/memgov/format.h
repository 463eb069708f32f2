/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/sample.h"

#include "memgov/engine.h"

/* The one formatter of decisions: replay timelines, dry-run output, logs and status all print
 * decisions through it, so they never disagree. */

typedef struct TimelineClock {
        usec_t start_mono; /* the first sample's monotonic time: "+6h13m" counts from here */
        bool show_wall;    /* prefix the wall clock when the samples have one */
} TimelineClock;

/* "2026-08-10 06:13:00  +6h13m    trim         working set ...: trim (method auto)"
 * With dry_run, action decisions read "would trim", "would set memory.high", ... */
int format_decision_line(char *buf, size_t size, const TimelineClock *clk, const EngineOutput *out,
                         const Decision *d, bool dry_run);

/* The verb of a decision: "trim", "set memory.high", "restart" ("would ..." when dry_run). */
const char *decision_verb(const Decision *d, bool dry_run, char *buf, size_t size);

/* What a run through a trace amounted to, accumulated tick by tick. */
typedef struct ReplaySummary {
        unsigned long samples;
        usec_t first_mono, last_mono;
        usec_t first_wall, last_wall;
        int32_t utc_offset;
        bool have_wall;
        uint64_t budget_min, budget_max;

        uint64_t peak_ws;
        uint32_t peak_bp;
        usec_t peak_mono, peak_wall;

        bool reached[_LEVEL_MAX];
        usec_t reached_mono[_LEVEL_MAX], reached_wall[_LEVEL_MAX];

        unsigned long count[_DECISION_CLASS_MAX]; /* by decision_class() */
        unsigned long actions[_ACTION_KIND_MAX];
        uint64_t freed; /* bytes freed as measured (EFFECT decisions) */

        bool predicted; /* an ETA was known when the ladder first moved */
        usec_t predicted_at_mono, predicted_at_wall, predicted_oom_mono, predicted_oom_wall;

        bool over_budget; /* the working set reached the budget in the trace */
        usec_t over_mono, over_wall;
        unsigned long oom_kills; /* EVENT decisions for memory.events oom_kill */

        /* memgov explain's figures in the trace (a trace the daemon recorded): when the
         * allocator's free memory first made an allocator-retention finding, and the end */
        bool explained;
        bool retention;
        usec_t retention_mono, retention_wall;
        uint64_t retention_free;          /* the allocator's free memory then */
        uint64_t end_free, end_total;     /* at the last sample with the figures */
        uint64_t peak_free;
} ReplaySummary;

void replay_summary_init(ReplaySummary *s);
void replay_summary_add(ReplaySummary *s, const EngineOutput *out);
/* The sample's memgov explain figures, after replay_summary_add() of its output. */
void replay_summary_add_sample(ReplaySummary *s, const Sample *sample);
/* Calls line() once per line of the summary text. */
void replay_summary_format(const ReplaySummary *s, void (*line)(void *userdata, const char *text), void *userdata);
