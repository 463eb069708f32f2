/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/policy.h"

/* Which capabilities the governor keeps once it is set up: what its policy's actions need, and
 * nothing else. Bit n is capability n (linux/capability.h). */

typedef struct PrivilegeNeeds {
        bool dry_run;
        bool unit;         /* the target is a systemd unit: restarts go through systemd */
        bool psi;          /* PSI triggers will be armed (a real cgroup v2 hierarchy) */
        bool locked;       /* memgov's memory is locked (mlockall succeeded) */
} PrivilegeNeeds;

uint64_t privileges_needed(const Policy *p, const PrivilegeNeeds *n);

/* "CAP_SYS_PTRACE CAP_KILL", or "none". */
void privileges_to_string(uint64_t caps, char *buf, size_t size);
