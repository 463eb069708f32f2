/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "memgov/clock.h"
#include "memgov/parse-proc.h"

/* What a process's allocator says of itself (read inside the process: src/act/allocator-stats.c). */
typedef struct AllocatorStats {
        Allocator allocator;
        const char *source;  /* the function called */
        uint64_t in_use;     /* bytes the program holds (allocated and not freed) */
        uint64_t heap;       /* bytes the allocator has from the system, less what it gave back */
        uint64_t free;       /* of them, free: heap - in_use, allocator metadata aside where known */
        uint64_t releasable; /* of the free, what its release call (the trim) works on */
        /* glibc: all its free chunks (fordblks), resident or not: pages a trim gave back stay
         * free chunks; free is their resident part */
        uint64_t free_listed;
        uint64_t heap_resident; /* glibc: the heaps' resident bytes (smaps) */
        unsigned calls;      /* calls injected */
        usec_t held_max;     /* the longest a thread was stopped */
        usec_t call_total;   /* the calls' time */
} AllocatorStats;
