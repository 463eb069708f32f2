/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/log.h"
#include "memgov/parse-proc.h"
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
        assert(ret);
        struct __user_cap_data_struct d[2] = {};
        int r = capget_raw(d);
        if (r < 0)
                return r;
        *ret = (uint64_t) d[0].effective | (uint64_t) d[1].effective << 32;
        return 0;
}

int privileges_drop(uint64_t keep, uint64_t *ret_kept) {
        assert(ret_kept);
        struct __user_cap_data_struct d[2] = {};
        int r;

        /* Programs run as root later (hooks) must not get the full set back at execve:
         * SECBIT_NOROOT. Needs CAP_SETPCAP, which a service manager may have taken already
         * (memgov@.service sets the same bits itself). */
        if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                                             SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                  0, 0, 0) < 0 &&
            errno != EPERM)
                log_debug_errno(negative_errno(), "cannot set the secure bits: %m");
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

/* One thread's five sets, from its status file. */
static int thread_caps(int task_fd, const char *tid, uint64_t sets[_CAP_SET_MAX]) {
        char path[64], buf[4096];
        ProcStatus st;

        snprintf(path, sizeof(path), "%s/status", tid);
        ssize_t n = read_small_file_at(task_fd, path, buf, sizeof(buf));
        if (n < 0)
                return (int) n;
        int r = parse_proc_status(buf, (size_t) n, &st);
        if (r < 0)
                return r;
        if (st.cap_seen != (1u << _CAP_SET_MAX) - 1)
                return -EBADMSG;
        memcpy(sets, st.cap, sizeof(st.cap));
        return 0;
}

int privileges_check_threads(char *why, size_t why_size) {
        assert(why);
        uint64_t first[_CAP_SET_MAX], sets[_CAP_SET_MAX];
        char first_tid[16] = "";

        _cleanup_close_ int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                snprintf(why, why_size, "cannot list memgov's threads: %m");
                return negative_errno();
        }
        fd = -1; /* owned by d now */
        int r = 0;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if ((r = thread_caps(dirfd(d), de->d_name, sets)) < 0) {
                        if (r == -ENOENT || r == -ESRCH) { /* a thread that just ended */
                                r = 0;
                                continue;
                        }
                        snprintf(why, why_size, "cannot read the capabilities of thread %s: %s", de->d_name,
                                 strerror(-r));
                        if (r == -EPERM) /* -EPERM says a difference was found */
                                r = -EACCES;
                        break;
                }
                if (!first_tid[0]) {
                        memcpy(first, sets, sizeof(first));
                        snprintf(first_tid, sizeof(first_tid), "%s", de->d_name);
                        continue;
                }
                for (CapSet c = 0; c < _CAP_SET_MAX; c++)
                        if (sets[c] != first[c]) {
                                snprintf(why, why_size, "thread %s has the %s set %016" PRIx64 ", thread %s %016" PRIx64,
                                         de->d_name, cap_set_to_string(c), sets[c], first_tid, first[c]);
                                r = -EPERM;
                                break;
                        }
        }
        closedir(d);
        return r;
}
