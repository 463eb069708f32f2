/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>

#include "memgov/engine.h"
#include "memgov/format.h"

/* Machine-readable forms of what format.h prints for people: replay --json, status --json. */

json_object *time_json(usec_t mono, usec_t wall, int32_t utc_offset, usec_t start_mono);
/* A size, or the string "max" for no limit, as memory.high and memory.max say it. */
json_object *size_or_max_json(uint64_t v);
/* What the engine made of a sample: working_set, budget, share_bp, slope_bytes_per_hour, eta_s. */
void engine_output_add_json(json_object *o, const EngineOutput *out);
json_object *decision_to_json(const EngineOutput *out, const Decision *d, usec_t start_mono);
/* An action decision's parameters (its value where it sets a limit, then the registry row's
 * params()) added to o; nothing for other decisions. */
void decision_params_add_json(json_object *o, const Decision *d);
json_object *summary_to_json(const ReplaySummary *s);

/* Every string of o, and of what it holds, with escape_untrusted() applied (a NUL inside one
 * written as \x00): text from the server's side (its process name, a session's host, the
 * server's errors, a path in its root) printed as JSON or from JSON, never a control that acts. */
void json_escape_untrusted(json_object *o);
