/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>

#include "memgov/macro.h"

/* Every file memgov reads or writes is opened relative to one of these roots, opened once:
 * the daemon uses /sys/fs/cgroup and /proc, the tests a fake tree in a temporary directory. */

typedef enum CgroupMode {
        CGROUP_MODE_UNKNOWN,
        CGROUP_MODE_UNIFIED, /* cgroup v2 only */
        CGROUP_MODE_HYBRID,  /* v1 controllers plus the v2 hierarchy at unified/ */
        CGROUP_MODE_LEGACY,  /* v1 only */
        _CGROUP_MODE_MAX,
} CgroupMode;

const char *cgroup_mode_to_string(CgroupMode m);

typedef struct Roots {
        int cgroup_fd;        /* the cgroup v2 hierarchy, -1 when there is none */
        int proc_fd;          /* procfs */
        char cgroup_path[PATH_MAX];
        char proc_path[PATH_MAX];
        CgroupMode mode;
        bool memory_v2;       /* the memory controller is on the v2 hierarchy */
        bool copy;            /* a plain directory read as cgroup v2 (no PSI triggers to arm) */
        char memory_mount[PATH_MAX]; /* where the memory controller is mounted, "" if nowhere */
} Roots;

typedef struct RootsOptions {
        const char *cgroup_root; /* default /sys/fs/cgroup */
        const char *proc_root;   /* default /proc */
        /* A fake tree is a plain directory: take it for a cgroup v2 hierarchy all the same. */
        bool assume_unified;
} RootsOptions;

/* Opens both roots and works out the cgroup mode. A missing cgroup v2 memory controller is not
 * an error: memory_v2 is false and the message says what is missing. */
int roots_open(Roots *r, const RootsOptions *o, char *message, size_t message_size);
void roots_close(Roots *r);
