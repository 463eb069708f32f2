/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"

/* memory.high / memory.max: SetUnitProperties(runtime) for a unit, a cgroupfs write otherwise;
 * read back and verified. */
int limits_set(const ActionContext *c, const char *file, uint64_t value, ActionResult *ret);
/* The actuator of ACTION_SET_HIGH and ACTION_SET_MAX (actuator_fn): the decision's value. */
int limits_action(void *userdata, const ActionContext *c, const Decision *d, ActionResult *ret);
