/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>
#include <sys/types.h>

#include "memgov/macro.h"

/* Pure parsers for /proc/PID files. Same error conventions as parse-cgroup.h. */

/* A thread's five capability sets, as /proc/PID/status lists them (CapInh ... CapAmb). */
typedef enum CapSet {
        CAP_SET_INHERITABLE,
        CAP_SET_PERMITTED,
        CAP_SET_EFFECTIVE,
        CAP_SET_BOUNDING,
        CAP_SET_AMBIENT,
        _CAP_SET_MAX,
} CapSet;

const char *cap_set_to_string(CapSet c); /* "effective" */

#define PROC_GROUPS_MAX 32

typedef struct ProcStatus {
        char name[64];
        char state;
        pid_t tgid, ppid, tracer_pid;
        pid_t nspid; /* the PID in the process's own (innermost) PID namespace */
        uid_t ruid, euid, fsuid;   /* fsuid: what file access is checked against (euid when not listed) */
        gid_t fsgid;               /* likewise; 0 when the file lists no Gid line */
        gid_t groups[PROC_GROUPS_MAX]; /* the supplementary groups, the first PROC_GROUPS_MAX */
        unsigned n_groups;
        bool groups_truncated;
        uint64_t vm_rss, rss_anon, rss_file, rss_shmem, vm_swap; /* bytes */
        unsigned threads;
        int seccomp;       /* 0 off, 1 strict, 2 filter, -1 unknown */
        bool shadow_stack; /* x86_Thread_features lists "shstk" (CET user shadow stack) */
        uint64_t cap[_CAP_SET_MAX];
        unsigned cap_seen; /* bits 1 << CapSet: the sets the file listed */
} ProcStatus;

int parse_proc_status(const char *buf, size_t len, ProcStatus *ret);

typedef struct SmapsRollup {
        uint64_t rss, pss, pss_anon, anonymous, private_dirty, lazyfree, swap; /* bytes */
        bool has_pss_anon; /* since 5.8 */
} SmapsRollup;

int parse_smaps_rollup(const char *buf, size_t len, SmapsRollup *ret);

typedef struct ProcCgroup {
        char unified[PATH_MAX];  /* the "0::" line: cgroup v2 path; "" when absent */
        char memory_v1[PATH_MAX]; /* the v1 hierarchy with the memory controller; "" when absent */
        bool has_unified, has_memory_v1;
} ProcCgroup;

int parse_proc_cgroup(const char *buf, size_t len, ProcCgroup *ret);

typedef enum Allocator {
        ALLOCATOR_UNKNOWN,
        ALLOCATOR_GLIBC,
        ALLOCATOR_JEMALLOC,
        ALLOCATOR_TCMALLOC,
        _ALLOCATOR_MAX,
} Allocator;

const char *allocator_to_string(Allocator a);
int allocator_from_string(const char *s, Allocator *ret);

typedef struct MappedLib {
        bool found;
        char path[PATH_MAX];
        uint64_t base; /* start of the mapping at file offset 0 */
        uint64_t base_end; /* and its end (its /proc/PID/map_files name is base-base_end) */
        unsigned dev_major, dev_minor;
        uint64_t inode;
        bool deleted; /* replaced on disk since it was mapped (a package upgrade) */
        /* The path as the kernel printed it cannot be told from another: "\012" in it is a newline
         * the kernel escaped or those four characters of the name (it escapes no backslash).
         * Only /proc/PID/map_files reaches the file mapped. */
        bool path_unclear;
} MappedLib;

typedef struct ProcMaps {
        unsigned mappings;
        unsigned anon_rw;       /* private writable mappings with no file: heaps, arenas */
        uint64_t anon_rw_bytes; /* their total virtual size */
        /* glibc's heaps of its arenas but the main one: 64 MiB reserved at a 64 MiB boundary, the
         * part in use read-write, the rest PROT_NONE, every mapping anonymous */
        unsigned arena_heaps;
        uint64_t heap_start, heap_end; /* the run of anonymous mappings that may be one */
        /* From /proc/PID/smaps only (proc_smaps_add_line): the resident bytes of the heaps, the
         * main one ([heap]) and the arenas' */
        uint64_t heap_rss;
        uint64_t run_rss;   /* of the run so far */
        uint8_t rss_to;     /* where the next Rss line goes: 0 nowhere, 1 heap_rss, 2 run_rss */
        Allocator allocator;
        MappedLib libc;          /* glibc's libc.so.6 */
        MappedLib allocator_lib; /* libjemalloc / libtcmalloc when one is mapped */
} ProcMaps;

int parse_proc_maps(const char *buf, size_t len, ProcMaps *ret);

/* The same, one line at a time (without its '\n'), for a reader that streams the file: init,
 * add every line (blank ones are skipped), finish (-ENODATA when no mapping was seen). */
void proc_maps_init(ProcMaps *m);
int proc_maps_add_line(ProcMaps *m, const char *line, size_t len);
int proc_maps_finish(ProcMaps *m);

/* A line of /proc/PID/smaps: a mapping's line as proc_maps_add_line takes it, or one of its
 * "Key:   N kB" lines (Rss counted toward heap_rss). */
int proc_smaps_add_line(ProcMaps *m, const char *line, size_t len);

/* /proc/PID/stat: the fields memgov needs. comm may contain spaces and parentheses. */
typedef struct ProcStat {
        char state;
        pid_t ppid;
        uint64_t starttime; /* clock ticks after boot */
        uint64_t utime, stime;
} ProcStat;

int parse_proc_stat(const char *buf, size_t len, ProcStat *ret);

/* /proc/meminfo: the host's RAM. */
typedef struct MemInfo {
        uint64_t total, available, swap_total; /* bytes */
} MemInfo;

int parse_meminfo(const char *buf, size_t len, MemInfo *ret);

/* The mapping of /proc/PID/maps that contains addr: -ENOENT when none does. */
int proc_maps_find(const char *buf, size_t len, uint64_t addr, uint64_t *ret_start, uint64_t *ret_end,
                   char ret_perms[static 5]);
/* The range and permissions of one line of /proc/PID/maps: -ENODATA for a blank line. */
int proc_maps_line_range(const char *line, size_t len, uint64_t *ret_start, uint64_t *ret_end,
                         char ret_perms[static 5]);
