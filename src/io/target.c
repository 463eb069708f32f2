/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/parse-cgroup.h"
#include "memgov/parse-proc.h"
#include "memgov/server-candidate.h"
#include "memgov/strutil.h"
#include "memgov/target.h"

static const char *const kind_names[_TARGET_KIND_MAX] = {
        [TARGET_UNIT] = "unit",
        [TARGET_CGROUP] = "cgroup",
        [TARGET_PID] = "pid",
        [TARGET_PROCESS] = "process",
};

const char *target_kind_to_string(TargetKind k) {
        return k >= 0 && k < _TARGET_KIND_MAX ? kind_names[k] : "invalid";
}

void target_init(Target *t, const TargetSpec *spec) {
        assert(t);
        assert(spec);
        *t = (Target) { .spec = *spec, .cgroup_fd = -1 };
        if (t->spec.kind == TARGET_PROCESS && t->spec.value[0] == '\0')
                snprintf(t->spec.value, sizeof(t->spec.value), "%s", TARGET_DEFAULT_PROCESSES);
}

void target_release(Target *t) {
        assert(t);
        if (t->cgroup_fd >= 0)
                close(t->cgroup_fd);
        t->cgroup_fd = -1;
        t->resolved = false;
}



void proc_entry_path(int proc_fd, const char *who, const char *name, char *buf, size_t size) {
        snprintf(buf, size, "%s%s/%s", proc_fd == AT_FDCWD ? "/proc/" : "", who, name);
}

static void proc_path(int proc_fd, pid_t pid, const char *name, char *buf, size_t size) {
        char who[16];
        snprintf(who, sizeof(who), "%d", (int) pid);
        proc_entry_path(proc_fd, who, name, buf, size);
}

/* A small file of a process, whole; -ESRCH when there is no such process. */
static ssize_t proc_read(int proc_fd, pid_t pid, const char *name, char *buf, size_t size) {
        char path[64];
        proc_path(proc_fd, pid, name, path, sizeof(path));
        ssize_t n = read_small_file_at(proc_fd, path, buf, size);
        return n == -ENOENT ? -ESRCH : n;
}

int proc_read_comm(int proc_fd, pid_t pid, char *buf, size_t size) {
        assert(buf);
        ssize_t n = proc_read(proc_fd, pid, "comm", buf, size);
        if (n < 0)
                return (int) n;
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = '\0';
        return 0;
}

int proc_read_stat(int proc_fd, pid_t pid, ProcStat *ret) {
        assert(ret);
        char buf[1024];
        ssize_t n = proc_read(proc_fd, pid, "stat", buf, sizeof(buf));
        return n < 0 ? (int) n : parse_proc_stat(buf, (size_t) n, ret);
}

int proc_check_starttime(int proc_fd, pid_t pid, uint64_t starttime) {
        ProcStat st;
        int r = proc_read_stat(proc_fd, pid, &st);
        if (r < 0)
                return r;
        return starttime && st.starttime != starttime ? -ESRCH : 0;
}

int proc_read_status(int proc_fd, pid_t pid, ProcStatus *ret) {
        assert(ret);
        char buf[4096];
        ssize_t n = proc_read(proc_fd, pid, "status", buf, sizeof(buf));
        return n < 0 ? (int) n : parse_proc_status(buf, (size_t) n, ret);
}

int proc_read_cgroup(int proc_fd, pid_t pid, ProcCgroup *ret) {
        assert(ret);
        char buf[4096];
        ssize_t n = proc_read(proc_fd, pid, "cgroup", buf, sizeof(buf));
        return n < 0 ? (int) n : parse_proc_cgroup(buf, (size_t) n, ret);
}

/* The kernel's fixed inode number of the initial PID namespace (PROC_PID_INIT_INO). */
#define PID_NS_INIT_INO 0xEFFFFFFCU

/* Whether memgov sees every process of the host, not a container's own PID namespace. */
static bool sees_all_users(void) {
        struct stat st;
        return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == PID_NS_INIT_INO;
}

/* The account Debian's (and most) server packages run the server as. */
static uid_t server_account(void) {
        struct passwd pw, *res = NULL;
        char buf[4096];
        if (getpwnam_r("mysql", &pw, buf, sizeof(buf), &res) != 0 || !res)
                return (uid_t) -1;
        return res->pw_uid;
}

static uid_t uid_min(void) {
        char buf[16384];
        ssize_t n = read_small_file_at(AT_FDCWD, "/etc/login.defs", buf, sizeof(buf));
        return login_defs_uid_min(n > 0 ? buf : "", n > 0 ? (size_t) n : 0);
}

/* What server_candidate_ok() judges, from the process's files in proc_fd: 1 a candidate, 0 not
 * one (why says why), -ESRCH gone since it was listed (a server just stopped is no impostor). */
static int candidate_ok(int proc_fd, pid_t pid, const char *names, bool all_users, uid_t min, uid_t server_uid,
                        char *why, size_t why_size) {
        char path[64], exe_path[PATH_MAX];
        struct stat st;
        ProcStatus status;
        ProcCgroup cg;

        int r = proc_read_status(proc_fd, pid, &status);
        if (r == -ESRCH)
                return r;
        if (r < 0) {
                snprintf(why, why_size, "its status cannot be read: %s", strerror(-r));
                return 0;
        }
        bool has_cgroup = proc_read_cgroup(proc_fd, pid, &cg) == 0 && cg.has_unified;
        proc_path(proc_fd, pid, "exe", path, sizeof(path));
        bool exe = fstatat(proc_fd, path, &st, 0) == 0;
        ssize_t k = readlinkat(proc_fd, path, exe_path, sizeof(exe_path) - 1);
        const char *exe_name = NULL;
        if (k > 0) {
                exe_path[k] = '\0';
                /* " (deleted)": the binary was replaced on disk since (an upgrade). */
                char *deleted = k > 10 ? strstr(exe_path, " (deleted)") : NULL;
                if (deleted && deleted[10] == '\0')
                        *deleted = '\0';
                const char *slash = strrchr(exe_path, '/');
                exe_name = slash ? slash + 1 : exe_path;
        }
        CandidateFacts f = {
                .exe_known = exe || k > 0,
                .exe_uid = exe ? st.st_uid : (uid_t) -1,
                .exe_mode = exe ? st.st_mode : 0,
                .exe_name = exe_name,
                .names = names,
                .server_uid = server_uid,
                .ruid = status.ruid,
                .cgroup = has_cgroup ? cg.unified : NULL,
                .all_users = all_users,
                .enforce = geteuid() == 0,
                .uid_min = min,
        };
        return server_candidate_ok(&f, why, why_size) ? 1 : 0;
}

int find_server_process(int proc_fd, const char *names, pid_t *ret, char *why, size_t why_size) {
        assert(names);
        assert(ret);
        assert(why);
        _cleanup_close_ int fd = openat(proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = fd < 0 ? negative_errno() : 0; /* before the calls below change errno */
        pid_t found[16], ignored = 0;
        unsigned n = 0, n_ignored = 0;
        char ignored_why[160] = "";
        bool all_users = sees_all_users();
        uid_t min = uid_min(), server_uid = all_users ? server_account() : (uid_t) -1;
        DIR *d;
        struct dirent *de;

        if (r < 0 || !(d = fdopendir(fd))) {
                if (r >= 0)
                        r = negative_errno();
                snprintf(why, why_size, "cannot list processes: %s", strerror(-r));
                return r;
        }
        fd = -1; /* owned by d now */
        while ((de = readdir(d))) {
                char comm[64];
                ProcStat st;
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                if (proc_read_comm(dirfd(d), (pid_t) pid, comm, sizeof(comm)) < 0 || !name_in_list(comm, names))
                        continue;
                /* Exited (a zombie not yet reaped): neither the server nor an impostor. */
                if (proc_read_stat(dirfd(d), (pid_t) pid, &st) < 0 || st.state == 'Z' || st.state == 'X')
                        continue;
                /* A server's helper processes (or threads shown as tasks) have it as parent. */
                char pcomm[64];
                if (st.ppid > 0 && proc_read_comm(dirfd(d), st.ppid, pcomm, sizeof(pcomm)) == 0 && name_in_list(pcomm, names))
                        continue;
                char not_server[128];
                int ok = candidate_ok(dirfd(d), (pid_t) pid, names, all_users, min, server_uid, not_server,
                                      sizeof(not_server));
                if (ok < 0)
                        continue;
                if (ok == 0) {
                        if (n_ignored++ == 0) {
                                ignored = (pid_t) pid;
                                snprintf(ignored_why, sizeof(ignored_why), "%s", not_server);
                        }
                        continue;
                }
                if (n < ELEMENTSOF(found))
                        found[n] = (pid_t) pid;
                n++;
        }
        closedir(d);

        if (n == 0) {
                if (n_ignored)
                        snprintf(why, why_size, "no process named %s that can be the server is running (%u ignored: "
                                                "process %d: %s); name the server with --unit", names, n_ignored,
                                 (int) ignored, ignored_why);
                else
                        snprintf(why, why_size, "no process named %s is running", names);
                return -ESRCH;
        }
        if (n > 1) {
                StrBuf b;
                strbuf_init(&b, why, why_size);
                strbuf_printf(&b, "%u processes named %s (", n, names);
                for (unsigned i = 0; i < MIN(n, (unsigned) ELEMENTSOF(found)); i++)
                        strbuf_printf(&b, "%s%d", i ? ", " : "", (int) found[i]);
                strbuf_printf(&b, "): refusing to guess which is the server; name it with --unit (or --pid)");
                return -ENOTUNIQ;
        }
        *ret = found[0];
        return 0;
}

/* The server inside a cgroup: a process with a known server name in it or its children, else
 * the only process of a cgroup that has just one (a single-process container). A supervisor
 * waiting to start the server again is not the server. */
static pid_t server_in_cgroup(int proc_fd, int dirfd, unsigned depth, bool named_only) {
        char buf[16384];
        pid_t first = 0;
        unsigned count = 0;
        ssize_t n = read_small_file_at(dirfd, "cgroup.procs", buf, sizeof(buf));

        if (n > 0)
                for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n")) {
                        char comm[64];
                        pid_t pid = (pid_t) atoi(tok);
                        if (pid <= 0)
                                continue;
                        if (!first)
                                first = pid;
                        count++;
                        if (proc_read_comm(proc_fd, pid, comm, sizeof(comm)) == 0 && name_in_list(comm, TARGET_DEFAULT_PROCESSES))
                                return pid;
                }
        if (count > 1 || named_only)
                first = 0;
        if (depth == 0)
                return first;

        /* A pod or a slice: the server is further down. */
        _cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                return first;
        fd = -1;
        struct dirent *de;
        pid_t child = 0;
        while (!child && (de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub >= 0)
                        child = server_in_cgroup(proc_fd, sub, depth - 1, named_only);
        }
        closedir(d);
        return child ? child : first;
}

static pid_t unit_server(int proc_fd, int cgroup_fd, pid_t main_pid) {
        static const char wrappers[] = "sh,bash,dash,mysqld_safe,mariadbd-safe,galera_recovery";
        char comm[64];
        bool known = main_pid > 0 && proc_read_comm(proc_fd, main_pid, comm, sizeof(comm)) == 0;

        if (known && name_in_list(comm, TARGET_DEFAULT_PROCESSES))
                return main_pid;
        pid_t named = server_in_cgroup(proc_fd, cgroup_fd, 2, true);
        if (named > 0 || main_pid <= 0)
                return named;
        /* systemd names the child it forked "(" + the command + ")" until the command runs. */
        if (known && (comm[0] == '(' || name_in_list(comm, wrappers)))
                return 0;
        return main_pid;
}

pid_t target_server_in(TargetKind kind, int proc_fd, int cgroup_fd, pid_t pid) {
        if (kind == TARGET_UNIT)
                return unit_server(proc_fd, cgroup_fd, pid);
        return pid > 0 ? pid : server_in_cgroup(proc_fd, cgroup_fd, 2, false);
}

static bool is_cgroup2(int fd) {
        struct statfs sfs;
        return fstatfs(fd, &sfs) == 0 && (long) sfs.f_type == CGROUP2_SUPER_MAGIC;
}

/* Whether pid is listed in the cgroup.procs of dirfd (pids as this process's namespace shows them). */
static bool cgroup_lists(int dirfd, pid_t pid) {
        char buf[16384];
        ssize_t n = read_small_file_at(dirfd, "cgroup.procs", buf, sizeof(buf));
        if (n <= 0)
                return false;
        for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n"))
                if (atoi(tok) == pid)
                        return true;
        return false;
}

/* The directory under dirfd (at path) whose cgroup.procs lists pid, depth first. */
static int find_cgroup_of(int dirfd, pid_t pid, char *path, size_t size, unsigned depth) {
        if (cgroup_lists(dirfd, pid))
                return 0;
        if (depth == 0)
                return -ESRCH;
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return -ESRCH;
        }
        size_t len = strlen(path);
        int r = -ESRCH;
        struct dirent *de;
        while (r < 0 && (de = readdir(d))) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                if (len + 1 + strlen(de->d_name) + 1 > size)
                        continue;
                _cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0)
                        continue;
                snprintf(path + len, size - len, "%s%s", len > 1 ? "/" : "", de->d_name);
                r = find_cgroup_of(sub, pid, path, size, depth - 1);
                if (r < 0)
                        path[len] = '\0';
        }
        closedir(d);
        return r;
}

/* Where this process's cgroup namespace starts in the hierarchy mounted at the cgroup root: its
 * own cgroup, found by its pid, less what /proc/self/cgroup shows below the namespace root.
 * Only a mount of the whole host hierarchy (--cgroup-root) tells: a cgroup file system mounted
 * inside the namespace starts at the namespace root itself, "/". */
static int own_namespace_root(const Roots *r, char *buf, size_t size) {
        char text[4096], found[PATH_MAX] = "/";
        ProcCgroup *pc = malloc(sizeof(ProcCgroup));
        int ret;

        if (!pc)
                return -ENOMEM;
        ssize_t n = read_small_file_at(r->proc_fd, "self/cgroup", text, sizeof(text));
        if (n < 0 || parse_proc_cgroup(text, (size_t) n, pc) < 0 || !pc->has_unified || strstr(pc->unified, "/..")) {
                free(pc);
                return -ENOENT;
        }
        ret = find_cgroup_of(r->cgroup_fd, getpid(), found, sizeof(found), 8);
        if (ret == 0) {
                /* found = <namespace root><own path below it> */
                size_t fl = strlen(found), ol = streq(pc->unified, "/") ? 0 : strlen(pc->unified);
                if (ol > fl || (ol > 0 && !streq(found + fl - ol, pc->unified)))
                        ret = -ENOENT;
                else {
                        found[fl - ol] = '\0';
                        snprintf(buf, size, "%s", found[0] ? found : "/");
                }
        }
        free(pc);
        return ret;
}

/* The cgroup of a server in another cgroup namespace (a container next to ours, in a pod that
 * shares its process namespace): in the host hierarchy when it is mounted here (the path made
 * absolute from our own namespace root), else through the server's own root, where its
 * container mounted the cgroup file system at its cgroup. */
static int open_foreign_cgroup(Target *t, const Roots *r, const char *rel, char *why, size_t why_size) {
        char ns_root[PATH_MAX], abs[PATH_MAX], path[96];

        if (r->cgroup_fd >= 0 && own_namespace_root(r, ns_root, sizeof(ns_root)) == 0 && !streq(ns_root, "/") &&
            cgroup_path_resolve(ns_root, rel, abs, sizeof(abs)) == 0 && abs[1] != '\0') {
                t->cgroup_fd = openat(r->cgroup_fd, abs + 1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (t->cgroup_fd >= 0) {
                        snprintf(t->cgroup, sizeof(t->cgroup), "%s", abs);
                        return 0;
                }
        }
        snprintf(path, sizeof(path), "%d/root/sys/fs/cgroup", (int) t->pid);
        t->cgroup_fd = openat(r->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (t->cgroup_fd >= 0 && (r->copy || is_cgroup2(t->cgroup_fd)) && cgroup_lists(t->cgroup_fd, t->pid)) {
                snprintf(t->cgroup, sizeof(t->cgroup), "%s", rel);
                snprintf(t->cgroup_via, sizeof(t->cgroup_via), "/proc/%d/root/sys/fs/cgroup", (int) t->pid);
                return 0;
        }
        if (t->cgroup_fd >= 0)
                close(t->cgroup_fd);
        t->cgroup_fd = -1;
        snprintf(why, why_size, "the cgroup of process %d (%s) is in another cgroup namespace, and neither the "
                 "host's cgroup hierarchy (mount it and give it with --cgroup-root) nor the server's own "
                 "/sys/fs/cgroup (through /proc/%d/root) shows it", (int) t->pid, rel, (int) t->pid);
        return -EREMOTE;
}

static int cgroup_of_pid(const Roots *r, pid_t pid, char *buf, size_t size, char *why, size_t why_size) {
        char path[64], text[8192];
        ProcCgroup *pc = malloc(sizeof(ProcCgroup));
        int ret;

        if (!pc)
                return -ENOMEM;
        snprintf(path, sizeof(path), "%d/cgroup", (int) pid);
        ssize_t n = read_small_file_at(r->proc_fd, path, text, sizeof(text));
        if (n < 0) {
                ret = n == -ENOENT ? -ESRCH : (int) n;
                snprintf(why, why_size, "cannot read /proc/%d/cgroup: %s", (int) pid, strerror((int) -n));
        } else if ((ret = parse_proc_cgroup(text, (size_t) n, pc)) < 0)
                snprintf(why, why_size, "/proc/%d/cgroup: unexpected contents", (int) pid);
        else if (!pc->has_unified) {
                snprintf(why, why_size, "process %d is in no cgroup v2", (int) pid);
                ret = -ENOENT;
        } else if (strstr(pc->unified, "/..")) {
                /* A container next to ours, in a cgroup namespace of its own. */
                snprintf(buf, size, "%s", pc->unified);
                ret = -EREMOTE;
        } else {
                snprintf(buf, size, "%s", pc->unified);
                ret = 0;
        }
        free(pc);
        return ret;
}

static int open_cgroup(Target *t, const Roots *r, char *why, size_t why_size) {
        const char *rel = t->cgroup;
        while (*rel == '/')
                rel++;
        if (*rel == '\0') {
                snprintf(why, why_size, "the server is in the root cgroup, which has no memory limits to govern");
                return -EINVAL;
        }
        t->cgroup_fd = openat(r->cgroup_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (t->cgroup_fd < 0) {
                int e = negative_errno();
                snprintf(why, why_size, "cannot open cgroup %s under %s: %s", t->cgroup, r->cgroup_path, strerror(-e));
                return e == -ENOENT ? -ESRCH : e;
        }
        return 0;
}

static void describe(Target *t) {
        /* The command name is the server's to choose, a newline included: escaped once here, for
         * every place the description goes (logs, systemd's STATUS=, hooks, the status). */
        char pid[128] = "", comm[4 * sizeof(t->comm)];
        if (t->pid > 0)
                snprintf(pid, sizeof(pid), "%s pid %d", t->comm[0] ? escape_untrusted(t->comm, comm, sizeof(comm)) : "process",
                         (int) t->pid);
        switch (t->spec.kind) {
        case TARGET_UNIT:
                snprintf(t->description, sizeof(t->description), "%s (%s%s%s)", t->spec.value,
                         t->has_cgroup ? t->cgroup : "no cgroup v2", pid[0] ? ", " : "", pid);
                break;
        case TARGET_CGROUP:
                snprintf(t->description, sizeof(t->description), "cgroup %s%s%s%s", t->cgroup, pid[0] ? " (" : "", pid,
                         pid[0] ? ")" : "");
                break;
        default:
                snprintf(t->description, sizeof(t->description), "%s%s%s%s%s%s", pid, t->has_cgroup ? " (" : "",
                         t->has_cgroup ? t->cgroup : "", t->cgroup_via[0] ? " through " : "", t->cgroup_via,
                         t->has_cgroup ? ")" : "");
        }
}

int target_resolve(Target *t, const Roots *r, sd_bus *bus, char *why, size_t why_size) {
        assert(t);
        assert(r);
        assert(why);
        int ret = 0;

        target_release(t);
        t->has_cgroup = false;
        t->limits_readonly = false;
        t->cgroup[0] = '\0';
        t->cgroup_via[0] = '\0';
        t->pid = 0;
        t->starttime = 0;
        t->comm[0] = '\0';
        why[0] = '\0';

        switch (t->spec.kind) {
        case TARGET_UNIT:
                if (!bus) {
                        snprintf(why, why_size, "no connection to systemd to look up %s", t->spec.value);
                        return -ENOTCONN;
                }
                ret = unit_get_info(bus, t->spec.value, &t->unit, why, why_size);
                if (ret < 0)
                        return ret;
                if (t->unit.control_group[0] == '\0') {
                        snprintf(why, why_size, "%s is %s", t->spec.value, t->unit.active_state);
                        return -ESRCH;
                }
                snprintf(t->cgroup, sizeof(t->cgroup), "%s", t->unit.control_group);
                t->pid = t->unit.main_pid;
                break;
        case TARGET_CGROUP:
                snprintf(t->cgroup, sizeof(t->cgroup), "%s%s", t->spec.value[0] == '/' ? "" : "/", t->spec.value);
                break;
        case TARGET_PID:
                t->pid = t->spec.pid;
                break;
        case TARGET_PROCESS:
                ret = find_server_process(r->proc_fd, t->spec.value, &t->pid, why, why_size);
                if (ret < 0)
                        return ret;
                break;
        default:
                return -EINVAL;
        }

        bool foreign = false;
        if (t->cgroup[0] == '\0' && t->pid > 0 && ((r->cgroup_fd >= 0 && r->memory_v2) || !r->copy)) {
                ret = cgroup_of_pid(r, t->pid, t->cgroup, sizeof(t->cgroup), why, why_size);
                if (ret == -EREMOTE) {
                        char rel[PATH_MAX];
                        snprintf(rel, sizeof(rel), "%s", t->cgroup);
                        t->cgroup[0] = '\0';
                        ret = open_foreign_cgroup(t, r, rel, why, why_size);
                        if (ret < 0)
                                return ret;
                        foreign = true;
                } else if (ret < 0 && (r->cgroup_fd >= 0 && r->memory_v2))
                        return ret;
                else if (ret < 0 || r->cgroup_fd < 0 || !r->memory_v2)
                        t->cgroup[0] = '\0';
        }

        if (foreign)
                t->has_cgroup = true;
        else if (t->cgroup[0] && r->cgroup_fd >= 0 && r->memory_v2) {
                ret = open_cgroup(t, r, why, why_size);
                if (ret < 0)
                        return ret;
                t->has_cgroup = true;
                t->pid = target_server_in(t->spec.kind, r->proc_fd, t->cgroup_fd, t->pid);
        } else if (t->spec.kind == TARGET_CGROUP) {
                snprintf(why, why_size, "cgroup %s: %s", t->cgroup,
                         r->cgroup_fd < 0 ? "no cgroup v2 hierarchy" : "the memory controller is not on cgroup v2");
                return -EOPNOTSUPP;
        }
        /* A cgroup file system mounted read-only (a container's default): memory.high and
         * memory.max cannot be written by file. */
        t->limits_readonly = t->has_cgroup && faccessat(t->cgroup_fd, "memory.high", W_OK, AT_EACCESS) < 0 &&
                             errno == EROFS;

        if (t->pid > 0) {
                ProcStat st;
                if (proc_read_stat(r->proc_fd, t->pid, &st) == 0) {
                        t->starttime = st.starttime;
                        (void) proc_read_comm(r->proc_fd, t->pid, t->comm, sizeof(t->comm));
                } else if (!t->has_cgroup) {
                        snprintf(why, why_size, "process %d is not running", (int) t->pid);
                        return -ESRCH;
                } else
                        t->pid = 0;
        }
        if (!t->has_cgroup && t->pid <= 0) {
                snprintf(why, why_size, "nothing to watch: no cgroup and no process");
                return -ESRCH;
        }
        t->resolved = true;
        describe(t);
        return 0;
}
