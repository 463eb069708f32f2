/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "memgov/allocator-stats.h"
#include "memgov/parse-cgroup.h"
#include "memgov/sample.h"
#include "memgov/sessions.h"

/* memgov explain (pure): where a server's memory is, in parts that add up, and what would stop
 * it growing for good. The shell measures (src/act/explain-gather.c); this splits and judges. */

#define EXPLAIN_TOP_SESSIONS 5

typedef enum ServerFlavor {
        SERVER_NONE, /* not a database server memgov talked to */
        SERVER_MARIADB,
        SERVER_MYSQL,
        _SERVER_FLAVOR_MAX,
} ServerFlavor;

/* Whether the server can arm a PSI trigger on its cgroup's memory.pressure, as MariaDB's pressure
 * listener does once, at startup: by writing to the file, as the server sees it. */
typedef enum PressureAccess {
        PRESSURE_ACCESS_UNKNOWN,   /* not measured */
        PRESSURE_ACCESS_WRITABLE,
        PRESSURE_ACCESS_NO_FILE,   /* none where the server looks (no PSI, no cgroup v2 mounted there) */
        PRESSURE_ACCESS_READ_ONLY, /* its cgroup file system is mounted read-only (a unit's
                                    * ProtectControlGroups=, a container runtime's default) */
        PRESSURE_ACCESS_DENIED,    /* its ids and capabilities do not let it write the file */
        _PRESSURE_ACCESS_MAX,
} PressureAccess;

const char *pressure_access_to_string(PressureAccess a); /* "read-only" */

/* What was measured. A figure is used only with its has_ flag. */
typedef struct ExplainInput {
        /* the cgroup v2 (memory.current, memory.max, memory.stat) */
        bool has_cgroup;
        uint64_t current, limit; /* limit: SIZE_UNLIMITED when "max" */
        MemoryStat stat;
        /* the server process (/proc/PID/status and maps) */
        bool has_process;
        uint64_t rss_anon, rss_file, rss_shmem;
        unsigned anon_maps, arena_heaps, cpus;
        uint64_t host_ram;
        /* the server over SQL */
        ServerFlavor flavor;
        char version[64];
        bool has_pool;
        uint64_t pool;       /* the buffer pool's pages in use (a free page was never touched) */
        uint64_t pool_size;  /* its configured size (innodb_buffer_pool_size); 0 = not known */
        uint64_t pool_unit;  /* what it is resized by (innodb_buffer_pool_chunk_size), 0 = 1 MiB */
        bool has_accounted;
        uint64_t accounted;  /* memory the server counts (Memory_used; performance_schema), pool aside */
        const char *accounted_source;
        bool accounted_partial; /* some instruments off: the figure is short */
        bool has_sessions;
        uint64_t sessions_total;
        unsigned n_sessions;
        Session top[EXPLAIN_TOP_SESSIONS]; /* the largest, largest first */
        unsigned n_top;
        uint64_t sessions_median;
        bool has_connections;
        uint64_t max_connections, per_connection, connected; /* per_connection: its buffers, at most */
        bool has_auto_min;   /* MariaDB's pressure listener (10.11.12, 11.4.6, 11.8.2 and later) */
        uint64_t auto_min;   /* innodb_buffer_pool_size_auto_min */
        PressureAccess pressure_access;   /* what stops it first */
        bool pressure_ids_deny;           /* and the server's ids do not let it write the file (file found) */
        uid_t pressure_owner, server_uid; /* the file's owner, the server's file-system uid */
        unsigned pressure_mode;           /* the file's permission bits */
        char pressure_path[256];          /* the file, as memgov reaches it ("" when not known) */
        bool has_limits;     /* the server's own session memory limit */
        uint64_t session_limit; /* max_session_mem_used, connection_memory_limit (if tracked) */
        /* the allocator (an injected call) */
        bool has_allocator;
        AllocatorStats allocator;
} ExplainInput;

/* The parts, in the order they are shown. Each has its measure in Explanation.parts. */
typedef enum ExplainPart {
        PART_PAGE_CACHE,      /* active and inactive file pages (cgroup), or files mapped (process) */
        PART_SHMEM,           /* tmpfs and shared memory */
        PART_KERNEL,          /* slab, sockets, stacks, page tables: memory.current - anon - file */
        PART_OTHER_PROCESSES, /* anonymous memory of the cgroup's other processes */
        PART_POOL,            /* the InnoDB buffer pool */
        PART_SERVER_OTHER,    /* what else the server counts (caches, dictionary, its own buffers) */
        PART_SESSIONS,        /* what the sessions hold */
        PART_IN_USE_UNCOUNTED, /* in use by the allocator's count, not by the server's: memory outside its
                                * instruments (a library, a plugin, what they do not track) */
        PART_ALLOCATOR_FREE,  /* free memory the allocator holds */
        PART_UNACCOUNTED,     /* the rest of the server's anonymous memory */
        _PART_MAX,
} ExplainPart;

const char *explain_part_to_string(ExplainPart p);   /* "page_cache" */
const char *explain_part_label(ExplainPart p);       /* "page cache" */

typedef enum FindingKind {
        FINDING_ALLOCATOR_RETENTION,
        FINDING_SESSION_GROWTH,
        FINDING_POOL_TOO_LARGE,
        FINDING_STORM_RISK,
        FINDING_PRESSURE_LISTENER_IDLE,
        FINDING_UNCOUNTED_IN_USE,
        _FINDING_KIND_MAX,
} FindingKind;

const char *finding_kind_to_string(FindingKind k);

#define FINDING_TEXT_MAX 768

typedef struct Finding {
        FindingKind kind;
        char evidence[FINDING_TEXT_MAX]; /* the measurements it rests on */
        char fix[FINDING_TEXT_MAX];      /* what to do, in one or more lines */
        uint64_t gives_back;             /* bytes it would give back; 0 = none or not known */
        bool gives_back_known;
} Finding;

typedef struct Explanation {
        uint64_t total;          /* memory.current, else the server's RSS */
        const char *total_source; /* "memory.current", "RSS" */
        bool has[_PART_MAX];
        uint64_t parts[_PART_MAX];
        /* measured beyond what is resident (a pool not all touched, a glibc free figure that counts
         * pages given back): left out of the parts, said here */
        uint64_t overcounted;
        /* what the server's own count (Memory_used, performance_schema) says beyond what its
         * allocator has in use, its sessions aside: its bookkeeping, not memory */
        uint64_t server_count_excess;
        Finding findings[_FINDING_KIND_MAX];
        unsigned n_findings;
} Explanation;

void explain(const ExplainInput *in, const char *unit, Explanation *ret);

/* The cgroup's and the process's figures of in replaced by a newer sample's (the daemon measures
 * the server's own parts every explain.every, the cgroup every sample): the parts then add up
 * to the sample's memory.current. Without the cgroup in the sample, the process's resident set
 * less its anonymous memory counts as page cache (a sample does not tell shared memory apart). */
void explain_input_from_sample(ExplainInput *in, const Sample *s);

/* A trace's sample alone (replay, plot): its figures split as explain() does; false when the
 * sample has none of the server's or the allocator's (a trace the daemon did not record). */
bool explain_sample(const Sample *s, Explanation *ret);
