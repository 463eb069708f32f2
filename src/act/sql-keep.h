/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"
#include "memgov/sql-keep.h"

/* ActuatorOps hooks of the real table: the action thread keeps its SQL session. */
void sql_keep_thread_begin(void *userdata);
void sql_keep_thread_end(void *userdata);
usec_t sql_keep_idle(void *userdata, const ActionContext *c);
