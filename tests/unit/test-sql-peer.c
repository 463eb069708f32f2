/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who listens on the SQL socket, before any byte of authentication goes out: the server itself,
 * or a process of its user in its own cgroup; never another user's process, even where every
 * process shares one cgroup (a host that does not place processes by service). */
#include "test-util.h"

#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memgov/clock.h"
#include "memgov/policy.h"
#include "memgov/sql.h"

/* A child listening on path as uid (stays until killed); returns its pid. */
static pid_t listener(const char *path, uid_t uid, int ready[2]) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (uid != 0 && (setgid(65534) < 0 || setuid(uid) < 0))
                        _exit(1);
                int s = socket(AF_UNIX, SOCK_STREAM, 0);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
                if (s < 0 || bind(s, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(s, 4) < 0)
                        _exit(2);
                (void) !write(ready[1], "x", 1);
                pause();
                _exit(0);
        }
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        return pid;
}

static int ask(const char *path, pid_t server, char *why, size_t size) {
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        assert_int_equal(connect(s, (struct sockaddr *) &sa, sizeof(sa)), 0);
        int r = sql_check_peer(s, server, path, why, size);
        close(s);
        return r;
}

static void stop(pid_t pid) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

static void test_peer(void **state) {
        char dir[] = "/tmp/memgov-sql-peer.XXXXXX", path[128], why[512];
        int ready[2];
        if (geteuid() != 0)
                skip();
        assert_non_null(mkdtemp(dir));
        assert_int_equal(chmod(dir, 0777), 0);
        assert_int_equal(pipe(ready), 0);

        /* The server listening itself. */
        snprintf(path, sizeof(path), "%s/server.sock", dir);
        pid_t server = listener(path, 0, ready);
        assert_int_equal(ask(path, server, why, sizeof(why)), 0);

        /* Another user's process, in the same cgroup as everybody (or any cgroup): refused. */
        snprintf(path, sizeof(path), "%s/nobody.sock", dir);
        pid_t impostor = listener(path, 65534, ready);
        assert_int_equal(ask(path, server, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "(uid 65534), neither the server");
        stop(impostor);

        /* The server's user, but in the root cgroup (or no cgroup v2 at all): no sign of
         * belonging, refused. This test's processes are in no cgroup of their own. */
        snprintf(path, sizeof(path), "%s/same-user.sock", dir);
        pid_t other = listener(path, 0, ready);
        char cg[256] = "";
        FILE *f = fopen("/proc/self/cgroup", "re");
        while (f && fgets(cg, sizeof(cg), f))
                if (strncmp(cg, "0::", 3) == 0)
                        break;
        if (f)
                fclose(f);
        if (strncmp(cg, "0::/\n", 5) == 0 || strncmp(cg, "0::", 3) != 0)
                assert_int_equal(ask(path, server, why, sizeof(why)), -EPERM);
        else /* a cgroup of its own (a service, a session): the same user in it is the server's */
                assert_int_equal(ask(path, server, why, sizeof(why)), 0);
        stop(other);
        stop(server);
}

/* A socket whose listener never accepts, its queue full (listen(0), then clients left waiting):
 * connect() alone waits for an accept that never comes. */
static int never_accepting(const char *path) {
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        assert_true(s >= 0);
        assert_int_equal(bind(s, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(s, 0), 0);
        for (unsigned i = 0; i < 8; i++) {
                int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (connect(c, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                        assert_int_equal(errno, EAGAIN);
                        close(c);
                        return s; /* full */
                }
        }
        fail_msg("the listener's queue never filled");
        return -1;
}

/* The connection to the server, bounded by sql.connect-timeout: the peer check's own connect
 * (with a server process known) and the client library's (a socket of the policy's alone). */
static void test_connect_bounded(void **state) {
        char dir[] = "/tmp/memgov-sql-connect.XXXXXX", why[512];
        Policy p;
        SqlConn c;
        assert_non_null(mkdtemp(dir));
        assert_int_equal(policy_load_default(&p), 0);
        snprintf(p.sql_socket, sizeof(p.sql_socket), "%s/full.sock", dir);
        p.sql_connect_timeout = USEC_PER_SEC;
        int listening = never_accepting(p.sql_socket);

        for (int with_server = 1; with_server >= 0; with_server--) {
                usec_t t0 = now_clock(CLOCK_MONOTONIC);
                int r = sql_connect(&p, with_server ? getpid() : 0, &c, why, sizeof(why));
                usec_t took = now_clock(CLOCK_MONOTONIC) - t0;
                if (r >= 0)
                        fail_msg("connected to a listener that never accepts");
                if (took > 3 * USEC_PER_SEC)
                        fail_msg("%s: gave up after %.1f s, past sql.connect-timeout 1 s: %s",
                                 with_server ? "the peer check" : "the library", (double) took / USEC_PER_SEC, why);
                if (with_server) {
                        assert_int_equal(r, -ETIMEDOUT);
                        assert_string_contains(why, "not accepted within sql.connect-timeout 1s");
                }
        }
        close(listening);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        (void) !system(cmd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_peer),
                cmocka_unit_test(test_connect_bounded),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
