/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The SQL option file: checked on the descriptor the client library then reads (through
 * /proc/self/fd/N), so that a swap of the path after the check changes nothing; and its
 * !include and !includedir, which the library would open by path unchecked, refused. */
#include "test-util.h"

#include "memgov/fileio.h"
#include "memgov/macro.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memgov/sql.h"

static char dir[] = "/tmp/memgov-option-file.XXXXXX";

static void test_include_refused(void **state) {
        char path[256], other[256], text[600], why[512];
        /* The included file is readable by everyone: read by the library, it would be unchecked. */
        make_file(dir, "other.cnf", "[client]\npassword=leaked\n", 0644, other, sizeof(other));
        snprintf(text, sizeof(text), "[client]\nuser=memgov\n  !include %s\n", other);
        make_file(dir, "main.cnf", text, 0600, path, sizeof(path));
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "main.cnf:3: !include and !includedir are not allowed");

        snprintf(text, sizeof(text), "!includedir %s\n[client]\nuser=memgov\n", dir);
        make_file(dir, "dir.cnf", text, 0600, path, sizeof(path));
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "dir.cnf:1: !include");

        /* No directive: accepted. */
        make_file(dir, "plain.cnf", "[client]\nuser=memgov\npassword=x\n", 0600, path, sizeof(path));
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), 0);
}

/* What the library skips before a directive, and where it splits a long line, hide none. */
static void test_include_hidden_refused(void **state) {
        char path[256], other[256], why[512];
        static char text[8192];
        make_file(dir, "other.cnf", "[client]\npassword=leaked\n", 0644, other, sizeof(other));
        snprintf(text, sizeof(text), "[client]\n\f\v\r!include %s\n", other);
        make_file(dir, "ff.cnf", text, 0600, path, sizeof(path));
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "ff.cnf:2: !include");

        /* A comment 4094 bytes long: the library reads its end as a line of its own. */
        int n = snprintf(text, sizeof(text), "[client]\n#");
        memset(text + n, 'x', 4093 - 1);
        n += 4093 - 1;
        snprintf(text + n, sizeof(text) - (size_t) n, "!include %s\n", other);
        make_file(dir, "long.cnf", text, 0600, path, sizeof(path));
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EPERM);
        assert_string_contains(why, "long.cnf:2: a line longer than 4093 bytes");
}

/* A Secret volume as the kubelet's atomic writer lays it out: each key a link into "..data",
 * itself a link to the timestamped directory of the current version. Followed: every link stays
 * in the directory. */
static void test_secret_volume_layout(void **state) {
        char vol[256], ts[300], path[400], why[512];
        snprintf(vol, sizeof(vol), "%s/secret", dir);
        snprintf(ts, sizeof(ts), "%s/..2026_12_05_17_28_56.3195867161", vol);
        assert_int_equal(mkdir(vol, 0755), 0);
        assert_int_equal(mkdir(ts, 0755), 0);
        make_file(ts, "client.cnf", "[client]\nuser=memgov\npassword=from-the-secret\n", 0400, path, sizeof(path));
        snprintf(path, sizeof(path), "%s/..data", vol);
        assert_int_equal(symlink("..2026_12_05_17_28_56.3195867161", path), 0);
        snprintf(path, sizeof(path), "%s/client.cnf", vol);
        assert_int_equal(symlink("..data/client.cnf", path), 0);

        int fd = sql_open_option_file(path, why, sizeof(why));
        if (fd < 0)
                fail_msg("%s", why);
        _cleanup_free_ char *text = NULL;
        char fd_path[64];
        snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
        assert_int_equal(read_full_file_at(AT_FDCWD, fd_path, 4096, &text, NULL), 0);
        assert_string_contains(text, "password=from-the-secret");
        close(fd);

        /* The same path given as a relative one, and a link to a file beside it. */
        assert_int_equal(chdir(vol), 0);
        assert_int_equal(sql_check_option_file("client.cnf", why, sizeof(why)), 0);
        assert_int_equal(chdir("/"), 0);
        snprintf(path, sizeof(path), "%s/beside.cnf", vol);
        assert_int_equal(symlink("client.cnf", path), 0);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), 0);
}

/* What is really untrusted is still refused: a link out of the directory (absolute, or by
 * ".."), a /proc magic link, and a file that is no regular file, never opened (a FIFO would block
 * the open; a device's open has effects). */
static void test_untrusted_refused(void **state) {
        char path[256], link[256], target[256], why[512];
        make_file(dir, "outside.cnf", "[client]\nuser=memgov\n", 0600, target, sizeof(target));
        static const char *links[] = { NULL, "../outside.cnf", "/proc/self/cwd/x" };
        char vol[300];
        snprintf(vol, sizeof(vol), "%s/vol", dir);
        assert_int_equal(mkdir(vol, 0755), 0);
        for (size_t i = 0; i < ELEMENTSOF(links); i++) {
                snprintf(link, sizeof(link), "%s/link%zu.cnf", vol, i);
                assert_int_equal(symlink(links[i] ? links[i] : target, link), 0);
                int r = sql_check_option_file(link, why, sizeof(why));
                if (i < 2) {
                        assert_int_equal(r, -EXDEV);
                        assert_string_contains(why, "is a symbolic link that leads out of its directory");
                } else
                        assert_true(r == -EXDEV || r == -ELOOP);
        }

        snprintf(path, sizeof(path), "%s/fifo.cnf", vol);
        assert_int_equal(mkfifo(path, 0600), 0);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EINVAL);
        assert_string_contains(why, "is not a regular file");
        snprintf(path, sizeof(path), "%s/dir.cnf", vol);
        assert_int_equal(mkdir(path, 0700), 0);
        assert_int_equal(sql_check_option_file(path, why, sizeof(why)), -EINVAL);
}

static void test_swap_after_check(void **state) {
        char path[256], evil[256], why[512], fd_path[64];
        make_file(dir, "client.cnf", "[client]\nuser=memgov\n", 0600, path, sizeof(path));
        int fd = sql_open_option_file(path, why, sizeof(why));
        if (fd < 0)
                fail_msg("%s", why);

        /* After the check, the path is made to name an untrusted file. */
        make_file(dir, "evil.cnf", "[client]\nuser=root\nsocket=/tmp/impostor.sock\n", 0666, evil, sizeof(evil));
        assert_int_equal(rename(evil, path), 0);

        /* What the library is given reads the file checked, not the path's new file. */
        snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
        _cleanup_free_ char *text = NULL;
        size_t len;
        assert_int_equal(read_full_file_at(AT_FDCWD, fd_path, 4096, &text, &len), 0);
        assert_string_equal(text, "[client]\nuser=memgov\n");
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_include_refused),
                cmocka_unit_test(test_include_hidden_refused),
                cmocka_unit_test(test_secret_volume_layout),
                cmocka_unit_test(test_untrusted_refused),
                cmocka_unit_test(test_swap_after_check),
        };
        assert_non_null(mkdtemp(dir));
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        (void) !system(cmd);
        return r;
}
