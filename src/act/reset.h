/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"

/* Connection reset (actuator_fn): KILL CONNECTION the chosen sessions then trim (sql), a
 * command (exec) or a signal to a pooler (signal), as the policy says. */
int reset_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
