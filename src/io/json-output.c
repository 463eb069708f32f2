/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memgov/json-output.h"
#include "memgov/strutil.h"
#include "memgov/units.h"

json_object *time_json(usec_t mono, usec_t wall, int32_t utc_offset, usec_t start_mono) {
        json_object *o = json_object_new_object();
        char w[FORMAT_WALL_MAX], t[FORMAT_TIMESPAN_MAX];

        json_object_object_add(o, "mono_us", json_object_new_uint64(mono));
        json_object_object_add(o, "offset", json_object_new_string(format_timespan(t, mono >= start_mono ? mono - start_mono : 0)));
        json_object_object_add(o, "wall", wall > 0 ? json_object_new_string(format_wall(w, wall, utc_offset)) : NULL);
        return o;
}

json_object *size_or_max_json(uint64_t v) {
        return v == SIZE_UNLIMITED ? json_object_new_string("max") : json_object_new_uint64(v);
}

void engine_output_add_json(json_object *o, const EngineOutput *out) {
        assert(o);
        assert(out);
        json_object_object_add(o, "working_set", out->ws == SIZE_UNKNOWN ? NULL : json_object_new_uint64(out->ws));
        json_object_object_add(o, "budget", out->budget == SIZE_UNKNOWN ? NULL : json_object_new_uint64(out->budget));
        json_object_object_add(o, "share_bp", json_object_new_int((int) out->ws_bp));
        json_object_object_add(o, "slope_bytes_per_hour",
                               out->trend_valid ? json_object_new_int64((int64_t) (out->slope * 3600.0)) : NULL);
        json_object_object_add(o, "eta_s", out->eta == USEC_INFINITY ? NULL
                                                                     : json_object_new_uint64(out->eta / USEC_PER_SEC));
}

static void param_u64(void *o, const char *key, uint64_t v) {
        json_object_object_add(o, key, json_object_new_uint64(v));
}
static void param_size(void *o, const char *key, uint64_t v) {
        json_object_object_add(o, key, size_or_max_json(v));
}
static void param_bool(void *o, const char *key, bool v) {
        json_object_object_add(o, key, json_object_new_boolean(v));
}
static void param_string(void *o, const char *key, const char *v) {
        json_object_object_add(o, key, json_object_new_string(v));
}

void decision_params_add_json(json_object *o, const Decision *d) {
        assert(o);
        assert(d);
        if (!decision_is_action(d))
                return;
        if (action_info(d->action)->sets_limit)
                json_object_object_add(o, "value", size_or_max_json(d->value));
        action_params(d, &(const ActionParamSink) { .u64 = param_u64, .size = param_size, .boolean = param_bool,
                                                    .string = param_string, .userdata = o });
}

json_object *decision_to_json(const EngineOutput *out, const Decision *d, usec_t start_mono) {
        assert(out);
        assert(d);
        json_object *o = json_object_new_object();

        json_object_object_add(o, "time", time_json(out->now, out->wall, out->utc_offset, start_mono));
        json_object_object_add(o, "kind", json_object_new_string(decision_name(d)));
        json_object_object_add(o, "level", json_object_new_string(level_to_string(d->level)));
        if (d->kind == DECISION_LEVEL)
                json_object_object_add(o, "from", json_object_new_string(level_to_string(d->from)));
        if (d->kind == DECISION_EFFECT || d->kind == DECISION_HOLD)
                json_object_object_add(o, "action", json_object_new_string(action_kind_to_string(d->action)));
        decision_params_add_json(o, d);
        if (d->kind == DECISION_EFFECT)
                json_object_object_add(o, "value", size_or_max_json(d->value));
        json_object_object_add(o, "emergency", json_object_new_boolean(d->emergency));
        engine_output_add_json(o, out);
        json_object_object_add(o, "reason", json_object_new_string(d->reason));
        return o;
}

json_object *summary_to_json(const ReplaySummary *s) {
        assert(s);
        json_object *o = json_object_new_object(), *first = json_object_new_object(), *counts = json_object_new_object();

        json_object_object_add(o, "samples", json_object_new_uint64(s->samples));
        json_object_object_add(o, "duration_us", json_object_new_uint64(s->last_mono - s->first_mono));
        json_object_object_add(o, "budget_min", s->budget_min == UINT64_MAX ? NULL : json_object_new_uint64(s->budget_min));
        json_object_object_add(o, "budget_max", s->budget_min == UINT64_MAX ? NULL : json_object_new_uint64(s->budget_max));
        json_object *peak = json_object_new_object();
        json_object_object_add(peak, "working_set", json_object_new_uint64(s->peak_ws));
        json_object_object_add(peak, "share_bp", json_object_new_int((int) s->peak_bp));
        json_object_object_add(peak, "time", time_json(s->peak_mono, s->peak_wall, s->utc_offset, s->first_mono));
        json_object_object_add(o, "peak", peak);
        for (Level l = LEVEL_TRIM; l < _LEVEL_MAX; l++)
                json_object_object_add(first, level_to_string(l),
                                       s->reached[l] ? time_json(s->reached_mono[l], s->reached_wall[l], s->utc_offset,
                                                                 s->first_mono)
                                                     : NULL);
        json_object_object_add(o, "first", first);
        json_object_object_add(o, "predicted_oom",
                               s->predicted ? time_json(s->predicted_oom_mono, s->predicted_oom_wall, s->utc_offset,
                                                        s->first_mono)
                                            : NULL);
        json_object_object_add(o, "budget_reached",
                               s->over_budget ? time_json(s->over_mono, s->over_wall, s->utc_offset, s->first_mono) : NULL);
        json_object_object_add(o, "oom_kills", json_object_new_uint64(s->oom_kills));
        for (unsigned k = 0; k < _DECISION_CLASS_MAX; k++)
                json_object_object_add(counts, decision_class_to_string(k), json_object_new_uint64(s->count[k]));
        json_object_object_add(o, "decisions", counts);
        json_object_object_add(o, "freed", json_object_new_uint64(s->freed));
        json_object *ret = NULL;
        if (s->explained) {
                ret = json_object_new_object();
                json_object_object_add(ret, "since", s->retention ? time_json(s->retention_mono, s->retention_wall,
                                                                              s->utc_offset, s->first_mono)
                                                                  : NULL);
                json_object_object_add(ret, "free_then", s->retention ? json_object_new_uint64(s->retention_free) : NULL);
                json_object_object_add(ret, "free_at_end", json_object_new_uint64(s->end_free));
                json_object_object_add(ret, "total_at_end", json_object_new_uint64(s->end_total));
                json_object_object_add(ret, "peak_free", json_object_new_uint64(s->peak_free));
        }
        /* Only for a trace with memgov explain's figures (the text has the line only then too). */
        if (ret)
                json_object_object_add(o, "allocator_retention", ret);
        return o;
}

void json_escape_untrusted(json_object *o) {
        switch (json_object_get_type(o)) {
        case json_type_object: {
                json_object_object_foreach(o, key, val) {
                        (void) key;
                        json_escape_untrusted(val);
                }
                break;
        }
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        json_escape_untrusted(json_object_array_get_idx(o, i));
                break;
        case json_type_string: {
                const char *v = json_object_get_string(o);
                size_t n = (size_t) json_object_get_string_len(o);
                bool nul = memchr(v, '\0', n) != NULL;
                if (!nul && !untrusted_needs_escape(v))
                        break;
                /* Each part between NULs escaped, each NUL written as \x00. */
                size_t size = 1;
                for (size_t i = 0; i < n; i += strlen(v + i) + 1)
                        size += escape_untrusted_size(v + i) + 4;
                _cleanup_free_ char *copy = calloc(size, 1);
                if (!copy)
                        break;
                size_t j = 0;
                for (size_t i = 0; i < n; i += strlen(v + i) + 1) {
                        escape_untrusted(v + i, copy + j, size - j);
                        j += strlen(copy + j);
                        if (i + strlen(v + i) < n)
                                j += (size_t) snprintf(copy + j, size - j, "\\x00");
                }
                json_object_set_string(o, copy);
                break;
        }
        default:
                break;
        }
}
