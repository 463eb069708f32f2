/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include "memgov/clock.h"

/* The restart rung's decision: a graceful restart of the server (src/core/rung-restart.c
 * decides it, src/act/restart.c carries it out). */
typedef struct RestartParams {
        bool preflush; /* InnoDB's dirty pages flushed before the stop */
} RestartParams;

/* How many restarts are remembered (restart.max-per-day). */
#define RESTART_HISTORY 128

/* What the restart rung keeps between ticks (src/core/rung-restart.c). */
typedef struct RestartState {
        bool pending;
        usec_t at;                     /* monotonic */
        usec_t clock[RESTART_HISTORY]; /* wall clock when known, else monotonic */
        unsigned n;
} RestartState;
