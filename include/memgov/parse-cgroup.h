/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/macro.h"

/* Pure parsers for cgroup v2 memory controller files. They take the file's bytes and return
 * -EBADMSG for malformed input, -ERANGE for numbers that do not fit, -ENODATA when a field we
 * need is missing. Unknown keys are ignored: the kernel adds new ones in the middle. */

typedef struct MemoryStat {
        uint64_t anon;
        uint64_t file;
        uint64_t kernel; /* since 5.18; 0 when absent */
        uint64_t shmem;
        uint64_t file_mapped;
        uint64_t file_dirty;
        uint64_t inactive_anon;
        uint64_t active_anon;
        uint64_t inactive_file;
        uint64_t active_file;
        uint64_t unevictable;
        uint64_t slab;
        uint64_t sock;
        uint64_t kernel_stack;
        uint64_t pagetables;
} MemoryStat;

int parse_memory_stat(const char *buf, size_t len, MemoryStat *ret);

typedef struct MemoryEvents {
        uint64_t low;
        uint64_t high;
        uint64_t max;
        uint64_t oom;
        uint64_t oom_kill;
        uint64_t oom_group_kill; /* since 5.17; 0 when absent */
} MemoryEvents;

int parse_memory_events(const char *buf, size_t len, MemoryEvents *ret);

typedef struct PsiLine {
        uint32_t avg10, avg60, avg300; /* hundredths of a percent: 12.34 % -> 1234 */
        uint64_t total;                /* cumulative stall time, microseconds */
} PsiLine;

typedef struct Psi {
        PsiLine some, full;
        bool has_full; /* cpu.pressure before 5.13 has no "full" line */
} Psi;

int parse_psi(const char *buf, size_t len, Psi *ret);

/* A single value file: memory.current, memory.high, memory.max... "max" -> SIZE_UNLIMITED. */
int parse_cgroup_value(const char *buf, size_t len, uint64_t *ret);

/* Resolves a cgroup path as /proc/PID/cgroup shows it relative to the reader's cgroup
 * namespace root ("/../db" seen from "/kubepods/pod1/sidecar") into an absolute path in the
 * hierarchy: "/kubepods/pod1/db". -EINVAL when ".." climbs above the hierarchy root. */
int cgroup_path_resolve(const char *ns_root, const char *path, char *buf, size_t size);
