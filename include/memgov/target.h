/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <limits.h>
#include <systemd/sd-bus.h>

#include "memgov/parse-proc.h"
#include "memgov/roots.h"
#include "memgov/systemd-bus.h"

/* What memgov governs: a systemd unit, a cgroup, a process. Resolution finds the cgroup (in
 * the v2 hierarchy) and the server's main process; it is repeated whenever they go away, so
 * the target is followed across server restarts. */

typedef enum TargetKind {
        TARGET_UNIT,
        TARGET_CGROUP,
        TARGET_PID,
        TARGET_PROCESS,
        _TARGET_KIND_MAX,
} TargetKind;

#define TARGET_DEFAULT_PROCESSES "mariadbd,mysqld"

typedef struct TargetSpec {
        TargetKind kind;
        char value[256]; /* the unit, the cgroup path, or process names separated by commas */
        pid_t pid;
} TargetSpec;

typedef struct Target {
        TargetSpec spec;
        bool resolved;
        bool has_cgroup;         /* a cgroup v2 memory controller to read and write */
        char cgroup[PATH_MAX];   /* in the v2 hierarchy: "/system.slice/mariadb.service" */
        char cgroup_via[96];     /* "" or where a foreign cgroup is read: "/proc/PID/root/sys/fs/cgroup" */
        bool limits_readonly;    /* the cgroup file system is mounted read-only here */
        int cgroup_fd;
        pid_t pid;               /* the server's main process, 0 = none found */
        uint64_t starttime;      /* of pid: tells a reused pid from the server */
        char comm[64];
        UnitInfo unit;           /* TARGET_UNIT */
        char description[768];
} Target;

const char *target_kind_to_string(TargetKind k);
void target_init(Target *t, const TargetSpec *spec);
/* (Re)resolves the target. -ESRCH: nothing to govern right now (unit inactive, process not
 * running): wait and retry; other errors are for good (no such unit). why says what happened. */
int target_resolve(Target *t, const Roots *r, sd_bus *bus, char *why, size_t why_size);
/* The server in the cgroup cgroup_fd of a target of this kind, pid the process known so far (a
 * unit's main process; 0: none). In a cgroup: a process with a server name in it or two levels
 * down, else the only process of a cgroup that has just one (a container's). A unit's: its main
 * process may be a wrapper, `sh -c "... exec mariadbd"` until it executes the server, or
 * mysqld_safe, which stays the server's parent: the server is the process with a server name in
 * the cgroup. Without one, 0 (not there yet: looked for again at every sample), unless the main
 * process is neither a wrapper nor systemd's child before its command runs (then it is the
 * server, named otherwise). A unit's helper alone in its cgroup between two runs (no main
 * process: ExecStartPre, ExecStopPost) is never taken for the server. */
pid_t target_server_in(TargetKind kind, int proc_fd, int cgroup_fd, pid_t pid);
void target_release(Target *t);

/* Finds the main process of the servers named in names ("mariadbd,mysqld") under /proc:
 * one whose parent is not one of them. -ESRCH when none, -ENOTUNIQ when several (listed in why). */
int find_server_process(int proc_fd, const char *names, pid_t *ret, char *why, size_t why_size);
/* /proc/PID/stat under the proc root proc_fd (AT_FDCWD: the host's /proc), parsed. -ESRCH when
 * there is no such process. */
/* "WHO/NAME" under proc_fd, or "/proc/WHO/NAME" for the host's /proc (AT_FDCWD); WHO is a pid's
 * digits or "self". */
void proc_entry_path(int proc_fd, const char *who, const char *name, char *buf, size_t size);
int proc_read_stat(int proc_fd, pid_t pid, ProcStat *ret);
/* 0 when pid names the process that started at starttime (clock ticks since boot, as in its
 * stat; 0 = any), -ESRCH when it is another one or none, or why its stat cannot be read. */
int proc_check_starttime(int proc_fd, pid_t pid, uint64_t starttime);
/* The same for /proc/PID/status, /proc/PID/cgroup, and /proc/PID/comm (without its newline). */
int proc_read_status(int proc_fd, pid_t pid, ProcStatus *ret);
int proc_read_cgroup(int proc_fd, pid_t pid, ProcCgroup *ret);
int proc_read_comm(int proc_fd, pid_t pid, char *buf, size_t size);
