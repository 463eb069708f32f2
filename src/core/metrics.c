/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memgov/metrics.h"
#include "memgov/strutil.h"

const usec_t metrics_stop_bounds[METRICS_STOP_BUCKETS] = {
        50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000,
};

static const char *const result_names[_METRICS_RESULT_MAX] = {
        [METRICS_RESULT_DONE] = "done",
        [METRICS_RESULT_FAILED] = "failed",
        [METRICS_RESULT_DRY_RUN] = "dry_run",
};

void metrics_count_action(MetricsCounters *c, ActionKind kind, MetricsResult result, uint64_t freed, usec_t stopped) {
        if (kind < 0 || kind >= _ACTION_KIND_MAX || result < 0 || result >= _METRICS_RESULT_MAX)
                return;
        c->actions[kind][result]++;
        if (result == METRICS_RESULT_DONE)
                c->reclaimed[kind] += freed;
        if (stopped > 0) {
                unsigned b = 0;
                while (b < METRICS_STOP_BUCKETS && stopped > metrics_stop_bounds[b])
                        b++;
                c->stop_buckets[b]++;
                c->stop_count++;
                c->stop_sum += stopped;
        }
}

void metrics_count_decisions(MetricsCounters *c, const EngineOutput *out) {
        for (unsigned i = 0; i < out->n_decisions; i++)
                if (decision_class(&out->decisions[i]) < _DECISION_CLASS_MAX)
                        c->decisions[decision_class(&out->decisions[i])]++;
}

void metrics_escape_label(const char *raw, char *buf, size_t size) {
        /* Controls first (a name from the server's side), as everywhere else; then the format's
         * own escapes, the backslash of a \xNN among them. */
        char safe[4 * 256 + 1];
        const char *s = escape_untrusted(raw, safe, sizeof(safe));
        size_t j = 0;
        if (size == 0)
                return;
        for (; *s; s++) {
                const char *rep = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
                size_t n = rep ? 2 : 1;
                if (j + n >= size)
                        break;
                if (rep)
                        memcpy(buf + j, rep, 2);
                else
                        buf[j] = *s;
                j += n;
        }
        buf[j] = '\0';
}

typedef struct Out {
        StrBuf b;
        char labels[320]; /* instance="..." */
} Out;

static void family(Out *o, const char *name, const char *type, const char *help) {
        strbuf_printf(&o->b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A sample value: integers exactly, +Inf, NaN, or a decimal. */
static void value(Out *o, const char *name, const char *extra, double v) {
        char num[64];
        if (isnan(v))
                snprintf(num, sizeof(num), "NaN");
        else if (isinf(v))
                snprintf(num, sizeof(num), v > 0 ? "+Inf" : "-Inf");
        else if (v == floor(v) && fabs(v) < 9.007199254740992e15)
                snprintf(num, sizeof(num), "%.0f", v);
        else
                snprintf(num, sizeof(num), "%.9g", v);
        strbuf_printf(&o->b, "%s{%s%s%s} %s\n", name, o->labels, extra && extra[0] ? "," : "", extra ? extra : "",
                      num);
}

static void gauge(Out *o, const char *name, const char *help, double v) {
        family(o, name, "gauge", help);
        value(o, name, NULL, v);
}

/* Bytes: UINT64_MAX is "max" (unlimited) when the value is known. */
static double bytes_value(uint64_t v) {
        return v == SIZE_UNLIMITED ? INFINITY : (double) v;
}

static void render_sample(Out *o, const MetricsView *v) {
        const Sample *s = v->sample;
        const EngineOutput *e = v->out;
        char extra[96];

        if (e && e->ws != SIZE_UNKNOWN)
                gauge(o, "memgov_working_set_bytes",
                      "Working set: memory.current minus inactive file cache, else the server's RSS.", (double) e->ws);
        if (e && e->budget != SIZE_UNKNOWN) {
                gauge(o, "memgov_budget_bytes", "What the working set must stay under (memory.max, or the policy's budget).",
                      (double) e->budget);
                gauge(o, "memgov_budget_used_ratio", "Working set as a share of the budget.", e->ws_bp / 10000.0);
        }
        if (e) {
                gauge(o, "memgov_eta_seconds",
                      "Predicted time until the working set reaches the budget; +Inf when it is not rising.",
                      e->eta == USEC_INFINITY ? INFINITY : (double) e->eta / USEC_PER_SEC);
                if (e->trend_valid)
                        gauge(o, "memgov_trend_bytes_per_second", "Working-set slope (Theil-Sen over the trend window).",
                              e->slope);
                family(o, "memgov_level", "gauge", "The escalation level: 1 for the current one (a state set).");
                for (Level l = LEVEL_NORMAL; l < _LEVEL_MAX; l++) {
                        snprintf(extra, sizeof(extra), "level=\"%s\"", level_to_string(l));
                        value(o, "memgov_level", extra, e->level == l ? 1 : 0);
                }
        }
        if (!s)
                return;
        if (s->has & SAMPLE_HAS_CGROUP) {
                gauge(o, "memgov_memory_current_bytes", "The cgroup's memory.current.", (double) s->memory_current);
                gauge(o, "memgov_memory_high_bytes", "The cgroup's memory.high (+Inf: max).", bytes_value(s->memory_high));
                gauge(o, "memgov_memory_max_bytes", "The cgroup's memory.max (+Inf: max).", bytes_value(s->memory_max));
                gauge(o, "memgov_memory_anon_bytes", "Anonymous memory of the cgroup (memory.stat anon).", (double) s->anon);
                gauge(o, "memgov_memory_file_bytes", "Page cache of the cgroup (memory.stat file).", (double) s->file);
        }
        if (s->has & SAMPLE_HAS_PROCESS) {
                gauge(o, "memgov_server_rss_bytes", "Resident set size of the server process.", (double) s->rss);
                gauge(o, "memgov_server_anon_mappings", "Anonymous mappings of the server process (allocator arenas).",
                      s->anon_maps);
                gauge(o, "memgov_server_threads", "Threads of the server process.", s->threads);
        }
        if (s->has & SAMPLE_HAS_UPTIME)
                gauge(o, "memgov_server_uptime_seconds", "How long the server process has been running.",
                      (double) s->uptime / USEC_PER_SEC);
        if (s->has & SAMPLE_HAS_EVENTS) {
                static const struct {
                        const char *name;
                        size_t offset;
                } ev[] = {
                        { "low", offsetof(MemoryEvents, low) },
                        { "high", offsetof(MemoryEvents, high) },
                        { "max", offsetof(MemoryEvents, max) },
                        { "oom", offsetof(MemoryEvents, oom) },
                        { "oom_kill", offsetof(MemoryEvents, oom_kill) },
                        { "oom_group_kill", offsetof(MemoryEvents, oom_group_kill) },
                };
                family(o, "memgov_memory_events_total", "counter", "The cgroup's memory.events counters.");
                for (size_t i = 0; i < ELEMENTSOF(ev); i++) {
                        snprintf(extra, sizeof(extra), "event=\"%s\"", ev[i].name);
                        value(o, "memgov_memory_events_total", extra,
                              (double) *(const uint64_t *) ((const char *) &s->events + ev[i].offset));
                }
        }
        if (s->has & SAMPLE_HAS_PSI) {
                family(o, "memgov_pressure_avg10_ratio", "gauge",
                       "The cgroup's memory pressure (PSI): share of the last 10 s tasks were stalled.");
                value(o, "memgov_pressure_avg10_ratio", "kind=\"some\"", s->psi.some.avg10 / 10000.0);
                if (s->psi.has_full)
                        value(o, "memgov_pressure_avg10_ratio", "kind=\"full\"", s->psi.full.avg10 / 10000.0);
                family(o, "memgov_pressure_stalled_seconds_total", "counter",
                       "The cgroup's memory pressure (PSI): total time tasks were stalled.");
                value(o, "memgov_pressure_stalled_seconds_total", "kind=\"some\"",
                      (double) s->psi.some.total / USEC_PER_SEC);
                if (s->psi.has_full)
                        value(o, "memgov_pressure_stalled_seconds_total", "kind=\"full\"",
                              (double) s->psi.full.total / USEC_PER_SEC);
        }
}

static void render_explanation(Out *o, const Explanation *e) {
        char extra[96];
        family(o, "memgov_server_memory_bytes", "gauge",
               "Where the server's memory is (memgov explain): parts that add up to memory.current, else to the "
               "server's RSS.");
        for (ExplainPart p = 0; p < _PART_MAX; p++)
                if (e->has[p]) {
                        snprintf(extra, sizeof(extra), "part=\"%s\"", explain_part_to_string(p));
                        value(o, "memgov_server_memory_bytes", extra, (double) e->parts[p]);
                }
        family(o, "memgov_memory_finding", "gauge",
               "memgov explain's findings: 1 for each that holds now (a state set).");
        for (FindingKind k = 0; k < _FINDING_KIND_MAX; k++) {
                bool found = false;
                for (unsigned i = 0; i < e->n_findings; i++)
                        found = found || e->findings[i].kind == k;
                snprintf(extra, sizeof(extra), "kind=\"%s\"", finding_kind_to_string(k));
                value(o, "memgov_memory_finding", extra, found ? 1 : 0);
        }
        family(o, "memgov_memory_finding_gives_back_bytes", "gauge",
               "What each finding's fix would give back, where it is known.");
        for (unsigned i = 0; i < e->n_findings; i++)
                if (e->findings[i].gives_back_known) {
                        snprintf(extra, sizeof(extra), "kind=\"%s\"", finding_kind_to_string(e->findings[i].kind));
                        value(o, "memgov_memory_finding_gives_back_bytes", extra, (double) e->findings[i].gives_back);
                }
}

static void render_counters(Out *o, const MetricsCounters *c) {
        char extra[128];

        family(o, "memgov_actions_total", "counter", "Actions carried out, by kind and result.");
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++)
                for (MetricsResult r = 0; r < _METRICS_RESULT_MAX; r++) {
                        snprintf(extra, sizeof(extra), "action=\"%s\",result=\"%s\"", action_kind_to_string(k),
                                 result_names[r]);
                        value(o, "memgov_actions_total", extra, (double) c->actions[k][r]);
                }
        family(o, "memgov_reclaimed_bytes_total", "counter", "Memory the actions measured as given back, by kind.");
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++) {
                if (!action_info(k)->reclaims)
                        continue;
                snprintf(extra, sizeof(extra), "action=\"%s\"", action_kind_to_string(k));
                value(o, "memgov_reclaimed_bytes_total", extra, (double) c->reclaimed[k]);
        }
        family(o, "memgov_decisions_total", "counter", "Decisions of the engine, by kind (actions, holds, effects, events).");
        for (unsigned k = 0; k < _DECISION_CLASS_MAX; k++) {
                snprintf(extra, sizeof(extra), "kind=\"%s\"", decision_class_to_string(k));
                value(o, "memgov_decisions_total", extra, (double) c->decisions[k]);
        }

        family(o, "memgov_injection_stop_seconds", "histogram",
               "How long a thread of the server was stopped for an injected allocator trim.");
        uint64_t cum = 0;
        for (unsigned b = 0; b < METRICS_STOP_BUCKETS; b++) {
                cum += c->stop_buckets[b];
                snprintf(extra, sizeof(extra), "le=\"%g\"", (double) metrics_stop_bounds[b] / USEC_PER_SEC);
                value(o, "memgov_injection_stop_seconds_bucket", extra, (double) cum);
        }
        cum += c->stop_buckets[METRICS_STOP_BUCKETS];
        value(o, "memgov_injection_stop_seconds_bucket", "le=\"+Inf\"", (double) cum);
        value(o, "memgov_injection_stop_seconds_sum", NULL, (double) c->stop_sum / USEC_PER_SEC);
        value(o, "memgov_injection_stop_seconds_count", NULL, (double) c->stop_count);

        family(o, "memgov_samples_total", "counter", "Samples taken.");
        value(o, "memgov_samples_total", NULL, (double) c->samples);
        family(o, "memgov_wakeups_total", "counter", "Samples the kernel woke memgov up for, by source.");
        value(o, "memgov_wakeups_total", "source=\"psi\"", (double) c->wakeups_psi);
        value(o, "memgov_wakeups_total", "source=\"memory_events\"", (double) c->wakeups_events);
}

int metrics_render(const MetricsView *v, char *buf, size_t size) {
        Out o;
        char inst[256], ver[64];

        strbuf_init(&o.b, buf, size);
        metrics_escape_label(v->instance ? v->instance : "", inst, sizeof(inst));
        snprintf(o.labels, sizeof(o.labels), "target=\"%s\"", inst);

        metrics_escape_label(v->version ? v->version : "", ver, sizeof(ver));
        char extra[96];
        snprintf(extra, sizeof(extra), "version=\"%s\"", ver);
        family(&o, "memgov_build_info", "gauge", "memgov's version, as a label.");
        value(&o, "memgov_build_info", extra, 1);
        gauge(&o, "memgov_dry_run", "1 when memgov decides and logs but changes nothing.", v->dry_run ? 1 : 0);
        gauge(&o, "memgov_uptime_seconds", "How long this memgov has been running.", (double) v->uptime / USEC_PER_SEC);
        gauge(&o, "memgov_target_up", "1 when the governed server is running and sampled.", v->target_present ? 1 : 0);
        render_sample(&o, v);
        if (v->explanation && v->explanation->total_source)
                render_explanation(&o, v->explanation);
        if (v->counters)
                render_counters(&o, v->counters);
        return o.b.truncated ? -ENOBUFS : (int) o.b.len;
}
