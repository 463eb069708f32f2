/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memgov/maps-reader.h"

static int lines_read(int proc_fd, pid_t pid, const char *name, int (*fn)(const char *line, size_t len, void *userdata),
                      void *userdata) {
        assert(fn);
        char path[64];
        size_t have = 0;
        int r = 0;

        snprintf(path, sizeof(path), "%s%d/%s", proc_fd == AT_FDCWD ? "/proc/" : "", (int) pid, name);
        _cleanup_close_ int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        /* On the stack (4 KiB of the threads' 256): the sampler allocates nothing under pressure. */
        char buf[MAPS_LINE_MAX + 1];
        for (;;) {
                if (have == MAPS_LINE_MAX)
                        return -E2BIG; /* no newline in a whole buffer */
                ssize_t k = read(fd, buf + have, MAPS_LINE_MAX - have);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == ESRCH ? -ESRCH : negative_errno();
                }
                if (k == 0)
                        break;
                have += (size_t) k;

                char *p = buf, *end = buf + have, *nl;
                while ((nl = memchr(p, '\n', (size_t) (end - p)))) {
                        if ((r = fn(p, (size_t) (nl - p), userdata)) != 0)
                                return r < 0 ? r : 0;
                        p = nl + 1;
                }
                have = (size_t) (end - p);
                memmove(buf, p, have);
        }
        /* A last line without '\n'. */
        if (have > 0 && (r = fn(buf, have, userdata)) != 0)
                return r < 0 ? r : 0;
        return 0;
}

int maps_read(int proc_fd, pid_t pid, int (*fn)(const char *line, size_t len, void *userdata), void *userdata) {
        return lines_read(proc_fd, pid, "maps", fn, userdata);
}

static int add_smaps_line(const char *line, size_t len, void *userdata) {
        return proc_smaps_add_line(userdata, line, len);
}

int smaps_read_summary(int proc_fd, pid_t pid, ProcMaps *ret) {
        ProcMaps m;
        proc_maps_init(&m);
        int r = lines_read(proc_fd, pid, "smaps", add_smaps_line, &m);
        if (r < 0)
                return r;
        if ((r = proc_maps_finish(&m)) < 0)
                return r;
        *ret = m;
        return 0;
}

static int add_line(const char *line, size_t len, void *userdata) {
        return proc_maps_add_line(userdata, line, len);
}

int maps_read_summary(int proc_fd, pid_t pid, ProcMaps *ret) {
        assert(ret);
        ProcMaps m;
        int r;

        proc_maps_init(&m);
        if ((r = maps_read(proc_fd, pid, add_line, &m)) < 0)
                return r;
        if ((r = proc_maps_finish(&m)) < 0)
                return r;
        *ret = m;
        return 0;
}

typedef struct FindState {
        uint64_t addr, start, end;
        char perms[5];
        bool found;
} FindState;

static int find_line(const char *line, size_t len, void *userdata) {
        FindState *f = userdata;
        uint64_t start, end;
        char perms[5];

        int r = proc_maps_line_range(line, len, &start, &end, perms);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return r;
        if (f->addr < start || f->addr >= end)
                return 0;
        f->start = start;
        f->end = end;
        memcpy(f->perms, perms, sizeof(perms));
        f->found = true;
        return 1;
}

int maps_read_find(int proc_fd, pid_t pid, uint64_t addr, uint64_t *ret_start, uint64_t *ret_end,
                   char ret_perms[static 5]) {
        assert(ret_start);
        assert(ret_end);
        assert(ret_perms);
        FindState f = { .addr = addr };
        int r = maps_read(proc_fd, pid, find_line, &f);
        if (r < 0)
                return r;
        if (!f.found)
                return -ENOENT;
        *ret_start = f.start;
        *ret_end = f.end;
        memcpy(ret_perms, f.perms, sizeof(f.perms));
        return 0;
}
