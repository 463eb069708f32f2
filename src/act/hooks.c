/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hooks.h"
#include "memgov/argv.h"
#include "memgov/clock.h"
#include "memgov/fileio.h"

bool pidfd_wait_exit(int pidfd, usec_t timeout) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int ms = (int) MIN(timeout / USEC_PER_MSEC, (usec_t) INT32_MAX);
        return poll(&p, 1, ms) > 0;
}

int hook_run(const char *command, const HookContext *ctx, usec_t timeout, bool dry_run, char *output,
             size_t output_size, char *why, size_t why_size) {
        char words[1024], *argv[ARGV_MAX + 1];
        unsigned n;
        int r;

        output[0] = '\0';
        r = argv_split(command, words, sizeof(words), argv, &n);
        if (r < 0 || n == 0) {
                snprintf(why, why_size, "'%s' is not a command (an absolute path and its arguments)", command);
                return r < 0 ? r : -EINVAL;
        }
        if (access(argv[0], X_OK) < 0) {
                r = negative_errno();
                snprintf(why, why_size, "%s: %s", argv[0], strerror(-r));
                return r;
        }
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
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_REASON=%.500s", ctx->reason ? ctx->reason : "");
        snprintf(env[e++], sizeof(env[0]), "MEMGOV_TARGET=%.500s", ctx->target ? ctx->target : "");
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

        int out[2];
        if (pipe2(out, O_CLOEXEC) < 0)
                return negative_errno();
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, out[1], STDERR_FILENO);
        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        /* The child starts with no blocked signals and default dispositions, whatever ours are. */
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
        pid_t pid;
        r = -posix_spawn(&pid, argv[0], &fa, &attr, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(out[1]);
        if (r < 0) {
                close(out[0]);
                snprintf(why, why_size, "cannot run %s: %s", argv[0], strerror(-r));
                return r;
        }
        _cleanup_close_ int pidfd = pidfd_open(pid, 0);

        char buf[4096];
        size_t len = 0;
        usec_t deadline = now_clock(CLOCK_MONOTONIC) + timeout;
        bool timed_out = false;
        for (;;) {
                usec_t now = now_clock(CLOCK_MONOTONIC);
                if (now >= deadline) {
                        timed_out = true;
                        break;
                }
                struct pollfd p = { .fd = out[0], .events = POLLIN };
                int k = poll(&p, 1, (int) MIN((deadline - now) / USEC_PER_MSEC + 1, (usec_t) INT32_MAX));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        continue;
                ssize_t got = read(out[0], buf + len, len < sizeof(buf) - 1 ? sizeof(buf) - 1 - len : 0);
                if (got <= 0) {
                        if (len == sizeof(buf) - 1) {
                                /* Full: keep the tail, which holds the last line. */
                                memmove(buf, buf + len / 2, len - len / 2);
                                len -= len / 2;
                                continue;
                        }
                        break; /* EOF: the command closed its output */
                }
                len += (size_t) got;
        }
        close(out[0]);
        if (!timed_out && pidfd >= 0) {
                usec_t now = now_clock(CLOCK_MONOTONIC);
                timed_out = !pidfd_wait_exit(pidfd, deadline > now ? deadline - now : 0);
        }
        if (timed_out && pidfd >= 0) {
                (void) pidfd_send_signal(pidfd, SIGTERM, NULL, 0);
                if (!pidfd_wait_exit(pidfd, 5 * USEC_PER_SEC))
                        (void) pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        }
        int status = 0;
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

int signal_processes(const char *name, int sig, bool dry_run, char *why, size_t why_size) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        int count = 0;

        if (!d) {
                snprintf(why, why_size, "cannot list processes: %m");
                return negative_errno();
        }
        while ((de = readdir(d))) {
                char path[64], comm[64];
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || pid <= 0)
                        continue;
                snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
                ssize_t n = read_small_file_at(AT_FDCWD, path, comm, sizeof(comm));
                if (n <= 0)
                        continue;
                if (comm[n - 1] == '\n')
                        comm[n - 1] = '\0';
                if (!streq(comm, name))
                        continue;
                /* Through a pidfd: the signal reaches this very process, not a reused pid. */
                int fd = pidfd_open((pid_t) pid, 0);
                if (fd < 0)
                        continue;
                if (dry_run || pidfd_send_signal(fd, sig, NULL, 0) == 0)
                        count++;
                close(fd);
        }
        closedir(d);
        if (count == 0) {
                snprintf(why, why_size, "no process named %s", name);
                return -ESRCH;
        }
        return count;
}
