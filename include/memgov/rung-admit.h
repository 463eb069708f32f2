/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/* The admission rung's decision: lower max_connections to the connected clients plus the
 * headroom (or those that fit), never below the floor; or put back the value memgov found
 * (restore). src/core/rung-admit.c decides it, src/act/admit.c carries it out. */
typedef struct AdmitParams {
        bool restore;
        unsigned headroom, floor;
        unsigned fit;         /* connections more that fit (admit.fit), when more than the headroom */
        unsigned connections; /* the server's connection count in the sample (socket descriptors) */
        bool carried;         /* connections is the count before the storm, on the process before a
                               * restart (admission carried to the new process) */
} AdmitParams;
