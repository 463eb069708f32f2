/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/actuator.h"
#include "memgov/engine.h"
#include "memgov/target.h"

/* Stable MESSAGE_IDs, one per kind of decision, so that journalctl MESSAGE_ID=... finds them. */
#define MESSAGE_ID_TARGET "4c1b7a6ad9d24b8f9a5a7c3ee0b7d001"
#define MESSAGE_ID_ACTION_RESULT "fa84d666fb7d4c27bc005224bf093c18"
const char *decision_message_id(const Decision *d);

/* A decision's line as logged: its verb, padded, and its reason. */
#define DECISION_LINE_MAX (DECISION_REASON_MAX + 32)

/* Logs one decision once, with its figures as journal fields; fills line with the text as
 * logged ("would trim     working set ...: trim (method auto)"). */
void decision_log(const EngineOutput *out, const Decision *d, bool dry_run, const Target *t, char *line, size_t size);
/* Logs what an actuator did or why it failed, tail (NULL: none) after it. */
void action_result_log(const Decision *d, const ActionResult *r, bool dry_run, const char *tail);
