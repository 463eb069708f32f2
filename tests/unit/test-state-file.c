/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The state file: what memgov changed on the server, recorded before each change, read back by
 * the next memgov as inherited; the first value found kept across changes; forgotten once put
 * back; a file memgov did not write refused. */
#include "test-util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memgov/fileio.h"
#include "memgov/state-file.h"

static char dir[] = "/tmp/memgov-state-file.XXXXXX";

static StateFile *reopen(usec_t *clock, unsigned *n) {
        StateFile *f = NULL;
        assert_int_equal(state_file_open(dir, "test", &f), 0);
        assert_non_null(f);
        usec_t tmp[8];
        unsigned k;
        state_file_load(f, clock ? clock : tmp, 8, n ? n : &k);
        return f;
}

static void test_change_survives(void **state) {
        StateFile *f = reopen(NULL, NULL);
        /* Lowered twice on one server process: found is the value before the first. */
        assert_int_equal(state_file_change(f, CHANGE_MAX_CONNECTIONS, 42, 777, 151, 80), 0);
        assert_int_equal(state_file_change(f, CHANGE_MAX_CONNECTIONS, 42, 777, 80, 60), 0);
        assert_int_equal(state_file_change(f, CHANGE_MEMORY_HIGH, 0, 0, UINT64_MAX, 200 << 20), 0);
        usec_t restarts[] = { 1000, 2000 };
        assert_int_equal(state_file_set_restarts(f, restarts, 2), 0);
        ServerChange c = state_file_get(f, CHANGE_MAX_CONNECTIONS);
        assert_true(c.active && !c.inherited);
        assert_int_equal(c.found, 151);
        assert_int_equal(c.set, 60);
        state_file_free(f); /* the memgov dies here: no way out */

        usec_t clock[8];
        unsigned n;
        f = reopen(clock, &n);
        assert_int_equal(n, 2);
        assert_int_equal(clock[1], 2000);
        c = state_file_get(f, CHANGE_MAX_CONNECTIONS);
        assert_true(c.active && c.inherited);
        assert_int_equal(c.pid, 42);
        assert_int_equal(c.starttime, 777);
        assert_int_equal(c.found, 151);
        assert_int_equal(c.set, 60);
        c = state_file_get(f, CHANGE_MEMORY_HIGH);
        assert_true(c.active && c.found == UINT64_MAX && c.set == 200 << 20 && c.pid == 0);
        assert_false(state_file_get(f, CHANGE_POOL_SIZE).active);

        /* A change of this memgov on the same process: no longer inherited, found kept. */
        assert_int_equal(state_file_change(f, CHANGE_MAX_CONNECTIONS, 42, 777, 60, 50), 0);
        c = state_file_get(f, CHANGE_MAX_CONNECTIONS);
        assert_true(c.active && !c.inherited && c.found == 151 && c.set == 50);
        /* Another server process: its own found. */
        assert_int_equal(state_file_change(f, CHANGE_MAX_CONNECTIONS, 43, 1, 200, 100), 0);
        assert_int_equal(state_file_get(f, CHANGE_MAX_CONNECTIONS).found, 200);
        /* Put back: forgotten, and so in the file. */
        assert_int_equal(state_file_forget(f, CHANGE_MAX_CONNECTIONS), 0);
        assert_int_equal(state_file_forget(f, CHANGE_MEMORY_HIGH), 0);
        state_file_free(f);
        f = reopen(NULL, NULL);
        for (ChangeKind k = 0; k < _CHANGE_KIND_MAX; k++)
                assert_false(state_file_get(f, k).active);
        state_file_free(f);
}

static void write_state(const char *text) {
        char path[128];
        snprintf(path, sizeof(path), "%s/test.state", dir);
        (void) unlink(path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
}

static void test_refused(void **state) {
        /* A server setting without its process, a value that is no number: ignored. An older
         * memgov's file (restarts only): nothing to put back. Not JSON: ignored whole. */
        write_state("{\"restarts_wall_us\":[5],\"changes\":{\"max_connections\":{\"found\":151,\"set\":10},"
                    "\"memory.max\":{\"found\":\"lots\",\"set\":1},\"innodb_buffer_pool_size\":{\"pid\":7,\"starttime\":9,"
                    "\"found\":268435456,\"set\":134217728}}}\n");
        usec_t clock[8];
        unsigned n;
        StateFile *f = reopen(clock, &n);
        assert_int_equal(n, 1);
        assert_false(state_file_get(f, CHANGE_MAX_CONNECTIONS).active);
        assert_false(state_file_get(f, CHANGE_MEMORY_MAX).active);
        ServerChange c = state_file_get(f, CHANGE_POOL_SIZE);
        assert_true(c.active && c.inherited && c.pid == 7 && c.found == 268435456);
        state_file_free(f);

        write_state("{\"restarts_wall_us\":[1,2,3]}\n");
        f = reopen(clock, &n);
        assert_int_equal(n, 3);
        for (ChangeKind k = 0; k < _CHANGE_KIND_MAX; k++)
                assert_false(state_file_get(f, k).active);
        state_file_free(f);

        write_state("not json\n");
        f = reopen(clock, &n);
        assert_int_equal(n, 0);
        state_file_free(f);
}

static int setup(void **state) {
        return mkdtemp(dir) && chmod(dir, 0755) == 0 ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_change_survives),
                cmocka_unit_test(test_refused),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
