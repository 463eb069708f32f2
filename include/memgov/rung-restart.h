/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/* The restart rung's decision: a graceful restart of the server (src/core/rung-restart.c
 * decides it, src/act/restart.c carries it out). */
typedef struct RestartParams {
        bool preflush; /* InnoDB's dirty pages flushed before the stop */
} RestartParams;
