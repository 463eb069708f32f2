/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The server's version as a number (sql_server_version): what the actuators choose their
 * statements by (MySQL 8.0.31's threads.TOTAL_MEMORY, MariaDB 10.5's single pool instance). */
#include "test-util.h"

#include <string.h>

#include "memgov/sql.h"

static unsigned version(const char *s) {
        SqlConn c = {};
        snprintf(c.version, sizeof(c.version), "%s", s);
        return sql_server_version(&c);
}

static void test_server_version(void **state) {
        assert_int_equal(version("9.7.4-2"), 90704);
        assert_int_equal(version("8.0.31"), 80031);
        assert_int_equal(version("8.0.30-0ubuntu0.22.04.1"), 80030);
        assert_int_equal(version("10.11.19-MariaDB-deb12"), 101119);
        assert_int_equal(version("11.8.3-MariaDB-0+deb13u1 from Debian"), 110803);
        assert_int_equal(version("10.5"), 100500);
        /* Not a version: 0, which no choice takes for a new server. */
        assert_int_equal(version(""), 0);
        assert_int_equal(version("MariaDB"), 0);
        assert_int_equal(version("8"), 0);
        assert_int_equal(version("8.100.1"), 0);
        assert_true(version("8.0.31") >= 80031 && version("8.0.30") < 80031 && version("9.0.0") >= 80031);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_server_version),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
