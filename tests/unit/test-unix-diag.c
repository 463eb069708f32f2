/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How the server's unix socket is found: the sock_diag reply parser on a dump captured from a
 * real kernel (tests/data/unix-diag/capture.py), where one socket's path forges a /proc/net/unix
 * line naming the server's inode; then sql_find_socket() on this very process, with a forger
 * in another process. */
#include "test-util.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memgov/sql.h"
#include "memgov/unix-diag.h"

typedef struct Captured {
        uint64_t inode, vfs_inode, vfs_dev;
        char path[160];
} Captured;

/* sockets.txt: NAME INODE VFS_INODE VFS_DEV 'PATH' (a Python repr: \n for a newline). */
static void captured(const char *name, Captured *ret) {
        size_t len;
        _cleanup_free_ char *text = fixture("unix-diag/sockets.txt", &len);
        char want[32];
        snprintf(want, sizeof(want), "%s ", name);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                if (strncmp(line, want, strlen(want)) != 0)
                        continue;
                unsigned long long ino, vino, vdev;
                int used = 0;
                assert_int_equal(sscanf(line + strlen(want), "%llu %llu %llu %n", &ino, &vino, &vdev, &used), 3);
                *ret = (Captured) { .inode = ino, .vfs_inode = vino, .vfs_dev = vdev };
                const char *q = line + strlen(want) + used;
                size_t n = 0;
                if (*q == '\'') {
                        for (q++; *q && *q != '\'' && n + 1 < sizeof(ret->path); q++) {
                                if (q[0] == '\\' && q[1] == 'n') {
                                        ret->path[n++] = '\n';
                                        q++;
                                } else
                                        ret->path[n++] = *q;
                        }
                }
                ret->path[n] = '\0';
                return;
        }
        fail_msg("no socket %s in sockets.txt", name);
}

static void test_captured_server(void **state) {
        size_t len;
        _cleanup_free_ char *reply = fixture("unix-diag/reply.bin", &len);
        Captured server, forger, impostor;
        captured("server", &server);
        captured("forger", &forger);
        captured("impostor", &impostor);

        /* The server's inode, with the forger's socket in the same dump: the server's own name,
         * not the impostor's path the forged line gives. */
        UnixDiagSocket s = {};
        assert_int_equal(unix_diag_parse(reply, len, &server.inode, 1, &s), 1);
        assert_true(s.found);
        assert_string_equal(s.path, server.path);
        assert_string_not_equal(s.path, impostor.path);
        assert_int_equal(s.inode, server.inode);
        assert_int_equal(s.vfs_inode, server.vfs_inode);
        /* stat's st_dev against the kernel's own dev_t encoding (major << 20 | minor). */
        assert_int_equal(makedev(s.vfs_dev >> 20, s.vfs_dev & 0xfffff), server.vfs_dev);

        /* The forger's own socket is named by its whole path, newline and all. */
        s = (UnixDiagSocket) {};
        assert_int_equal(unix_diag_parse(reply, len, &forger.inode, 1, &s), 1);
        assert_true(s.found);
        assert_string_equal(s.path, forger.path);
        assert_non_null(strchr(s.path, '\n'));
}

static void test_captured_not_found(void **state) {
        size_t len;
        _cleanup_free_ char *reply = fixture("unix-diag/reply.bin", &len);
        Captured abstract, idle;
        captured("abstract", &abstract);
        captured("idle", &idle);
        uint64_t none[] = { abstract.inode, idle.inode, 1 };

        /* An abstract name is no file; a socket that does not listen is not in the dump. */
        UnixDiagSocket s = {};
        assert_int_equal(unix_diag_parse(reply, len, none, ELEMENTSOF(none), &s), 1);
        assert_false(s.found);
        assert_int_equal(unix_diag_parse(reply, len, none, 0, &s), 1);
        assert_false(s.found);
}

static void test_malformed(void **state) {
        size_t len;
        _cleanup_free_ char *reply = fixture("unix-diag/reply.bin", &len);
        Captured server;
        captured("server", &server);
        UnixDiagSocket s;

        /* Cut anywhere inside a message: refused, never read past the end. */
        for (size_t cut = 1; cut < len; cut++) {
                s = (UnixDiagSocket) {};
                int r = unix_diag_parse(reply, cut, &server.inode, 1, &s);
                assert_true(r == -EBADMSG || r == 0);
        }
        /* Whole messages without the end: more to come. The first message is 0x54 bytes. */
        s = (UnixDiagSocket) {};
        assert_int_equal(unix_diag_parse(reply, 0x54, &server.inode, 1, &s), 0);
        assert_true(s.found);

        /* An attribute longer than its message. */
        _cleanup_free_ char *bad = malloc(len);
        assert_non_null(bad);
        memcpy(bad, reply, len);
        bad[0x20] = (char) 0x7f;
        s = (UnixDiagSocket) {};
        assert_int_equal(unix_diag_parse(bad, len, &server.inode, 1, &s), -EBADMSG);

        /* A name of 109 bytes and no NUL (sun_path holds 108): refused, never copied. */
        struct {
                struct nlmsghdr h;
                struct unix_diag_msg m;
                struct nlattr name_attr;
                char name[112]; /* 109 used, padded to 4 */
                struct nlattr vfs_attr;
                struct unix_diag_vfs vfs;
        } longname = {
                .h = { .nlmsg_len = sizeof(longname), .nlmsg_type = SOCK_DIAG_BY_FAMILY },
                .m = { .udiag_family = AF_UNIX, .udiag_type = SOCK_STREAM, .udiag_state = 10 /* TCP_LISTEN */,
                       .udiag_ino = (uint32_t) server.inode },
                .name_attr = { .nla_len = NLA_HDRLEN + 109, .nla_type = UNIX_DIAG_NAME },
                .vfs_attr = { .nla_len = NLA_HDRLEN + sizeof(struct unix_diag_vfs), .nla_type = UNIX_DIAG_VFS },
        };
        memset(longname.name, 'a', 109);
        longname.name[0] = '/';
        s = (UnixDiagSocket) {};
        assert_int_equal(unix_diag_parse(&longname, sizeof(longname), &server.inode, 1, &s), -EBADMSG);
        assert_false(s.found);

        /* The kernel's refusal comes back as its errno. */
        struct {
                struct nlmsghdr h;
                struct nlmsgerr e;
        } err = { .h = { .nlmsg_len = sizeof(err), .nlmsg_type = NLMSG_ERROR }, .e = { .error = -EINVAL } };
        assert_int_equal(unix_diag_parse(&err, sizeof(err), &server.inode, 1, &s), -EINVAL);
}

static int listen_at(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 4) < 0)
                fail_msg("bind/listen %s: %m", path);
        return fd;
}

static void test_live(void **state) {
        char dir[] = "/tmp/mgd.XXXXXX", path[108], forged[108], impostor[64], found[PATH_MAX], why[512];
        struct stat st, file;
        assert_non_null(mkdtemp(dir));
        /* Longer than sun_path leaves after /proc/PID/root: reached through /proc/self/fd/N. */
        snprintf(path, sizeof(path), "%s/%0*d", dir, (int) (100 - strlen(dir)), 0);
        int server = listen_at(path);
        assert_int_equal(fstat(server, &st), 0);
        snprintf(impostor, sizeof(impostor), "%s/i", dir);

        /* Another process binds sockets whose paths forge /proc/net/unix lines naming our
         * socket's inode and the impostor's path. */
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t child = fork();
        assert_true(child >= 0);
        if (child == 0) {
                close(ready[0]);
                (void) listen_at(impostor);
                for (int i = 0; i < 16; i++) {
                        snprintf(forged, sizeof(forged), "%s/%d\n0: 2 0 10000 1 1 %llu %s", dir, i,
                                 (unsigned long long) st.st_ino, impostor);
                        char parent[108];
                        snprintf(parent, sizeof(parent), "%s", forged);
                        for (char *p = parent + strlen(dir) + 1; (p = strchr(p, '/')); p++) {
                                *p = '\0';
                                (void) mkdir(parent, 0700);
                                *p = '/';
                        }
                        (void) listen_at(forged);
                }
                (void) !write(ready[1], "x", 1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);

        int fd = sql_find_socket(getpid(), found, sizeof(found), why, sizeof(why));
        if (fd < 0)
                fail_msg("sql_find_socket: %s", why);
        assert_string_equal(found, path);
        assert_int_equal(fstat(fd, &file), 0);
        assert_true(S_ISSOCK(file.st_mode));

        /* The O_PATH descriptor reaches the socket, and the peer is this process. */
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", fd);
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_int_equal(connect(s, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(sql_check_peer(s, getpid(), "test", why, sizeof(why)), 0);
        close(s);
        close(fd);

        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        close(server);
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

/* Looks for the socket of pid from a child, with or without CAP_SYS_ADMIN: the exit status
 * says what it found (0: path, 1: another path, 2: nothing). */
static int find_from_child(pid_t pid, const char *path, bool admin) {
        pid_t c = fork();
        assert_true(c >= 0);
        if (c == 0) {
                if (!admin) {
                        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                        struct __user_cap_data_struct d[2] = {};
                        if (syscall(SYS_capget, &h, d) < 0)
                                _exit(3);
                        d[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
                        d[CAP_SYS_ADMIN / 32].permitted &= ~(1U << (CAP_SYS_ADMIN % 32));
                        if (syscall(SYS_capset, &h, d) < 0)
                                _exit(3);
                }
                char found[PATH_MAX], why[512];
                int fd = sql_find_socket(pid, found, sizeof(found), why, sizeof(why));
                if (fd < 0) {
                        fprintf(stderr, "sql_find_socket: %s\n", why);
                        _exit(2);
                }
                _exit(strcmp(found, path) == 0 ? 0 : 1);
        }
        int status;
        assert_int_equal(waitpid(c, &status, 0), c);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static void test_other_netns(void **state) {
        char dir[] = "/tmp/mgn.XXXXXX", path[108];
        if (geteuid() != 0)
                skip();
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/server.sock", dir);

        /* A server in a network namespace of its own: its socket is not in ours. */
        int ready[2];
        assert_int_equal(pipe(ready), 0);
        pid_t server = fork();
        assert_true(server >= 0);
        if (server == 0) {
                close(ready[0]);
                if (unshare(CLONE_NEWNET) < 0)
                        _exit(1);
                (void) listen_at(path);
                (void) !write(ready[1], "x", 1);
                pause();
                _exit(0);
        }
        close(ready[1]);
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        close(ready[0]);

        /* With CAP_SYS_ADMIN, sock_diag in the server's namespace; without (as the daemon runs),
         * the server's own descriptors. */
        assert_int_equal(find_from_child(server, path, true), 0);
        assert_int_equal(find_from_child(server, path, false), 0);

        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_captured_server),
                cmocka_unit_test(test_captured_not_found),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_live),
                cmocka_unit_test(test_other_netns),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
