/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <linux/capability.h>
#include <stdio.h>

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
        /* Files of the server's user that are private to it: its descriptors (/proc/PID/fd, 0500),
         * to find its own socket, and a path through a data directory that may be 0700; what its
         * threads are doing (/proc/PID/task/TID/syscall, 0400), to inject the trim. */
        bool sql = (p->step[LEVEL_RESET].enabled && p->reset_method == RESET_SQL) ||
                   (p->step[LEVEL_TRIM].enabled && p->trim_method != TRIM_PTRACE) ||
                   (p->step[LEVEL_RESTART].enabled && p->preflush);
        bool ptrace = p->step[LEVEL_TRIM].enabled && p->trim_method != TRIM_SQL;
        if ((sql && streq(p->sql_socket, "auto") && !p->sql_host[0]) || ptrace)
                caps |= CAP(CAP_DAC_READ_SEARCH);
        if (n->dry_run)
                return caps;
        /* Signals to the server's processes, which belong to another user: a graceful restart
         * outside systemd (SIGTERM through a pidfd) and a reset by signal. Under systemd the
         * restart goes through RestartUnit, which needs no capability. */
        if ((p->step[LEVEL_RESTART].enabled && !n->unit) ||
            (p->step[LEVEL_RESET].enabled && p->reset_method == RESET_SIGNAL))
                caps |= CAP(CAP_KILL);
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
