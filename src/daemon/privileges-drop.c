/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memgov/log.h"
#include "privileges-drop.h"

static int capget_raw(struct __user_cap_data_struct data[2]) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        return syscall(SYS_capget, &h, data) < 0 ? negative_errno() : 0;
}

static int capset_raw(struct __user_cap_data_struct data[2]) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        return syscall(SYS_capset, &h, data) < 0 ? negative_errno() : 0;
}

int privileges_effective(uint64_t *ret) {
        struct __user_cap_data_struct d[2] = {};
        int r = capget_raw(d);
        if (r < 0)
                return r;
        *ret = (uint64_t) d[0].effective | (uint64_t) d[1].effective << 32;
        return 0;
}

int privileges_drop(uint64_t keep, uint64_t *ret_kept) {
        struct __user_cap_data_struct d[2] = {};
        int r;

        /* Programs run as root later (hooks) must not get the full set back at execve:
         * SECBIT_NOROOT. Needs CAP_SETPCAP, which a service manager may have taken already
         * (memgov@.service sets the same bits itself). */
        if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                                             SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                  0, 0, 0) < 0 &&
            errno != EPERM)
                log_full_errno(LOG_DEBUG, negative_errno(), "cannot set the secure bits: %m");
        (void) prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);

        /* The bounding set, while CAP_SETPCAP is still there (EPERM without it: the service
         * manager's bounding set stays, and is already small). */
        for (int c = 0; c < 64; c++) {
                if (keep & (UINT64_C(1) << c))
                        continue;
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
                        if (errno == EINVAL) /* past the kernel's last capability */
                                break;
                        if (errno == EPERM)
                                break;
                }
        }

        if ((r = capget_raw(d)) < 0)
                return log_error_errno(r, "cannot read the capabilities: %m");
        uint64_t permitted = (uint64_t) d[0].permitted | (uint64_t) d[1].permitted << 32;
        uint64_t kept = permitted & keep;
        for (int i = 0; i < 2; i++) {
                d[i].permitted = d[i].effective = (uint32_t) (kept >> (32 * i));
                d[i].inheritable = 0;
        }
        if ((r = capset_raw(d)) < 0)
                return log_error_errno(r, "cannot drop capabilities: %m");
        *ret_kept = kept;
        return 0;
}
