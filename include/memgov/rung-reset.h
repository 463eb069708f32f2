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
        bool newest_first;   /* the last to connect first, idle or not, whatever they hold beyond
                              * min_memory: a storm's newcomers (admission judged one) */
        bool growing_only;   /* an emergency on its ETA: a session that holds what it held at the
                              * last listing is passed over, unless it holds still_enough */
        uint64_t still_enough; /* the growth over restart.emergency-eta at the trend's rate */
        unsigned newcomers;  /* with newest_first: the newest this many clients came with the storm;
                              * one still in the statement it ran at the last listing goes whether
                              * or not it still grows (see session_not_growing()) */
} ResetParams;

/* An emergency reset that ends what grows (growing_only) with no listing of the server process
 * before its own lists the sessions again this long after it: from one look, the first ended a
 * read-write client's session of 32.6M that held as much, as the growth went on elsewhere
 * (MySQL 9.7, the outcome benchmark's growth). */
#define RESET_SECOND_LOOK (2 * USEC_PER_SEC)

/* What the reset rung keeps between ticks (src/core/rung-reset.c): the emergency reset's. */
typedef struct ResetState {
        bool emergency_done;           /* this emergency had its reset (cleared when it is over) */
        bool emergency_any;            /* an emergency reset was ever decided... */
        usec_t emergency_last;         /* ...last at this time (none again within reset.cooldown) */
        usec_t emergency_backoff_until; /* the last emergency reset failed: none before this */
        bool last_emergency;           /* the last reset decided is an emergency reset */
        bool emergency_found_nothing;  /* the last emergency reset found no session, or... */
        bool emergency_found_fewer;    /* ...ended all it found, fewer than its max: again once... */
        uint64_t emergency_low;        /* ...the working set is reset.emergency-min-memory, doubled... */
        unsigned emergency_none;       /* ...for each one in a row that found none (counted from the
                                        * last due by the ordinary rules), above its lowest since */
        bool last_regrowth;            /* the last reset decided is such a retry on growth */
} ResetState;
