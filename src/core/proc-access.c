/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <sys/stat.h>

#include "memgov/proc-access.h"

#define CAP_DAC_OVERRIDE_BIT 1 /* linux/capability.h's CAP_DAC_OVERRIDE */

static bool in_group(const ProcStatus *p, gid_t g) {
        if (p->fsgid == g)
                return true;
        for (unsigned i = 0; i < p->n_groups; i++)
                if (p->groups[i] == g)
                        return true;
        return false;
}

bool proc_may_write(const ProcStatus *p, uid_t owner, gid_t group, mode_t mode) {
        assert(p);
        if ((p->cap_seen & (1U << CAP_SET_EFFECTIVE)) && (p->cap[CAP_SET_EFFECTIVE] & (UINT64_C(1) << CAP_DAC_OVERRIDE_BIT)))
                return true;
        if (p->fsuid == owner)
                return mode & S_IWUSR;
        if (in_group(p, group))
                return mode & S_IWGRP;
        /* a group past those kept may be the file's: the group's bits are given the benefit of the doubt */
        if (p->groups_truncated)
                return mode & (S_IWGRP | S_IWOTH);
        return mode & S_IWOTH;
}
