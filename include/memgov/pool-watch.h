/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memgov/sql.h"

/* The buffer pool as the server keeps it between memgov's own steps: its size read on the
 * session kept for the actions (every ACTION_IDLE_EVERY), so that what the server does by
 * itself is seen, said and counted. MariaDB 10.11.7+ and 11.x shrink their pool on a memory
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
} PoolWatchInfo;

/* Reads the pool on conn (the kept session) for the target process; logs what changed. */
void pool_watch(SqlConn *conn, pid_t pid, uint64_t starttime);

/* memgov resized the pool of that process to size: the next fall is measured from there. */
void pool_watch_resized(pid_t pid, uint64_t starttime, uint64_t size);

void pool_watch_info(PoolWatchInfo *ret);
