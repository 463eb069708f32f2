/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>

#include "memgov/engine.h"
#include "memgov/format.h"

/* Machine-readable forms of what format.h prints for people: replay --json, status --json. */

json_object *time_json(usec_t mono, usec_t wall, int32_t utc_offset, usec_t start_mono);
json_object *decision_to_json(const EngineOutput *out, const Decision *d, usec_t start_mono);
json_object *summary_to_json(const ReplaySummary *s);
