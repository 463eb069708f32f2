/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/allocator-stats.h"

/* The allocator's own statistics, read inside a running process by the same injection as the
 * trim (the same choice of thread, the same guarantees if memgov dies): glibc's mallinfo2(),
 * gperftools' MallocExtension_GetNumericProperty(), jemalloc's mallctl("stats...") after an
 * "epoch" refresh. What the allocator holds free is then measured, not guessed. */

/* starttime: the process's start time as the caller found it (0 = now). -EOPNOTSUPP with why for
 * an allocator without statistics memgov reads (glibc before 2.33 has no mallinfo2). */
int allocator_stats_read(pid_t pid, uint64_t starttime, AllocatorStats *ret, char *why, size_t why_size);
