/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "memgov/clock.h"

/* The reset rung's decision: end the sessions that hold the most memory (src/core/rung-reset.c
 * decides it, src/act/reset.c carries it out). */
typedef struct ResetParams {
        unsigned max;        /* at most this many sessions */
        uint64_t min_memory; /* each holding at least this much */
        usec_t min_idle;     /* idle ones first: idle at least this long */
        bool in_trx;         /* sessions in a transaction too */
} ResetParams;
