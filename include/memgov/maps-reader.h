/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/parse-proc.h"

/* /proc/PID/maps streamed through a fixed buffer, one line at a time: what memgov allocates does
 * not grow with the target's mappings (a server may have hundreds of thousands, and memgov's
 * own memory limit is small). A line longer than MAPS_LINE_MAX is refused with -E2BIG. */

#define MAPS_LINE_MAX (PATH_MAX + 256)

/* Calls fn with each line of PID/maps under the proc root proc_fd (AT_FDCWD: the host's /proc),
 * without its '\n'; a negative return stops with that error, a positive one stops with success
 * (found). -ESRCH when the process is gone. */
int maps_read(int proc_fd, pid_t pid, int (*fn)(const char *line, size_t len, void *userdata), void *userdata);

/* parse_proc_maps() over the stream. */
int maps_read_summary(int proc_fd, pid_t pid, ProcMaps *ret);

/* The same over /proc/PID/smaps, with the heaps' resident bytes (ProcMaps.heap_rss): slower
 * (the kernel walks every page table), for memgov explain. */
int smaps_read_summary(int proc_fd, pid_t pid, ProcMaps *ret);

/* proc_maps_find() over the stream: -ENOENT when no mapping holds addr. */
int maps_read_find(int proc_fd, pid_t pid, uint64_t addr, uint64_t *ret_start, uint64_t *ret_end,
                   char ret_perms[static 5]);
