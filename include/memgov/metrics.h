/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/engine.h"
#include "memgov/explain.h"
#include "memgov/sample.h"

/* Prometheus metrics: counters the daemon keeps as results come in, and the text exposition
 * format (version 0.0.4) rendered from them and the latest sample. Pure: the HTTP endpoint and
 * the textfile writer live in the daemon. */

typedef enum MetricsResult {
        METRICS_RESULT_DONE,
        METRICS_RESULT_FAILED,
        METRICS_RESULT_DRY_RUN, /* decided and logged as "would ..." */
        _METRICS_RESULT_MAX,
} MetricsResult;

/* Upper bounds of the injection stop-time histogram, in microseconds (+Inf is implied). */
#define METRICS_STOP_BUCKETS 10
extern const usec_t metrics_stop_bounds[METRICS_STOP_BUCKETS];

typedef struct MetricsCounters {
        uint64_t actions[_ACTION_KIND_MAX][_METRICS_RESULT_MAX];
        uint64_t reclaimed[_ACTION_KIND_MAX]; /* bytes the actuators measured as freed */
        uint64_t stop_buckets[METRICS_STOP_BUCKETS + 1]; /* not cumulative; last = above all */
        uint64_t stop_count;
        usec_t stop_sum;
        uint64_t decisions[_DECISION_CLASS_MAX]; /* by decision_class() */
        uint64_t samples;
        uint64_t wakeups_psi, wakeups_events;
} MetricsCounters;

/* One finished action: its kind, how it ended, what it freed (0 = not measured) and, for a trim
 * injected with ptrace, how long a thread of the server was stopped (0 = none). */
void metrics_count_action(MetricsCounters *c, ActionKind kind, MetricsResult result, uint64_t freed, usec_t stopped);
void metrics_count_decisions(MetricsCounters *c, const EngineOutput *out);

typedef struct MetricsView {
        const char *instance; /* the target label on every series: "mariadb" for mariadb.service */
        const char *version;
        bool dry_run;
        bool target_present; /* the server is running and sampled */
        const Sample *sample; /* NULL before the first sample */
        const EngineOutput *out; /* NULL before the first decision */
        const MetricsCounters *counters;
        usec_t uptime; /* the governor's */
        const Explanation *explanation; /* memgov explain's parts and findings; NULL: not measured */
} MetricsView;

/* Renders the exposition text into buf. Returns its length, or -ENOBUFS when buf is too small
 * (buf then holds a truncated, still NUL-terminated text). */
int metrics_render(const MetricsView *v, char *buf, size_t size);

/* Escapes a label value into buf, truncated to fit: its controls as escape_untrusted() writes
 * them, then backslash, double quote and new line as the exposition format wants them. */
void metrics_escape_label(const char *s, char *buf, size_t size);
