/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "memgov/argv.h"
#include "memgov/clock.h"
#include "memgov/fileio.h"
#include "memgov/strutil.h"

/* After SIGTERM, how long the hook's group has before SIGKILL; after SIGKILL, how long we wait
 * to reap the hook before leaving it behind (a process stuck in the kernel). */
#define HOOK_GRACE (5 * USEC_PER_SEC)
#define HOOK_REAP (5 * USEC_PER_SEC)
/* Without a pidfd, how often the hook's exit is looked for. */
#define HOOK_POLL (50 * USEC_PER_MSEC)

bool pidfd_wait_exit(int pidfd, usec_t timeout) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int ms = (int) MIN(timeout / USEC_PER_MSEC, (usec_t) INT32_MAX);
        return poll(&p, 1, ms) > 0;
}

/* What memgov runs as root gets the trust the policy file gets: owned by root, writable by
 * nobody else, and so is every directory above it, or whoever could write one could put another
 * program in its place. A directory writable by others but sticky and root's own (/tmp) is fine:
 * nobody else can rename or remove what root put there. Checked on the file as opened, through
 * its real path (symbolic links resolved), and that very file is executed. */
static int check_trusted_executable(int fd, const char *path, char *why, size_t why_size) {
        char real[PATH_MAX], link[64], reason[256];
        struct stat st;

        if (fstat(fd, &st) < 0) {
                snprintf(why, why_size, "%s: %m", path);
                return negative_errno();
        }
        if (!S_ISREG(st.st_mode) || !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
                snprintf(why, why_size, "%s: %s", path, S_ISREG(st.st_mode) ? "not executable" : "not a regular file");
                return -EACCES;
        }
        if (geteuid() != 0)
                return 0;
        if (check_trusted_file(&st, 0, reason, sizeof(reason)) < 0) {
                snprintf(why, why_size, "%s is not trusted to run as root: %s", path, reason);
                return -EPERM;
        }
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, real, sizeof(real) - 1);
        if (n <= 0 || real[0] != '/') {
                int r = n < 0 ? negative_errno() : -EIO;
                snprintf(why, why_size, "%s: cannot tell which directories hold it (%s): %s", path, link,
                         n < 0 ? strerror(-r) : "not a path");
                return r;
        }
        real[n] = '\0';

        _cleanup_close_ int dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        char *name = real + 1;
        for (;;) {
                int shown = (int) MAX(name - real - 1, 1); /* the directory's path: real up to name */
                if (dir < 0 || fstat(dir, &st) < 0) {
                        snprintf(why, why_size, "%s: cannot look at %.*s: %m", path, shown, real);
                        return negative_errno();
                }
                bool writable = st.st_mode & (S_IWGRP | S_IWOTH);
                if (st.st_uid != 0 || (writable && !(st.st_mode & S_ISVTX))) {
                        snprintf(why, why_size,
                                 "%s is not trusted to run as root: its directory %.*s is %s (mode %04o; expected "
                                 "root's and chmod go-w)",
                                 path, shown, real, st.st_uid != 0 ? "not owned by root" : "writable by others",
                                 (unsigned) (st.st_mode & 07777));
                        return -EPERM;
                }
                char *slash = strchr(name, '/');
                if (!slash)
                        return 0; /* name is the file itself, checked above */
                *slash = '\0';
                int next = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                *slash = '/';
                closep(&dir); /* keeps errno: openat's, for the message above */
                dir = next;
                name = slash + 1;
        }
}

/* The child between fork and exec: async-signal-safe calls only. Starts the hook as the leader
 * of a session of its own (its whole group is ended at the timeout), /dev/null on stdin, the
 * pipe on stdout and stderr, no blocked signals and default dispositions whatever ours are.
 * A script is executed through /dev/fd/N by its interpreter: then exe must survive the exec. */
_noreturn_ static void hook_child(int exe, bool script, int out, int err, char **argv, char **envp) {
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigset_t none;

        for (int s = 1; s < _NSIG; s++)
                (void) sigaction(s, &dfl, NULL);
        if (setsid() < 0)
                goto fail;
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(out, STDERR_FILENO) < 0)
                goto fail;
        if (script && fcntl(exe, F_SETFD, 0) < 0)
                goto fail;
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        execveat(exe, "", argv, envp, AT_EMPTY_PATH);
fail:;
        int e = errno;
        (void) !write(err, &e, sizeof(e));
        _exit(127);
}

/* Whether the hook exited (not reaped: its pid, which is its group's id, stays ours until then). */
static bool hook_exited(pid_t pid) {
        siginfo_t si = {};
        if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
                return errno == ECHILD; /* reaped already by someone ignoring SIGCHLD */
        return si.si_pid == pid;
}

/* Waits until the hook exits or the deadline passes, through its pidfd, else by looking. */
static bool hook_wait(pid_t pid, int pidfd, usec_t deadline) {
        for (;;) {
                if (hook_exited(pid))
                        return true;
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return false;
                usec_t left = deadline - now;
                if (pidfd >= 0)
                        (void) pidfd_wait_exit(pidfd, left);
                else
                        sleep_usec(MIN(left, HOOK_POLL));
        }
}

int hook_run(const char *command, const HookContext *ctx, usec_t timeout, bool dry_run, char *output,
             size_t output_size, char *why, size_t why_size) {
        assert(command);
        assert(ctx);
        assert(output);
        assert(why);
        char words[1024], *argv[ARGV_MAX + 1];
        unsigned n;
        int r;

        output[0] = '\0';
        r = argv_split(command, words, sizeof(words), argv, &n);
        if (r < 0 || n == 0) {
                snprintf(why, why_size, "'%s' is not a command (an absolute path and its arguments)", command);
                return r < 0 ? r : -EINVAL;
        }
        /* Opened once, O_PATH (a FIFO or a device put there is not opened for real): the file
         * checked is the file executed. */
        _cleanup_close_ int exe = open(argv[0], O_PATH | O_CLOEXEC);
        if (exe < 0) {
                r = negative_errno();
                snprintf(why, why_size, "%s: %s", argv[0], strerror(-r));
                return r;
        }
        r = check_trusted_executable(exe, argv[0], why, why_size);
        if (r < 0)
                return r;
        /* A script? Read through the descriptor, the same file. One we may not read is none:
         * its interpreter could not read it either. */
        char self[64], magic[2];
        snprintf(self, sizeof(self), "/proc/self/fd/%d", exe);
        _cleanup_close_ int text = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        bool script = text >= 0 && pread(text, magic, sizeof(magic), 0) == 2 && magic[0] == '#' && magic[1] == '!';
        if (dry_run) {
                snprintf(output, output_size, "would run %s", command);
                return 0;
        }
        /* A clean environment: a fixed PATH, the locale, and the decision. */
        char env[12][600];
        char *envp[13];
        unsigned e = 0;
        snprintf(env[e++], sizeof(env[0]), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        snprintf(env[e++], sizeof(env[0]), "LANG=C.UTF-8");
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_EVENT=%s", ctx->event);
        /* The reason and the target quote the server (its command name, its errors): controls escaped. */
        char safe[4 * 500];
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_REASON=%.500s", escape_untrusted(ctx->reason ? ctx->reason : "", safe, 500));
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_TARGET=%.500s", escape_untrusted(ctx->target ? ctx->target : "", safe, 500));
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_LEVEL=%s", ctx->level ? ctx->level : "");
        /* Bytes, or empty when the decision had no figure (a trace without a working set). */
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_WORKING_SET=%s", "");
        if (ctx->working_set != SIZE_UNKNOWN)
                snprintf(env[e - 1], sizeof(env[0]), "MEMGOV_WORKING_SET=%" PRIu64, ctx->working_set);
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_BUDGET=%s", "");
        if (ctx->budget != SIZE_UNKNOWN)
                snprintf(env[e - 1], sizeof(env[0]), "MEMGOV_BUDGET=%" PRIu64, ctx->budget);
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_MAX_SESSIONS=%u", ctx->max_sessions);
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_MIN_MEMORY=%" PRIu64, ctx->min_memory);
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_MIN_IDLE_S=%" PRIu64, ctx->min_idle / USEC_PER_SEC);
        for (unsigned i = 0; i < e; i++)
                envp[i] = env[i];
        envp[e] = NULL;

        int out[2], err[2];
        if (pipe2(out, O_CLOEXEC) < 0)
                return negative_errno();
        if (pipe2(err, O_CLOEXEC) < 0) {
                r = negative_errno();
                close(out[0]);
                close(out[1]);
                return r;
        }
        /* No signal handler of ours may run in the child before it has reset them all. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t pid = fork();
        if (pid == 0)
                hook_child(exe, script, out[1], err[1], argv, envp);
        r = pid < 0 ? negative_errno() : 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(out[1]);
        close(err[1]);
        int child_errno = 0;
        if (r == 0 && read(err[0], &child_errno, sizeof(child_errno)) == sizeof(child_errno)) {
                (void) waitpid(pid, NULL, 0); /* it is exiting: it wrote its last word */
                r = -child_errno;
        }
        close(err[0]);
        if (r < 0) {
                close(out[0]);
                snprintf(why, why_size, "cannot run %s: %s", argv[0], strerror(-r));
                return r;
        }
        _cleanup_close_ int pidfd = pidfd_open(pid, 0);

        /* Output until the hook exits (not until the pipe's EOF: something it started may hold
         * the pipe open), or until the deadline. */
        char buf[4096];
        size_t len = 0;
        usec_t deadline = now_clock(CLOCK_MONOTONIC) + timeout;
        bool timed_out = false, exited = false, eof = false;
        for (;;) {
                exited = hook_exited(pid);
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (!exited && now >= deadline) {
                        timed_out = true;
                        break;
                }
                struct pollfd p[2] = { { .fd = eof ? -1 : out[0], .events = POLLIN },
                                       { .fd = pidfd, .events = POLLIN } };
                usec_t wait = exited ? 0 : pidfd >= 0 ? deadline - now : MIN(deadline - now, HOOK_POLL);
                int k = poll(p, 2, (int) MIN(wait / USEC_PER_MSEC + !exited, (usec_t) INT32_MAX));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 || !(p[0].revents & (POLLIN | POLLHUP))) {
                        if (exited)
                                break; /* gone, and nothing more to read right now */
                        continue;
                }
                ssize_t got = read(out[0], buf + len, len < sizeof(buf) - 1 ? sizeof(buf) - 1 - len : 0);
                if (got <= 0) {
                        if (len == sizeof(buf) - 1) {
                                /* Full: keep the tail, which holds the last line. */
                                memmove(buf, buf + len / 2, len - len / 2);
                                len -= len / 2;
                                continue;
                        }
                        eof = true; /* the command closed its output */
                        if (exited)
                                break;
                        continue;
                }
                len += (size_t) got;
        }
        close(out[0]);

        /* Its whole group: what it started ends with it, also what ignores SIGTERM. The hook is
         * not reaped before its group is signalled, so its pid is not anybody else's. */
        if (timed_out) {
                (void) kill(-pid, SIGTERM);
                (void) hook_wait(pid, pidfd, now_clock(CLOCK_MONOTONIC) + HOOK_GRACE);
                (void) kill(-pid, SIGKILL);
        }
        int status = 0;
        if (!hook_wait(pid, pidfd, now_clock(CLOCK_MONOTONIC) + HOOK_REAP)) {
                snprintf(why, why_size, "%s (pid %d) does not die even of SIGKILL: left behind", argv[0], (int) pid);
                return -ETIMEDOUT;
        }
        (void) waitpid(pid, &status, 0);

        buf[len] = '\0';
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
                buf[--len] = '\0';
        const char *last = strrchr(buf, '\n');
        snprintf(output, output_size, "%s", last ? last + 1 : buf);

        if (timed_out) {
                snprintf(why, why_size, "%s ran longer than its timeout and was ended", argv[0]);
                return -ETIMEDOUT;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                snprintf(why, why_size, "%s %s %d%s%s", argv[0], WIFEXITED(status) ? "exited with status" : "was killed by signal",
                         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), output[0] ? ": " : "", output);
                return -EPROTO;
        }
        return 0;
}

/* Whether pid is listed in cgroup.procs of the cgroup at dirfd or of one below it; calls found
 * for each pid listed there when found is not NULL (then the walk goes on to the end). */
static bool cgroup_walk(int dirfd, pid_t pid, unsigned depth, void (*found)(pid_t, void *), void *userdata) {
        _cleanup_free_ char *procs = NULL;
        size_t len;
        bool hit = false;

        if (read_full_file_at(dirfd, "cgroup.procs", 1 << 22, &procs, &len) == 0)
                for (char *p = procs, *end; *p; p = end) {
                        long v = strtol(p, &end, 10);
                        if (end == p)
                                break;
                        if (v > 0 && (pid_t) v == pid)
                                hit = true;
                        if (v > 0 && found)
                                found((pid_t) v, userdata);
                }
        if ((hit && !found) || depth == 0)
                return hit;
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
                if (fd >= 0)
                        close(fd);
                return hit;
        }
        struct dirent *de;
        while ((de = readdir(d)) && !(hit && !found)) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0 && cgroup_walk(sub, pid, depth - 1, found, userdata))
                        hit = true;
        }
        closedir(d);
        return hit;
}

typedef struct SignalRun {
        const char *name;
        const ActionTarget *target;
        int sig;
        bool dry_run;
        int count;
} SignalRun;

/* Through a pidfd opened first: what is checked after it (the name, the cgroup) is this very
 * process's, and the signal reaches it, not a process that got its number since. */
static void signal_one(pid_t pid, void *userdata) {
        SignalRun *s = userdata;
        char comm[64];

        _cleanup_close_ int fd = pidfd_open(pid, 0);
        if (fd < 0)
                return;
        if (proc_read_comm(AT_FDCWD, pid, comm, sizeof(comm)) < 0 || !streq(comm, s->name))
                return;
        if (s->target->cgroup_fd >= 0 ? !cgroup_walk(s->target->cgroup_fd, pid, 16, NULL, NULL)
                                      : action_target_check(s->target) < 0)
                return; /* moved out of the cgroup since it was listed; not the server any more */
        /* Still there after the checks: the pid was not reused while they read /proc. */
        if (pidfd_send_signal(fd, s->dry_run ? 0 : s->sig, NULL, 0) == 0)
                s->count++;
}

int signal_processes(const char *name, int sig, const ActionTarget *t, bool dry_run, char *why, size_t why_size) {
        assert(name);
        assert(t);
        assert(why);
        SignalRun s = { .name = name, .target = t, .sig = sig, .dry_run = dry_run };

        /* The target's processes only: a name is no one's, another container's server has it too. */
        if (t->cgroup_fd >= 0)
                (void) cgroup_walk(t->cgroup_fd, 0, 16, signal_one, &s);
        else if (t->pid > 0)
                signal_one(t->pid, &s);
        if (s.count == 0) {
                if (t->cgroup_fd >= 0)
                        snprintf(why, why_size, "no process named %s in cgroup %s", name,
                                 t->cgroup[0] ? t->cgroup : "(the target's)");
                else
                        snprintf(why, why_size, "the target has no cgroup, and its server (pid %d) is not named %s",
                                 (int) t->pid, name);
                return -ESRCH;
        }
        return s.count;
}
