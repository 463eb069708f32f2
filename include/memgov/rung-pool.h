/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The buffer-pool rung's decision: shrink innodb_buffer_pool_size by one step, or grow it back
 * (src/core/rung-pool.c decides it, src/act/pool.c carries it out). */
typedef struct PoolParams {
        bool grow;
        uint64_t configured; /* the size the server was configured with; 0 = not known yet (the size found) */
        uint32_t step;       /* one step: basis points of the configured size */
        uint32_t floor;      /* never below this share (basis points) of the configured size */
        uint64_t grow_max;   /* grow by at most this much (what memgov took); SIZE_UNLIMITED = no bound */
} PoolParams;

/* What the pool rung keeps between ticks (src/core/rung-pool.c). */
typedef struct PoolState {
        unsigned steps;      /* memgov's steps down not grown back yet */
        bool growing;        /* the last pool decision was a step back up */
        uint64_t configured; /* the server process's configured size, as the last step found it; 0: not known */
} PoolState;
