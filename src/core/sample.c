/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "memgov/sample.h"

uint64_t sample_working_set(const Sample *s) {
        if (s->has & SAMPLE_HAS_CGROUP)
                return s->memory_current - MIN(s->inactive_file, s->memory_current);
        if (s->has & SAMPLE_HAS_PROCESS)
                return s->rss;
        if (s->has & SAMPLE_HAS_WS)
                return s->ws;
        return SIZE_UNKNOWN;
}
