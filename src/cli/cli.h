/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>

#include "memgov/engine.h"
#include "memgov/format.h"
#include "memgov/policy.h"

/* Exit codes of every subcommand. */
#define EXIT_BAD_INPUT 1 /* a file or value was wrong: the message says what */
#define EXIT_USAGE 2     /* the command line itself was wrong */

int cmd_check(int argc, char **argv);
int cmd_replay(int argc, char **argv);

/* Loads the embedded default, then FILE over it when given; prints problems on stderr.
 * Returns 0, or an exit code. origin describes where the policy came from. */
int cli_load_policy(const char *file, Policy *ret, char *origin, size_t origin_size);

/* Machine-readable forms of what format.h prints for people. */
json_object *decision_to_json(const EngineOutput *out, const Decision *d, usec_t start_mono);
json_object *summary_to_json(const ReplaySummary *s);

void usage_hint(const char *verb);
