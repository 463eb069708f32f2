/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/roots.h"

static const char *const mode_names[_CGROUP_MODE_MAX] = {
        [CGROUP_MODE_UNKNOWN] = "unknown",
        [CGROUP_MODE_UNIFIED] = "unified (cgroup v2)",
        [CGROUP_MODE_HYBRID] = "hybrid (cgroup v1 controllers beside the v2 hierarchy)",
        [CGROUP_MODE_LEGACY] = "legacy (cgroup v1)",
};

const char *cgroup_mode_to_string(CgroupMode m) {
        return m >= 0 && m < _CGROUP_MODE_MAX ? mode_names[m] : "unknown";
}

static bool is_fs(int dirfd, const char *path, long magic) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        struct statfs sfs;
        return fd >= 0 && fstatfs(fd, &sfs) == 0 && (long) sfs.f_type == magic;
}

/* Where libcgroup finds the memory controller mounted: the v2 hierarchy or a v1 one. */
static void memory_mount_point(char *buf, size_t size) {
        char *mp = NULL;

        buf[0] = '\0';
        if (cgroup_init() != 0)
                return;
        if (cgroup_get_subsys_mount_point("memory", &mp) == 0 && mp) {
                snprintf(buf, size, "%s", mp);
                free(mp);
        }
}

static bool controllers_list_memory(int cgroup_fd) {
        char buf[512];
        if (read_small_file_at(cgroup_fd, "cgroup.controllers", buf, sizeof(buf)) < 0)
                return false;
        for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
                if (streq(tok, "memory"))
                        return true;
        return false;
}

int roots_open(Roots *r, const RootsOptions *o, char *message, size_t message_size) {
        assert(r);
        assert(message);
        const char *cg = o && o->cgroup_root ? o->cgroup_root : "/sys/fs/cgroup";
        const char *proc = o && o->proc_root ? o->proc_root : "/proc";
        _cleanup_close_ int top = -1;

        *r = (Roots) { .cgroup_fd = -1, .proc_fd = -1 };
        message[0] = '\0';
        snprintf(r->proc_path, sizeof(r->proc_path), "%s", proc);
        r->proc_fd = open(proc, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        if (r->proc_fd < 0) {
                int e = negative_errno();
                snprintf(message, message_size, "cannot open %s: %s", proc, strerror(-e));
                return e;
        }

        top = open(cg, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        if (top < 0) {
                snprintf(message, message_size, "no cgroup file system at %s (%m): watching the process only",
                         cg);
                r->mode = CGROUP_MODE_UNKNOWN;
                return 0;
        }

        /* A root given by hand that is no cgroup file system at all is a copy of one (a test
         * tree, a captured tree): read it as cgroup v2. */
        bool copy = o && o->cgroup_root && !is_fs(top, ".", CGROUP2_SUPER_MAGIC) && !is_fs(top, ".", CGROUP_SUPER_MAGIC) &&
                    !is_fs(top, "unified", CGROUP2_SUPER_MAGIC) && !is_fs(top, "memory", CGROUP_SUPER_MAGIC);
        if ((o && o->assume_unified) || copy || is_fs(top, ".", CGROUP2_SUPER_MAGIC)) {
                r->mode = CGROUP_MODE_UNIFIED;
                snprintf(r->cgroup_path, sizeof(r->cgroup_path), "%s", cg);
                r->cgroup_fd = TAKE_FD(top);
        } else if (is_fs(top, "unified", CGROUP2_SUPER_MAGIC)) {
                r->mode = CGROUP_MODE_HYBRID;
                snprintf(r->cgroup_path, sizeof(r->cgroup_path), "%s/unified", cg);
                r->cgroup_fd = openat(top, "unified", O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        } else
                r->mode = CGROUP_MODE_LEGACY;

        r->memory_v2 = r->cgroup_fd >= 0 && controllers_list_memory(r->cgroup_fd);
        r->copy = (o && o->assume_unified) || copy;
        if (r->copy)
                snprintf(r->memory_mount, sizeof(r->memory_mount), "%s", cg);
        else
                memory_mount_point(r->memory_mount, sizeof(r->memory_mount));

        if (!r->memory_v2)
                snprintf(message, message_size,
                         "cgroup setup is %s and the memory controller is %s%s%s: no memory.current, "
                         "memory.high, memory.events or memory PSI to use; watching the server process "
                         "(RSS) instead, with trim, connection reset and restart still available",
                         cgroup_mode_to_string(r->mode),
                         r->memory_mount[0] ? "on cgroup v1 at " : "not mounted",
                         r->memory_mount, r->memory_mount[0] ? "" : "");
        return 0;
}

void roots_close(Roots *r) {
        assert(r);
        if (r->cgroup_fd >= 0)
                close(r->cgroup_fd);
        if (r->proc_fd >= 0)
                close(r->proc_fd);
        r->cgroup_fd = r->proc_fd = -1;
}
