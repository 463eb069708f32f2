/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/* Keeps the capabilities in keep (bit n = capability n) that the process has, drops every
 * other from the effective, permitted, inheritable, ambient and (when allowed) bounding sets,
 * and makes programs it runs later not regain them as root. *ret_kept: what it still has. */
int privileges_drop(uint64_t keep, uint64_t *ret_kept);
int privileges_effective(uint64_t *ret);
/* Capabilities are a thread's own: capset and the bounding set act on the calling thread only.
 * 0 when every thread of the process has the same five sets; -EPERM with why otherwise. */
int privileges_check_threads(char *why, size_t why_size);
