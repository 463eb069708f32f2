/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "memgov/sample.h"

static const char *const action_names[_ACTION_KIND_MAX] = {
        [ACTION_TRIM] = "trim",
        [ACTION_SET_HIGH] = "memory.high",
        [ACTION_SET_MAX] = "memory.max",
        [ACTION_RESET] = "reset",
        [ACTION_RESTART] = "restart",
};

const char *action_kind_to_string(ActionKind k) {
        return k >= 0 && k < _ACTION_KIND_MAX ? action_names[k] : "invalid";
}

uint64_t sample_working_set(const Sample *s) {
        if (s->has & SAMPLE_HAS_CGROUP)
                return s->memory_current - MIN(s->inactive_file, s->memory_current);
        if (s->has & SAMPLE_HAS_PROCESS)
                return s->rss;
        if (s->has & SAMPLE_HAS_WS)
                return s->ws;
        return SIZE_UNKNOWN;
}
