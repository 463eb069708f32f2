/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "memgov/explain.h"
#include "memgov/format.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

const char *decision_verb(const Decision *d, bool dry_run, char *buf, size_t size) {
        const char *v = decision_is_action(d) ? action_info(d->action)->verb : decision_name(d);
        snprintf(buf, size, "%s%s", dry_run && decision_is_action(d) ? "would " : "", v);
        return buf;
}

int format_decision_line(char *buf, size_t size, const TimelineClock *clk, const EngineOutput *out,
                         const Decision *d, bool dry_run) {
        char w[FORMAT_WALL_MAX], rel[FORMAT_TIMESPAN_MAX + 1], verb[32];
        StrBuf b;

        strbuf_init(&b, buf, size);
        if (clk->show_wall && out->wall > 0)
                strbuf_printf(&b, "%s  ", format_wall(w, out->wall, out->utc_offset));
        rel[0] = '+';
        format_timespan(rel + 1, out->now >= clk->start_mono ? out->now - clk->start_mono : 0);
        strbuf_printf(&b, "%-9s %-20s %s", rel, decision_verb(d, dry_run, verb, sizeof(verb)), d->reason);
        return b.truncated ? -ENOBUFS : (int) b.len;
}

void replay_summary_init(ReplaySummary *s) {
        memset(s, 0, sizeof(*s));
        s->budget_min = UINT64_MAX;
}

void replay_summary_add(ReplaySummary *s, const EngineOutput *out) {
        if (s->samples == 0) {
                s->first_mono = out->now;
                s->first_wall = out->wall;
                s->have_wall = out->wall > 0;
                s->utc_offset = out->utc_offset;
        }
        s->samples++;
        s->last_mono = out->now;
        s->last_wall = out->wall;

        if (out->budget != SIZE_UNKNOWN) {
                s->budget_min = MIN(s->budget_min, out->budget);
                s->budget_max = MAX(s->budget_max, out->budget);
        }
        if (out->ws != SIZE_UNKNOWN && out->budget != SIZE_UNKNOWN && (out->ws > s->peak_ws || s->samples == 1)) {
                s->peak_ws = out->ws;
                s->peak_bp = out->ws_bp;
                s->peak_mono = out->now;
                s->peak_wall = out->wall;
        }
        if (!s->over_budget && out->budget != SIZE_UNKNOWN && out->ws != SIZE_UNKNOWN && out->ws >= out->budget) {
                s->over_budget = true;
                s->over_mono = out->now;
                s->over_wall = out->wall;
        }

        for (unsigned i = 0; i < out->n_decisions; i++) {
                const Decision *d = &out->decisions[i];
                s->count[decision_class(d)]++;
                if (decision_is_action(d))
                        s->actions[d->action]++;
                if (d->kind == DECISION_EFFECT)
                        s->freed += d->value;
                if (d->kind == DECISION_EVENT && d->oom_kill)
                        s->oom_kills++;
                if (d->kind == DECISION_LEVEL && d->level > d->from) {
                        if (!s->reached[d->level]) {
                                s->reached[d->level] = true;
                                s->reached_mono[d->level] = out->now;
                                s->reached_wall[d->level] = out->wall;
                        }
                        if (!s->predicted && out->eta != USEC_INFINITY) {
                                s->predicted = true;
                                s->predicted_at_mono = out->now;
                                s->predicted_at_wall = out->wall;
                                s->predicted_oom_mono = out->now + out->eta;
                                s->predicted_oom_wall = out->wall > 0 ? out->wall + out->eta : 0;
                        }
                }
        }
}

void replay_summary_add_sample(ReplaySummary *s, const Sample *sample) {
        Explanation e;
        if (!(sample->has & SAMPLE_HAS_ALLOCATOR) || !explain_sample(sample, &e))
                return;
        s->explained = true;
        s->end_free = e.parts[PART_ALLOCATOR_FREE];
        s->end_total = e.total;
        s->peak_free = MAX(s->peak_free, s->end_free);
        for (unsigned i = 0; i < e.n_findings && !s->retention; i++)
                if (e.findings[i].kind == FINDING_ALLOCATOR_RETENTION) {
                        s->retention = true;
                        s->retention_mono = sample->mono;
                        s->retention_wall = sample->has & SAMPLE_HAS_WALL ? sample->wall : 0;
                        s->retention_free = s->end_free;
                }
}

static const char *when(const ReplaySummary *s, usec_t mono, usec_t wall, char *buf, size_t size) {
        char w[FORMAT_WALL_MAX], t[FORMAT_TIMESPAN_MAX];
        format_timespan(t, mono - s->first_mono);
        if (s->have_wall && wall > 0)
                snprintf(buf, size, "%s (+%s)", format_wall(w, wall, s->utc_offset), t);
        else
                snprintf(buf, size, "+%s", t);
        return buf;
}

void replay_summary_format(const ReplaySummary *s, void (*line)(void *userdata, const char *text), void *userdata) {
        char buf[512], a[96], b[96], x[FORMAT_BYTES_MAX], y[FORMAT_BYTES_MAX], t[FORMAT_TIMESPAN_MAX];

        line(userdata, "summary");
        if (s->samples == 0) {
                line(userdata, "  samples          none");
                return;
        }
        snprintf(buf, sizeof(buf), "  samples          %lu over %s, from %s to %s", s->samples,
                 format_timespan(t, s->last_mono - s->first_mono), when(s, s->first_mono, s->first_wall, a, sizeof(a)),
                 when(s, s->last_mono, s->last_wall, b, sizeof(b)));
        line(userdata, buf);

        if (s->budget_min == UINT64_MAX) {
                line(userdata, "  budget           unknown: nothing was decided");
                return;
        }
        if (s->budget_min == s->budget_max)
                snprintf(buf, sizeof(buf), "  budget           %s", format_bytes(x, s->budget_min));
        else
                snprintf(buf, sizeof(buf), "  budget           %s to %s", format_bytes(x, s->budget_min),
                         format_bytes(y, s->budget_max));
        line(userdata, buf);

        snprintf(buf, sizeof(buf), "  peak             working set %s = %u%% of the budget at %s", format_bytes(x, s->peak_ws),
                 s->peak_bp / 100, when(s, s->peak_mono, s->peak_wall, a, sizeof(a)));
        line(userdata, buf);

        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++) {
                char label[32];
                snprintf(label, sizeof(label), "first %s", level_to_string(l));
                if (s->reached[l])
                        snprintf(buf, sizeof(buf), "  %-16s %s", label, when(s, s->reached_mono[l], s->reached_wall[l], a, sizeof(a)));
                else
                        snprintf(buf, sizeof(buf), "  %-16s never", label);
                line(userdata, buf);
        }

        if (s->predicted) {
                snprintf(buf, sizeof(buf), "  OOM predicted    for %s, when the ladder first moved at %s",
                         when(s, s->predicted_oom_mono, s->predicted_oom_wall, a, sizeof(a)),
                         when(s, s->predicted_at_mono, s->predicted_at_wall, b, sizeof(b)));
        } else
                snprintf(buf, sizeof(buf), "  OOM predicted    no: the working set was not rising toward the budget when the ladder moved");
        bool moved = false;
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++)
                moved = moved || s->reached[l];
        if (!moved)
                snprintf(buf, sizeof(buf), "  OOM predicted    no: the ladder never moved");
        line(userdata, buf);

        if (s->over_budget)
                snprintf(buf, sizeof(buf), "  budget reached   at %s", when(s, s->over_mono, s->over_wall, a, sizeof(a)));
        else
                snprintf(buf, sizeof(buf), "  budget reached   never");
        line(userdata, buf);
        if (s->oom_kills > 0) {
                snprintf(buf, sizeof(buf), "  OOM kills        %lu seen in memory.events", s->oom_kills);
                line(userdata, buf);
        }

        /* memgov explain's figures, where the daemon recorded them. */
        if (s->retention)
                snprintf(buf, sizeof(buf),
                         "  retention        the allocator held %s free from %s (memgov explain's "
                         "allocator-retention); %s of %s at the end",
                         format_bytes(x, s->retention_free), when(s, s->retention_mono, s->retention_wall, a, sizeof(a)),
                         format_bytes(y, s->end_free), format_bytes(b, s->end_total));
        else if (s->explained)
                snprintf(buf, sizeof(buf),
                         "  retention        none: the allocator's free memory stayed under a tenth of the total or "
                         "32M (at most %s)",
                         format_bytes(x, s->peak_free));
        if (s->explained)
                line(userdata, buf);

        StrBuf did;
        strbuf_init(&did, buf, sizeof(buf));
        strbuf_printf(&did, "  would have done  ");
        for (ActionKind k = 0; k < _ACTION_KIND_MAX; k++)
                strbuf_printf(&did, "%s%lu %s", k ? ", " : "", s->actions[k], action_info(k)->summary);
        line(userdata, buf);
        snprintf(buf, sizeof(buf), "  held back        %lu time(s); effects judged: %lu, freeing %s in all",
                 s->count[decision_kind_class(DECISION_HOLD)],
                 s->count[decision_kind_class(DECISION_EFFECT)], format_bytes(x, s->freed));
        line(userdata, buf);
        /* A replay decides on the trace as it was recorded: it cannot know what its own actions
         * would have given back, nor what the server would have done after them. */
        line(userdata, "  not simulated    what the actions free: the trace goes on as it was recorded, so an effect "
                       "is what the working set did anyway");
}
