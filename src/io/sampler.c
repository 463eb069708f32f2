/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/maps-reader.h"
#include "memgov/parse-cgroup.h"
#include "memgov/parse-proc.h"
#include "memgov/sampler.h"

int sampler_init(Sampler *s, const Roots *roots) {
        assert(s);
        *s = (Sampler) { .roots = roots, .cgroup_fd = -1, .maps_every = 60, .conn_every = SAMPLE_CONNECTIONS_EVERY };
        s->clk_tck = sysconf(_SC_CLK_TCK);
        if (s->clk_tck <= 0)
                s->clk_tck = 100;
        s->buf = malloc(SAMPLER_FILE_MAX);
        if (!s->buf) {
                sampler_done(s);
                return -ENOMEM;
        }
        return 0;
}

void sampler_done(Sampler *s) {
        assert(s);
        free(s->buf);
        s->buf = NULL;
}

void sampler_set_target(Sampler *s, int cgroup_fd, pid_t pid, uint64_t starttime) {
        assert(s);
        s->cgroup_fd = cgroup_fd;
        s->pid = pid;
        s->starttime = starttime;
        s->tick = 0;
        s->anon_maps = 0;
        s->have_connections = false;
}

static ssize_t read_at(Sampler *s, int dirfd, const char *path) {
        const char *slash = strrchr(path, '/');
        snprintf(s->reading, sizeof(s->reading), "%s", slash ? slash + 1 : path);
        return read_small_file_at(dirfd, path, s->buf, SAMPLER_FILE_MAX);
}

/* A cgroup that is gone reads as ENOENT (or ENODEV for a removed directory still open). */
static int gone(int r) {
        return r == -ENOENT || r == -ENODEV ? -ENOENT : r;
}

static int read_cgroup(Sampler *s, Sample *ret) {
        MemoryStat st;
        ssize_t n;
        int r;

        if ((n = read_at(s, s->cgroup_fd, "memory.current")) < 0)
                return gone((int) n);
        if ((r = parse_cgroup_value(s->buf, (size_t) n, &ret->memory_current)) < 0)
                return r;
        if ((n = read_at(s, s->cgroup_fd, "memory.high")) < 0)
                return gone((int) n);
        if ((r = parse_cgroup_value(s->buf, (size_t) n, &ret->memory_high)) < 0)
                return r;
        if ((n = read_at(s, s->cgroup_fd, "memory.max")) < 0)
                return gone((int) n);
        if ((r = parse_cgroup_value(s->buf, (size_t) n, &ret->memory_max)) < 0)
                return r;
        if ((n = read_at(s, s->cgroup_fd, "memory.stat")) < 0)
                return gone((int) n);
        if ((r = parse_memory_stat(s->buf, (size_t) n, &st)) < 0)
                return r;
        ret->anon = st.anon;
        ret->file = st.file;
        ret->inactive_file = st.inactive_file;
        ret->active_file = st.active_file;
        ret->shmem = st.shmem;
        ret->has |= SAMPLE_HAS_CGROUP;

        if ((n = read_at(s, s->cgroup_fd, "memory.events")) >= 0 &&
            parse_memory_events(s->buf, (size_t) n, &ret->events) == 0)
                ret->has |= SAMPLE_HAS_EVENTS;
        /* memory.pressure exists only with PSI enabled in the kernel (psi=1). */
        if ((n = read_at(s, s->cgroup_fd, "memory.pressure")) >= 0 && parse_psi(s->buf, (size_t) n, &ret->psi) == 0)
                ret->has |= SAMPLE_HAS_PSI;
        return 0;
}

/* The server's socket descriptors: one per client connection (over its unix socket or TCP),
 * plus its few listening sockets. Read from /proc/PID/fd without SQL, into the sampler's buffer
 * (nothing allocated): a readlink per descriptor, about 5 µs each (11.5 ms for 2155 descriptors,
 * 1 ms for a server with 150 sessions), hence once in conn_every samples, the count kept in
 * between: a storm's rise takes seconds to minutes. A server that runs a thread per connection
 * keeps the threads of ended connections in its cache, so that its thread count is no measure of
 * them; its sockets are. */
static int count_sockets(Sampler *s, unsigned *ret) {
        char path[64], link[16];
        unsigned n = 0;
        int r = 0;

        snprintf(path, sizeof(path), "%d/fd", (int) s->pid);
        int fd = openat(s->roots->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t k = getdents64(fd, s->buf, SAMPLER_FILE_MAX);
                if (k < 0) {
                        r = -errno;
                        break;
                }
                if (k == 0)
                        break;
                for (ssize_t off = 0; off < k;) {
                        const struct dirent64 *de = (const struct dirent64 *) (s->buf + off);
                        off += de->d_reclen;
                        if (de->d_name[0] == '.')
                                continue;
                        ssize_t l = readlinkat(fd, de->d_name, link, sizeof(link));
                        if (l >= 8 && memcmp(link, "socket:[", 8) == 0)
                                n++;
                }
        }
        close(fd);
        if (r == 0)
                *ret = n;
        return r;
}

static int read_process(Sampler *s, usec_t boottime, Sample *ret) {
        char path[64];
        ProcStat pst;
        ProcStatus st;
        ssize_t n;
        int r;

        snprintf(path, sizeof(path), "%d/stat", (int) s->pid);
        if ((n = read_at(s, s->roots->proc_fd, path)) < 0)
                return n == -ENOENT ? -ESRCH : (int) n;
        if ((r = parse_proc_stat(s->buf, (size_t) n, &pst)) < 0)
                return r;
        /* Same pid, another process: the server we knew is gone. */
        if (s->starttime != 0 && pst.starttime != s->starttime)
                return -ESRCH;
        if (pst.state == 'Z' || pst.state == 'X')
                return -ESRCH;

        snprintf(path, sizeof(path), "%d/status", (int) s->pid);
        if ((n = read_at(s, s->roots->proc_fd, path)) < 0)
                return n == -ENOENT ? -ESRCH : (int) n;
        if ((r = parse_proc_status(s->buf, (size_t) n, &st)) < 0)
                return r;

        if (s->tick % s->maps_every == 0) {
                /* Streamed: a server's maps may run to megabytes. */
                ProcMaps m;
                if (maps_read_summary(s->roots->proc_fd, s->pid, &m) == 0)
                        s->anon_maps = m.anon_rw;
        }

        ret->pid = s->pid;
        ret->rss = st.vm_rss;
        ret->rss_anon = st.rss_anon;
        ret->threads = st.threads;
        ret->anon_maps = s->anon_maps;
        ret->has |= SAMPLE_HAS_PROCESS;
        if (s->tick % s->conn_every == 0)
                s->have_connections = count_sockets(s, &s->connections) == 0;
        if (s->have_connections) {
                ret->connections = s->connections;
                ret->has |= SAMPLE_HAS_CONNECTIONS;
        }

        usec_t started = pst.starttime * USEC_PER_SEC / (usec_t) s->clk_tck;
        if (boottime >= started) {
                ret->uptime = boottime - started;
                ret->has |= SAMPLE_HAS_UPTIME;
        }
        return 0;
}

static void read_host(Sampler *s, Sample *ret) {
        MemInfo mi;
        ssize_t n = read_at(s, s->roots->proc_fd, "meminfo");
        if (n >= 0 && parse_meminfo(s->buf, (size_t) n, &mi) == 0) {
                ret->host_total = mi.total;
                ret->has |= SAMPLE_HAS_HOST;
        }
}

int sampler_read(Sampler *s, usec_t mono, usec_t wall, int32_t utc_offset, usec_t boottime, Sample *ret) {
        assert(s);
        assert(ret);
        *ret = (Sample) { .mono = mono, .wall = wall, .utc_offset = utc_offset, .has = SAMPLE_HAS_WALL };

        s->reading[0] = '\0';
        s->cgroup_error = s->cgroup_fd >= 0 ? read_cgroup(s, ret) : 0;
        snprintf(s->cgroup_error_file, sizeof(s->cgroup_error_file), "%s", s->cgroup_error ? s->reading : "");
        s->reading[0] = '\0';
        s->process_error = s->pid > 0 ? read_process(s, boottime, ret) : 0;
        snprintf(s->process_error_file, sizeof(s->process_error_file), "%s", s->process_error ? s->reading : "");
        s->tick++;
        read_host(s, ret);

        if (s->cgroup_error == -ENOENT && !(ret->has & SAMPLE_HAS_PROCESS))
                return -ENOENT;
        if (s->process_error == -ESRCH && !(ret->has & SAMPLE_HAS_CGROUP))
                return -ESRCH;
        return 0;
}
