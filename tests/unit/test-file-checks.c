/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The files memgov trusts: a policy (it names commands memgov runs) and an SQL option file (it
 * holds a password). Each refusal, on real files. And how memgov opens a file as a server in
 * another root sees it: never one of the host's. */
#include "test-util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/policy-file.h"
#include "memgov/sql.h"

static char dir[] = "/tmp/memgov-file-checks.XXXXXX";

static void collect(void *userdata, const char *message) {
        snprintf(userdata, 512, "%s", message);
}

static void test_option_file(void **state) {
        char path[256], why[512];
        make_file(dir, "client.cnf", "[client]\nuser=memgov\npassword=x\n", 0640, path, sizeof(path));
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "is readable by its group (mode 0640; expected chmod 600): it holds a password");
        assert_int_equal(chmod(path, 0604), 0);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "is readable by everyone");
        assert_int_equal(chmod(path, 0600), 0);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), 0);
        if (geteuid() == 0) {
                /* Running as root, it must be root's. */
                assert_int_equal(chown(path, 1000, 1000), 0);
                assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
                assert_string_contains(why, "owned by uid 1000");
        }
        snprintf(path, sizeof(path), "%s/missing.cnf", dir);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -ENOENT);
        assert_string_contains(why, "No such file or directory");
}

static void test_policy_file(void **state) {
        char path[256], msg[512] = "";
        Policy p;
        assert_int_equal(policy_load_default(&p), 0);
        make_file(dir, "policy.ini", "[trim]\nat = 70%\n", 0664, path, sizeof(path));
        if (geteuid() == 0) {
                /* Writable by its group: someone else could make memgov run their hooks. */
                assert_true(policy_load_file(path, &p, collect, msg) != 0);
                assert_string_contains(msg, "writable by its group");
                assert_int_equal(chmod(path, 0644), 0);
                assert_int_equal(chown(path, 1000, 0), 0);
                msg[0] = '\0';
                assert_true(policy_load_file(path, &p, collect, msg) != 0);
                assert_string_contains(msg, "owned by uid 1000");
                assert_int_equal(chown(path, 0, 0), 0);
        } else
                assert_int_equal(chmod(path, 0644), 0);
        assert_int_equal(policy_load_file(path, &p, collect, msg), 0);
        assert_int_equal(p.step[LEVEL_TRIM].at, 7000);
}

/* A server's root with links that point out of it: the file inside is what opens, or nothing,
 * never the host's /etc/passwd; openat2() and the walk without it agree on every path. */
static void test_open_in_root(void **state) {
        char root[256], sub[300], path[256];
        snprintf(root, sizeof(root), "%s/root", dir);
        snprintf(sub, sizeof(sub), "%s/etc", root);
        assert_int_equal(mkdir(root, 0755), 0);
        assert_int_equal(mkdir(sub, 0755), 0);
        make_file(sub, "passwd", "inside\n", 0644, path, sizeof(path));
        make_file(root, "file", "x", 0644, path, sizeof(path));
        static const struct { const char *name, *to; } links[] = {
                { "abs", "/etc/passwd" },          /* absolute: from the server's root */
                { "rel", "etc/passwd" },
                { "up", "../../../../../etc/passwd" }, /* ".." stops at the root */
                { "dir", "/etc" },
                { "magic", "/proc/self/root/etc/passwd" }, /* no /proc in this root: nothing */
                { "loop", "loop" },
                { "chain", "abs" },
        };
        for (size_t i = 0; i < ELEMENTSOF(links); i++) {
                snprintf(path, sizeof(path), "%s/%s", root, links[i].name);
                assert_int_equal(symlink(links[i].to, path), 0);
        }
        int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        assert_true(rootfd >= 0);
        struct stat inside;
        snprintf(path, sizeof(path), "%s/passwd", sub);
        assert_int_equal(stat(path, &inside), 0);

        static const struct { const char *path; int expect; } cases[] = {
                { "/etc/passwd", 0 }, { "etc/passwd", 0 }, { "abs", 0 }, { "rel", 0 }, { "up", 0 },
                { "/../../etc/passwd", 0 }, { "dir/passwd", 0 }, { "chain", 0 }, { "etc/./passwd", 0 },
                { "magic", -ENOENT }, { "loop", -ELOOP }, { "file/x", -ENOTDIR }, { "missing", -ENOENT },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                for (int walk = 0; walk < 2; walk++) {
                        int fd = open_in_root(rootfd, cases[i].path, O_RDONLY, walk);
                        if (cases[i].expect < 0) {
                                if (fd != cases[i].expect)
                                        fail_msg("%s (walk %d): %d, expected %d", cases[i].path, walk, fd, cases[i].expect);
                                continue;
                        }
                        if (fd < 0)
                                fail_msg("%s (walk %d): %s", cases[i].path, walk, strerror(-fd));
                        struct stat st;
                        assert_int_equal(fstat(fd, &st), 0);
                        assert_true(st.st_ino == inside.st_ino && st.st_dev == inside.st_dev);
                        char buf[16] = "";
                        assert_int_equal(read(fd, buf, sizeof(buf) - 1), 7);
                        assert_string_equal(buf, "inside\n");
                        close(fd);
                }
        /* O_PATH of a directory, and of the root itself. */
        for (int walk = 0; walk < 2; walk++) {
                int fd = open_in_root(rootfd, "dir", O_PATH, walk);
                assert_true(fd >= 0);
                struct stat st;
                assert_int_equal(fstat(fd, &st), 0);
                assert_true(S_ISDIR(st.st_mode));
                close(fd);
                fd = open_in_root(rootfd, "/", O_PATH, walk);
                assert_true(fd >= 0);
                close(fd);
        }

        /* Below the directory only: the same links, each one that leaves it refused (-EXDEV), by
         * openat2(RESOLVE_BENEATH) and by the walk alike. */
        static const struct { const char *path; int expect; } beneath[] = {
                { "etc/passwd", 0 }, { "rel", 0 }, { "etc/../etc/passwd", 0 }, { "etc/./passwd", 0 },
                { "/etc/passwd", -EXDEV }, { "abs", -EXDEV }, { "up", -EXDEV }, { "chain", -EXDEV },
                { "dir/passwd", -EXDEV }, { "magic", -EXDEV }, { "../root/etc/passwd", -EXDEV },
                { "loop", -ELOOP }, { "file/x", -ENOTDIR }, { "missing", -ENOENT },
        };
        for (size_t i = 0; i < ELEMENTSOF(beneath); i++)
                for (int walk = 0; walk < 2; walk++) {
                        int fd = open_beneath(rootfd, beneath[i].path, O_PATH, walk);
                        if (beneath[i].expect < 0) {
                                if (fd != beneath[i].expect)
                                        fail_msg("beneath %s (walk %d): %d, expected %d", beneath[i].path, walk, fd,
                                                 beneath[i].expect);
                                continue;
                        }
                        if (fd < 0)
                                fail_msg("beneath %s (walk %d): %s", beneath[i].path, walk, strerror(-fd));
                        struct stat st;
                        assert_int_equal(fstat(fd, &st), 0);
                        assert_true(st.st_ino == inside.st_ino && st.st_dev == inside.st_dev);
                        close(fd);
                }
        close(rootfd);
}

/* What reopen_regular opens: a regular file; never a FIFO (the open would block), a directory or
 * a device node (its open has effects), which are not even opened. */
static void test_reopen_regular(void **state) {
        char path[256];
        make_file(dir, "regular", "text", 0644, path, sizeof(path));
        int pathfd = open(path, O_PATH | O_CLOEXEC);
        assert_true(pathfd >= 0);
        struct stat st;
        int fd = reopen_regular(pathfd, O_RDONLY, &st);
        assert_true(fd >= 0);
        assert_true(S_ISREG(st.st_mode));
        char buf[8] = "";
        assert_int_equal(read(fd, buf, sizeof(buf)), 4);
        close(fd);
        /* The path renamed over after the O_PATH open: the file opened is still the one pinned. */
        char other[256];
        make_file(dir, "other", "other", 0644, other, sizeof(other));
        assert_int_equal(rename(other, path), 0);
        fd = reopen_regular(pathfd, O_RDONLY, NULL);
        assert_true(fd >= 0);
        memset(buf, 0, sizeof(buf));
        assert_int_equal(read(fd, buf, sizeof(buf)), 4);
        assert_string_equal(buf, "text");
        close(fd);
        close(pathfd);

        snprintf(path, sizeof(path), "%s/fifo", dir);
        assert_int_equal(mkfifo(path, 0600), 0);
        pathfd = open(path, O_PATH | O_CLOEXEC);
        assert_int_equal(reopen_regular(pathfd, O_RDONLY, NULL), -EBADFD);
        close(pathfd);
        pathfd = open(dir, O_PATH | O_CLOEXEC);
        assert_int_equal(reopen_regular(pathfd, O_RDONLY, NULL), -EBADFD);
        close(pathfd);
        if (geteuid() == 0) {
                /* /dev/null's numbers, so that an open by mistake would do nothing either. */
                snprintf(path, sizeof(path), "%s/libc.so.6", dir);
                assert_int_equal(mknod(path, S_IFCHR | 0644, makedev(1, 3)), 0);
                pathfd = open(path, O_PATH | O_CLOEXEC);
                assert_true(pathfd >= 0);
                assert_int_equal(reopen_regular(pathfd, O_RDONLY, NULL), -EBADFD);
                close(pathfd);
        }
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_option_file),
                cmocka_unit_test(test_policy_file),
                cmocka_unit_test(test_open_in_root),
                cmocka_unit_test(test_reopen_regular),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
