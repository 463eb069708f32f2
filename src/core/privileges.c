/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <linux/capability.h>
#include <stdio.h>

#include "memgov/action.h"
#include "memgov/privileges.h"
#include "memgov/strutil.h"

#define CAP(c) (UINT64_C(1) << (c))

uint64_t privileges_needed(const Policy *p, const PrivilegeNeeds *n) {
        /* The server runs as another user: reading its /proc files, reaching its socket through
         * /proc/PID/root, and injecting the trim all need ptrace access to it. */
        uint64_t caps = CAP(CAP_SYS_PTRACE);

        /* A PSI trigger opened without it must have a window of a multiple of 2 s and is only
         * checked every 2 s (kernels from 6.5): the trigger would lose its point. */
        if (n->psi)
                caps |= CAP(CAP_SYS_RESOURCE);
        /* mlockall(MCL_FUTURE) keeps locking new mappings past RLIMIT_MEMLOCK only with it. */
        if (n->locked)
                caps |= CAP(CAP_IPC_LOCK);
        /* What each action the policy lets happen needs (the registry, action.c): files of the
         * server's user that are private to it, signals to its processes. */
        for (ActionKind a = 0; a < _ACTION_KIND_MAX; a++)
                if (action_enabled(p, a))
                        caps |= action_info(a)->capabilities(p, n);
        return caps;
}

void privileges_to_string(uint64_t caps, char *buf, size_t size) {
        static const struct {
                int cap;
                const char *name;
        } names[] = {
                { CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
                { CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE" },
                { CAP_IPC_LOCK, "CAP_IPC_LOCK" },
                { CAP_KILL, "CAP_KILL" },
                { CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH" },
        };
        StrBuf b;
        strbuf_init(&b, buf, size);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (caps & CAP(names[i].cap)) {
                        strbuf_printf(&b, "%s%s", b.len ? " " : "", names[i].name);
                        caps &= ~CAP(names[i].cap);
                }
        for (int c = 0; c < 64; c++)
                if (caps & CAP(c))
                        strbuf_printf(&b, "%scap%d", b.len ? " " : "", c);
        if (b.len == 0)
                strbuf_printf(&b, "none");
}
