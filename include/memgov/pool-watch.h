/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memgov/macro.h"
#include "memgov/sample.h"
#include "memgov/sql.h"

/* The buffer pool as the server keeps it between memgov's own steps: its size read on the
 * session kept for the actions (every ACTION_IDLE_EVERY, POOL_WATCH_FILLING while it fills), so
 * that what the server does by itself is seen, said and counted; and its pages in use, which
 * the samples carry to the engine (pool-fill.h). MariaDB 10.11.7+ and 11.x shrink their pool on a memory
 * pressure event of their cgroup (innodb_buffer_pool_size_auto_min under the pool's size); an
 * administrator's SET GLOBAL looks the same from here. memgov's own resizes are told to it
 * (pool_watch_resized) and not counted as the server's. */
typedef struct PoolWatchInfo {
        pid_t pid;
        uint64_t starttime;
        bool known;          /* the pool was read for this process */
        uint64_t found;      /* its size when first read */
        uint64_t size;       /* its size when last read */
        bool have_auto_min;  /* MariaDB's innodb_buffer_pool_size_auto_min exists */
        bool server_shrinks; /* ... and is under the pool's size: the server shrinks it on pressure */
        uint64_t auto_min;
        uint64_t shrunk_by_server; /* the sum of the falls memgov did not make */
        unsigned shrinks_by_server;
        /* Its pages in use and its free pages' bytes, read at fill_at (CLOCK_MONOTONIC). */
        bool fill_known;
        uint64_t in_use, room;
        usec_t fill_at;
} PoolWatchInfo;

/* Reads the pool on conn (the kept session) for the target process; logs what changed. True
 * while it fills (more pages in use than at the last reading, free pages left): its readings
 * are then wanted every POOL_WATCH_FILLING for the engine's ETA (pool-fill.h). */
bool pool_watch(SqlConn *conn, pid_t pid, uint64_t starttime);
#define POOL_WATCH_FILLING (2 * USEC_PER_SEC)

/* memgov resized the pool of that process to size: the next fall is measured from there. */
void pool_watch_resized(pid_t pid, uint64_t starttime, uint64_t size);

void pool_watch_info(PoolWatchInfo *ret);

/* The last reading of the pool's fill of that process into a sample (SAMPLE_HAS_POOL_FILL);
 * nothing for another process or before the first reading. */
void pool_watch_sample(pid_t pid, uint64_t starttime, Sample *s);
