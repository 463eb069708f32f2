/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <json-c/json.h>
#include <sys/types.h>

#include "memgov/explain.h"

/* An explanation as memgov explain shows it: text on standard output, or JSON (also memgov
 * status's "memory"). cgroup NULL: none. notes: what was not measured, one line each. Text from
 * the server's side is escaped in the text; the JSON is the caller's to escape
 * (json_escape_untrusted). */
json_object *explanation_json(pid_t pid, const char *comm, const char *cgroup, const ExplainInput *in,
                              const Explanation *e, const char *notes);
void explanation_print(pid_t pid, const char *comm, const char *cgroup, const ExplainInput *in, const Explanation *e,
                       const char *notes);
