/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/action.h"
#include "memgov/macro.h"
#include "memgov/parse-cgroup.h"

/* Which groups of Sample fields hold data. A plain DBA log gives only a working set; a
 * process without a cgroup v2 memory controller gives only process figures. */
typedef enum SampleHas {
        SAMPLE_HAS_WALL = 1 << 0,    /* wall clock */
        SAMPLE_HAS_CGROUP = 1 << 1,  /* memory.current/high/max and memory.stat */
        SAMPLE_HAS_EVENTS = 1 << 2,  /* memory.events */
        SAMPLE_HAS_PSI = 1 << 3,     /* memory.pressure */
        SAMPLE_HAS_PROCESS = 1 << 4, /* pid, RSS, mappings, threads */
        SAMPLE_HAS_UPTIME = 1 << 5,  /* the server's uptime */
        SAMPLE_HAS_HOST = 1 << 6,    /* host RAM */
        SAMPLE_HAS_WS = 1 << 7,      /* a working-set figure given directly (plain traces) */
        SAMPLE_HAS_CONNECTIONS = 1 << 8, /* the server's socket descriptors (its client connections) */
        SAMPLE_HAS_ACCEPTING = 1 << 9,   /* whether the server accepts clients yet (see accepting) */
        SAMPLE_HAS_SERVER_MEMORY = 1 << 10, /* the server's own memory figures (memgov explain's) */
        SAMPLE_HAS_ALLOCATOR = 1 << 11,     /* its allocator's (memgov explain's) */
        SAMPLE_HAS_POOL_FILL = 1 << 12,     /* its InnoDB buffer pool's pages in use, as last read */
} SampleHas;


/* The sampler counts the server's connections once in this many samples (src/io/sampler.c). */
#define SAMPLE_CONNECTIONS_EVERY 5u

typedef struct Sample {
        usec_t mono; /* monotonic clock: the engine's only notion of "now" */
        usec_t wall; /* realtime clock, for maintenance windows and display */
        int32_t utc_offset; /* seconds east of UTC at wall */
        unsigned has;       /* SampleHas bits */

        /* cgroup v2 */
        uint64_t memory_current;
        uint64_t memory_high; /* SIZE_UNLIMITED = "max" */
        uint64_t memory_max;  /* SIZE_UNLIMITED = "max" */
        uint64_t anon, file, inactive_file, active_file, shmem;
        MemoryEvents events;
        Psi psi;

        /* the server process */
        pid_t pid;
        usec_t uptime;
        uint64_t rss, rss_anon;
        unsigned anon_maps, threads;
        /* The server's socket descriptors: one per client connection, plus its few listening
         * sockets (a connection storm shows as their rise). Counted once in
         * SAMPLE_CONNECTIONS_EVERY samples, the count kept in between. */
        unsigned connections;
        /* 1 once the server process has accepted a client (an SQL session, or an answer that
         * refused one), 0 while a database server listens on nothing yet: it is still starting
         * (InnoDB's recovery, its caches allocated), a rise that ends and that no reset, restart
         * or buffer pool step can help with. Known only where memgov talks SQL to it. */
        unsigned accepting;

        /* memgov explain's measures of the server, as last taken (explain.every), carried from
         * one sample to the next: the parts are split again at every sample from them and its
         * cgroup's figures (explain_input_from_sample). */
        uint64_t server_pool, server_accounted, server_sessions; /* SAMPLE_HAS_SERVER_MEMORY */
        uint64_t allocator_free, allocator_in_use;               /* SAMPLE_HAS_ALLOCATOR */
        /* The buffer pool's pages in use and its free pages (bytes), as read at pool_read (the
         * monotonic clock) on the session kept for the actions, carried from one sample to the
         * next: the engine takes the pool's filling out of the ETA (pool-fill.h). */
        uint64_t pool_in_use, pool_room; /* SAMPLE_HAS_POOL_FILL */
        usec_t pool_read;

        uint64_t host_total; /* MemTotal */
        uint64_t ws;         /* with SAMPLE_HAS_WS */

        unsigned failed; /* bit (1 << ActionKind): that action failed since the previous sample */
        unsigned pending; /* bit (1 << ActionKind): decided, handed to the actuators, not finished yet */
        /* bit (1 << ActionKind): finished without being carried out, through no fault of its own
         * (memgov_trim() answers NULL within 10 s of a trim another account called): not judged */
        unsigned not_done;
        /* bit (1 << ActionKind), with its bit in `failed`: it found nothing to act on (a reset: no
         * session at its threshold), and so changed nothing */
        unsigned found_nothing;
        /* bit (1 << ActionKind), without its bit in `failed`: it acted on all it found, fewer than it
         * was allowed (a reset: every session at its threshold, fewer than its max) */
        unsigned found_fewer;
        /* memory.high and memory.max cannot be written (a read-only cgroup file system, as in a
         * container): throttling and the memory.max raise for a restart are not available. */
        unsigned limits_readonly;
        /* What the actuators measured for the actions they finished since the previous sample:
         * bit (1 << ActionKind) in `reported`, the bytes they gave back in freed[ActionKind]. */
        unsigned reported;
        uint64_t freed[_ACTION_KIND_MAX];
        /* The server's own value an action finished since works from (the registry's
         * baseline_column: the buffer pool's configured size): bit in `based`, the value in
         * baseline[ActionKind]. */
        unsigned based;
        uint64_t baseline[_ACTION_KIND_MAX];
} Sample;

/* Working set: memory.current minus inactive_file (page cache the kernel drops first), else the
 * process RSS, else the figure a plain trace gives. SIZE_UNKNOWN when the sample has none. */
uint64_t sample_working_set(const Sample *s);
