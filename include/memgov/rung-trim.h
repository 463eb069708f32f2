/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/policy.h"

/* The trim rung's decision: give the allocator's free memory back to the kernel, inside the
 * running server (src/core/rung-trim.c decides it, src/act/trim.c carries it out). */
typedef struct TrimParams {
        TrimMethod method;
} TrimParams;
