/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/* The throttle rung decides memory.high (its value is in the decision itself: value, old_value);
 * src/core/limits.c writes it, src/act/cgroup-limits.c carries it out. What it keeps between
 * ticks (src/core/rung-throttle.c): */
typedef struct ThrottleState {
        bool at_floor;  /* at throttle.floor in this tick, the working set rising */
        bool psi_guard; /* backed off from a stall (throttle.full-guard, some-guard), until calm or a new process */
        bool yields;    /* memory.high makes way in this emergency */
        bool gone;      /* memory.high is out of the way (max) for this emergency */
} ThrottleState;
