/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>
#include <systemd/sd-bus.h>

#include "memgov/macro.h"

/* The few systemd D-Bus calls memgov makes, so that systemd stays the owner of what it manages. */

typedef struct UnitInfo {
        char object_path[256];
        char active_state[32]; /* active, activating, deactivating, inactive, failed */
        char control_group[PATH_MAX]; /* "" when the unit has no cgroup (not running) */
        pid_t main_pid;
        uint64_t memory_high, memory_max; /* UINT64_MAX = infinity */
} UnitInfo;

/* Looks the unit up (loading it if needed). Errors come back as negative errno with the D-Bus
 * error's text in why. */
int unit_get_info(sd_bus *bus, const char *unit, UnitInfo *ret, char *why, size_t why_size);
