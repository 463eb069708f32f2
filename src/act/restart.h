/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"

/* Graceful restart (actuator_fn): optional pre-flush and hooks; RestartUnit through systemd,
 * followed to its end, or SIGTERM through a pidfd. Never SIGKILL. */
int restart_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
