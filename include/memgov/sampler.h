/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/roots.h"
#include "memgov/sample.h"

/* Reads one Sample of a target: its cgroup's memory files and its server process. Buffers are
 * allocated once, at sampler_init: taking a sample under memory pressure allocates nothing. */

#define SAMPLER_FILE_MAX (64U << 10)

typedef struct Sampler {
        const Roots *roots;
        int cgroup_fd;       /* the target's cgroup directory, -1 = none */
        pid_t pid;           /* the server's main process, 0 = none */
        uint64_t starttime;  /* of pid, in clock ticks after boot */
        long clk_tck;
        unsigned maps_every; /* read /proc/PID/maps once in this many samples (it can be large) */
        unsigned conn_every; /* count the server's sockets once in this many samples */
        unsigned tick;
        unsigned anon_maps;
        bool have_connections;
        unsigned connections;
        char *buf;  /* SAMPLER_FILE_MAX */
        /* What went wrong last, and in which file ("memory.stat", "stat"), for a caller that logs
         * each kind of problem once. */
        int cgroup_error, process_error;
        char cgroup_error_file[32], process_error_file[32];
        char reading[32]; /* the file being read or parsed */
} Sampler;

int sampler_init(Sampler *s, const Roots *roots);
void sampler_done(Sampler *s);
/* Points the sampler at a (new) target. The sampler does not own cgroup_fd. */
void sampler_set_target(Sampler *s, int cgroup_fd, pid_t pid, uint64_t starttime);

/* Clocks are passed in: mono becomes the sample's time, boottime serves the server's uptime.
 * Returns 0 with what could be read (ret->has says which parts), -ENOENT when the cgroup is
 * gone, -ESRCH when the process is gone (or its pid was reused), with nothing else readable. */
int sampler_read(Sampler *s, usec_t mono, usec_t wall, int32_t utc_offset, usec_t boottime, Sample *ret);
