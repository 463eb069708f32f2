/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "memgov/parse-proc.h"

/* Whether a process may write a file of this owner, group and mode, by the ids and capabilities
 * its /proc/PID/status lists: the kernel's own order (owner, then group, then others; CAP_DAC_OVERRIDE
 * first), without ACLs, security modules or user namespaces, which it cannot see. With more
 * supplementary groups than ProcStatus keeps, the group's bits count as allowed. */
bool proc_may_write(const ProcStatus *p, uid_t owner, gid_t group, mode_t mode);
