/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hooks run real programs: a clean environment with the decision in it, no shell, a timeout. */
#include "test-util.h"

#include "memgov/fileio.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/act/hooks.h"

/* Ours, ahead of libc's for the code under test: a kernel or a sandbox without pidfds. */
static bool pidfd_fails;
int pidfd_open(pid_t pid, unsigned flags) {
        if (pidfd_fails) {
                errno = ENOSYS;
                return -1;
        }
        return (int) syscall(SYS_pidfd_open, pid, flags);
}

static HookContext ctx(void) {
        return (HookContext) { .event = "reset", .reason = "working set 9G = 90% of 10G budget", .target = "mariadb.service",
                                .level = "reset", .working_set = 9, .budget = 10, .max_sessions = 4, .min_memory = 64,
                                .min_idle = 30 * USEC_PER_SEC };
}

static void test_environment(void **state) {
        char out[256], why[512];
        HookContext c = ctx();
        /* env prints its environment: exactly the clean one, the last line is the last variable. */
        assert_int_equal(hook_run("/usr/bin/env", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "MEMGOV_MIN_IDLE_S=30");
        setenv("MEMGOV_SECRET_FROM_PARENT", "x", 1);
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_SECRET_FROM_PARENT", &c, 5 * USEC_PER_SEC, false, out, sizeof(out),
                                  why, sizeof(why)),
                         -EPROTO);
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_REASON", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why,
                                  sizeof(why)),
                         0);
        assert_string_equal(out, "working set 9G = 90% of 10G budget");
        /* The target quotes the server's command name, which it sets itself: a newline or an
         * escape sequence reaches the hook escaped. */
        c.target = "cgroup /db (\nMAINPID=1\033[2J pid 7)";
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_TARGET", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why,
                                  sizeof(why)),
                         0);
        assert_string_equal(out, "cgroup /db (\\x0aMAINPID=1\\x1b[2J pid 7)");
        c = ctx();
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_WORKING_SET", &c, 5 * USEC_PER_SEC, false, out, sizeof(out),
                                  why, sizeof(why)),
                         0);
        assert_string_equal(out, "9");
        /* Not known: empty, never a sentinel number. */
        c.budget = SIZE_UNKNOWN;
        assert_int_equal(hook_run("/usr/bin/printenv MEMGOV_BUDGET", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why,
                                  sizeof(why)),
                         0);
        assert_string_equal(out, "");
        c = ctx();
        /* Arguments are words, not shell: no expansion happens. */
        assert_int_equal(hook_run("/bin/echo \"$HOME\" $(id)", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "$HOME $(id)");
}

static void test_failures(void **state) {
        char out[256], why[512];
        HookContext c = ctx();
        assert_int_equal(hook_run("/bin/false", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPROTO);
        assert_string_contains(why, "/bin/false exited with status 1");
        assert_int_equal(hook_run("false", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EINVAL);
        assert_int_equal(hook_run("/nonexistent/tool", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -ENOENT);

        /* A hook that hangs is ended at its timeout, and so are its descendants' hold on us. */
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        assert_int_equal(hook_run("/bin/sleep 30", &c, 500 * USEC_PER_MSEC, false, out, sizeof(out), why, sizeof(why)), -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &b);
        assert_true(b.tv_sec - a.tv_sec < 4);
        assert_string_contains(why, "ran longer than its timeout");

        /* Dry run: checked, not run. */
        assert_int_equal(hook_run("/bin/false", &c, USEC_PER_SEC, true, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "would run /bin/false");
}

/* A directory of root's for the test's hooks: mkdtemp's 0700 below the sticky /tmp. */
static char hook_dir[] = "/tmp/memgov-hooks-XXXXXX";

static void write_hook(const char *name, const char *text, mode_t mode, uid_t uid, char *path, size_t size) {
        snprintf(path, size, "%s/%s", hook_dir, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(chmod(path, mode), 0);
        assert_int_equal(chown(path, uid, 0), 0);
}

static usec_t mono(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}

static pid_t last_word_pid(const char *out) {
        const char *sp = strrchr(out, ' ');
        assert_non_null(sp);
        return (pid_t) atoi(sp + 1);
}

/* Reaps pid (ours as the subreaper once its parent is gone) if it dies within a second. */
static bool reaped_within_a_second(pid_t pid, int *status) {
        for (int i = 0; i < 100; i++) {
                if (waitpid(pid, status, WNOHANG) == pid)
                        return true;
                usleep(10000);
        }
        return false;
}

static void test_timeout_ends_the_group(void **state) {
        char out[256], why[512], hook[300];
        HookContext c = ctx();
        /* The hook starts a child that ignores SIGTERM, says its own pid (its session's) and the
         * child's, and hangs. */
        write_hook("hang", "#!/bin/sh\n(trap '' TERM; exec sleep 30) &\necho $$ $!\nexec sleep 30\n", 0755, 0, hook,
                   sizeof(hook));
        usec_t a = mono();
        assert_int_equal(hook_run(hook, &c, 500 * USEC_PER_MSEC, false, out, sizeof(out), why, sizeof(why)), -ETIMEDOUT);
        usec_t took = mono() - a;
        assert_string_contains(why, "ran longer than its timeout");
        /* The hook died of the SIGTERM: no grace period was waited out. */
        assert_true(took < 2 * USEC_PER_SEC);
        int session, child;
        assert_int_equal(sscanf(out, "%d %d", &session, &child), 2);
        assert_true(session > 1 && child > 1);
        int status;
        bool gone = reaped_within_a_second(child, &status);
        if (!gone)
                kill(child, SIGKILL);
        assert_true(gone);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* Nothing of its session is left. */
        assert_int_equal(kill(-session, 0), -1);
        assert_int_equal(errno, ESRCH);
}

/* Without a pidfd the hook's exit is looked for, within the same bounds. */
static void test_without_pidfd(void **state) {
        char out[256], why[512], hook[300];
        HookContext c = ctx();
        pidfd_fails = true;
        usec_t a = mono();
        assert_int_equal(hook_run("/bin/echo quick", &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_true(mono() - a < USEC_PER_SEC);
        assert_string_equal(out, "quick");
        write_hook("hang2", "#!/bin/sh\n(trap '' TERM; exec sleep 30) &\necho $$ $!\nexec sleep 30\n", 0755, 0, hook,
                   sizeof(hook));
        a = mono();
        int r = hook_run(hook, &c, 500 * USEC_PER_MSEC, false, out, sizeof(out), why, sizeof(why));
        usec_t took = mono() - a;
        pidfd_fails = false;
        assert_int_equal(r, -ETIMEDOUT);
        assert_true(took < 2 * USEC_PER_SEC);
        int session, child, status;
        assert_int_equal(sscanf(out, "%d %d", &session, &child), 2);
        bool gone = reaped_within_a_second(child, &status);
        if (!gone)
                kill(child, SIGKILL);
        assert_true(gone);
        assert_int_equal(kill(-session, 0), -1);
}

static void test_output_held_open(void **state) {
        char out[256], why[512], hook[300];
        HookContext c = ctx();
        /* Exits at once, leaving behind something that holds its output open: done when it exits. */
        write_hook("detach", "#!/bin/sh\nsleep 30 &\necho started $!\n", 0755, 0, hook, sizeof(hook));
        usec_t a = mono();
        assert_int_equal(hook_run(hook, &c, 3 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_true(mono() - a < USEC_PER_SEC);
        pid_t left = last_word_pid(out);
        assert_int_equal(kill(left, SIGKILL), 0);
        int status;
        assert_true(reaped_within_a_second(left, &status));
}

static void test_trust(void **state) {
        char out[256], why[512], hook[300], dir[300], sub[300];
        HookContext c = ctx();
        const uid_t nobody = 65534;

        write_hook("ok", "#!/bin/sh\necho trusted\n", 0755, 0, hook, sizeof(hook));
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "trusted");
        if (geteuid() != 0) {
                /* Not root: nothing is enforced, as for the policy file. */
                write_hook("group", "#!/bin/sh\necho group\n", 0775, geteuid(), hook, sizeof(hook));
                assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
                return;
        }

        write_hook("nobodys", "#!/bin/sh\necho ran\n", 0755, nobody, hook, sizeof(hook));
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPERM);
        assert_string_contains(why, "not trusted to run as root: owned by uid 65534, not root");
        assert_string_equal(out, "");
        /* Checked in a dry run too: the dry run says what would happen. */
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, true, out, sizeof(out), why, sizeof(why)), -EPERM);

        /* Not a file: refused without being opened (a FIFO would block the open). */
        snprintf(dir, sizeof(dir), "%s/fifo", hook_dir);
        assert_int_equal(mkfifo(dir, 0755), 0);
        assert_int_equal(hook_run(dir, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EACCES);
        assert_string_contains(why, "fifo: not a regular file");
        unlink(dir);

        write_hook("group", "#!/bin/sh\necho ran\n", 0775, 0, hook, sizeof(hook));
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPERM);
        assert_string_contains(why, "writable by its group (mode 0775");
        write_hook("world", "#!/bin/sh\necho ran\n", 0757, 0, hook, sizeof(hook));
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPERM);
        assert_string_contains(why, "writable by everyone");

        /* A trusted file in a directory anyone can write to: refused, unless the directory is sticky. */
        snprintf(dir, sizeof(dir), "%s/open", hook_dir);
        assert_int_equal(mkdir(dir, 0777), 0);
        assert_int_equal(chmod(dir, 0777), 0);
        snprintf(sub, sizeof(sub), "%s/inner", dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        write_hook("open/inner/hook", "#!/bin/sh\necho ran\n", 0755, 0, hook, sizeof(hook));
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPERM);
        assert_string_contains(why, "its directory ");
        assert_string_contains(why, "/open is writable by others (mode 0777");
        assert_string_equal(out, "");
        assert_int_equal(chmod(dir, 01777), 0);
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), 0);
        assert_string_equal(out, "ran");
        /* ... and refused again when the directory is not root's. */
        assert_int_equal(chmod(dir, 0755), 0);
        assert_int_equal(chown(dir, nobody, 0), 0);
        assert_int_equal(hook_run(hook, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPERM);
        assert_string_contains(why, "/open is not owned by root");
        /* Through a symbolic link: the directories of the file it leads to are the ones checked. */
        char link[300];
        snprintf(link, sizeof(link), "%s/link", hook_dir);
        assert_int_equal(symlink(hook, link), 0);
        assert_int_equal(hook_run(link, &c, 5 * USEC_PER_SEC, false, out, sizeof(out), why, sizeof(why)), -EPERM);
        assert_string_contains(why, "/open is not owned by root");
        unlink(link);
        unlink(hook);
        rmdir(sub);
        rmdir(dir);
}

/* Two processes named alike, one of them listed in the cgroup: a copy of sleep. */
static pid_t start_named(const char *path) {
        pid_t pid = fork();
        if (pid == 0) {
                execl(path, "memgov-hook-t", "30", (char *) NULL);
                _exit(127);
        }
        assert_true(pid > 0);
        return pid;
}

/* A copy of sleep(1) at path: processes of a name of their own. */
static void copy_sleep(const char *path) {
        size_t len;
        char *bin = NULL;
        assert_int_equal(read_full_file_at(-100, "/bin/sleep", 1 << 24, &bin, &len), 0);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(bin, 1, len, f), len);
        fclose(f);
        free(bin);
        assert_int_equal(chmod(path, 0755), 0);
}

static void test_signal_processes(void **state) {
        char why[256], path[300], cg[300], procs[300];
        snprintf(path, sizeof(path), "%s/memgov-hook-t", hook_dir);
        copy_sleep(path);
        FILE *f;
        pid_t inside = start_named(path), outside = start_named(path);
        usleep(200000);

        /* A cgroup as its files show it: cgroup.procs lists the one inside, in a child cgroup. */
        snprintf(cg, sizeof(cg), "%s/cg", hook_dir);
        assert_int_equal(mkdir(cg, 0755), 0);
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
        f = fopen(procs, "w");
        fclose(f);
        snprintf(procs, sizeof(procs), "%s/cg/payload", hook_dir);
        assert_int_equal(mkdir(procs, 0755), 0);
        snprintf(procs, sizeof(procs), "%s/cg/payload/cgroup.procs", hook_dir);
        f = fopen(procs, "w");
        fprintf(f, "%d\n", (int) inside);
        fclose(f);
        ActionTarget t = { .cgroup_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC), .pid = inside };
        snprintf(t.cgroup, sizeof(t.cgroup), "/db");
        assert_true(t.cgroup_fd >= 0);

        assert_int_equal(signal_processes("memgov-none-xx", SIGTERM, &t, false, why, sizeof(why)), -ESRCH);
        assert_string_equal(why, "no process named memgov-none-xx in cgroup /db");
        /* Dry run finds, does not send. */
        assert_int_equal(signal_processes("memgov-hook-t", SIGTERM, &t, true, why, sizeof(why)), 1);
        assert_int_equal(kill(inside, 0), 0);
        assert_int_equal(signal_processes("memgov-hook-t", SIGTERM, &t, false, why, sizeof(why)), 1);
        int status;
        assert_int_equal(waitpid(inside, &status, 0), inside);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        /* The one of the same name outside the cgroup saw nothing. */
        assert_int_equal(waitpid(outside, &status, WNOHANG), 0);
        /* Gone, and its number listed still: nobody else is reached through it. */
        assert_int_equal(signal_processes("memgov-hook-t", SIGTERM, &t, false, why, sizeof(why)), -ESRCH);
        close(t.cgroup_fd);

        /* No cgroup: the server process alone, if so named. */
        ActionTarget p = { .cgroup_fd = -1, .pid = outside };
        assert_int_equal(signal_processes("sleep", SIGTERM, &p, false, why, sizeof(why)), -ESRCH);
        assert_string_contains(why, "is not named sleep");
        assert_int_equal(signal_processes("memgov-hook-t", SIGTERM, &p, false, why, sizeof(why)), 1);
        assert_int_equal(waitpid(outside, &status, 0), outside);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        unlink(procs);
        snprintf(procs, sizeof(procs), "%s/cg/payload", hook_dir);
        rmdir(procs);
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
        unlink(procs);
        rmdir(cg);
}

/* A cgroup v2 hierarchy mounted writable here, if any: its mount point. */
static bool cgroup2_mount(char *buf, size_t size) {
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[1024];
        bool found = false;
        if (!f)
                return false;
        while (!found && fgets(line, sizeof(line), f)) {
                char mnt[512], opts[256];
                const char *sep = strstr(line, " - cgroup2 ");
                if (sep && sscanf(line, "%*d %*d %*s %*s %511s %255s", mnt, opts) == 2 && strncmp(opts, "rw", 2) == 0) {
                        snprintf(buf, size, "%s", mnt);
                        found = true;
                }
        }
        fclose(f);
        return found;
}

/* The same on the kernel's cgroup v2, where a cgroup can be made here: cgroup.procs as the
 * kernel writes it, a process moved in for real. */
static void test_signal_processes_cgroup2(void **state) {
        char why[256], path[300], mnt[512], cg[600], procs[700];
        if (!cgroup2_mount(mnt, sizeof(mnt))) {
                print_message("no cgroup v2 hierarchy mounted writable here: the cgroup files of test_signal_processes only\n");
                return;
        }
        snprintf(cg, sizeof(cg), "%s/memgov-test-hooks-%d", mnt, (int) getpid());
        if (mkdir(cg, 0755) < 0) {
                print_message("cannot create a cgroup in %s (%s): the cgroup files of test_signal_processes only\n", mnt,
                              strerror(errno));
                return;
        }
        snprintf(path, sizeof(path), "%s/memgov-hook-t", hook_dir);
        copy_sleep(path);
        FILE *f;
        pid_t inside = start_named(path), outside = start_named(path);
        snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg);
        f = fopen(procs, "w");
        assert_non_null(f);
        fprintf(f, "%d\n", (int) inside);
        assert_int_equal(fclose(f), 0);
        usleep(200000);

        ActionTarget t = { .cgroup_fd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC), .pid = inside };
        snprintf(t.cgroup, sizeof(t.cgroup), "/memgov-test-hooks");
        assert_true(t.cgroup_fd >= 0);
        assert_int_equal(signal_processes("memgov-hook-t", SIGTERM, &t, false, why, sizeof(why)), 1);
        int status;
        assert_int_equal(waitpid(inside, &status, 0), inside);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        assert_int_equal(waitpid(outside, &status, WNOHANG), 0);
        close(t.cgroup_fd);
        kill(outside, SIGKILL);
        waitpid(outside, &status, 0);
        unlink(path);
        assert_int_equal(rmdir(cg), 0);
}

static int setup(void **state) {
        /* Orphans of the hooks come to us, to be reaped and looked at. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || !mkdtemp(hook_dir))
                return -1;
        return 0;
}

static int teardown(void **state) {
        char cmd[100];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", hook_dir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_environment),
                cmocka_unit_test(test_failures),
                cmocka_unit_test(test_timeout_ends_the_group),
                cmocka_unit_test(test_without_pidfd),
                cmocka_unit_test(test_output_held_open),
                cmocka_unit_test(test_trust),
                cmocka_unit_test(test_signal_processes),
                cmocka_unit_test(test_signal_processes_cgroup2),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
