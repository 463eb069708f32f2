#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The buffer-pool rung against a real mariadbd (Debian's package), started by the test with a
# 256M buffer pool filled with a table's pages: a dry run changes nothing; shrink steps go down by
# one step each (12.5% of 256M) and stop at the floor (25%), where the step fails with its
# sentence; what each step gave back is measured (the server's RSS); the server answers queries
# throughout; grow steps come back to the configured size and no further; pool_grow_max bounds a
# grow, and a grow says when the server had shrunk the pool by itself; the server's own
# innodb_buffer_pool_size_auto_min is a floor; an account without the privilege is told so; a
# server that turns every new connection away (pool_no_new_connection).
#   pool-mariadbd.sh MEMGOV_POOL_RESIZE
set -euo pipefail
pool_resize=$1
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "pool-mariadbd: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
fail() { echo "pool-mariadbd: FAIL: $*" >&2; exit 1; }

M=$((1024 * 1024))
CONFIGURED=$((256 * M))
STEP_BP=1250   # 32M
FLOOR_BP=2500  # 64M
name=pool-mariadbd
# shellcheck source=../lib/pool-steps.sh
. "$here/lib/pool-steps.sh"
pool_sql() { mariadb_sql "$1"; }
pool_rss() { mariadb_rss; }
POOL_RESIZE=$pool_resize

dir=$(mktemp -d /tmp/memgov-pool-XXXXXX)
trap 'pool_load_end; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" --innodb-buffer-pool-size=$CONFIGURED || exit $?
POOL_PID=$MARIADB_PID
echo "pool-mariadbd: $(mariadbd --version | cut -d' ' -f2-4)"
size() { pool_size; }
run() { pool_run "$@"; }

pool_fill "SELECT seq, REPEAT('p', 255) FROM seq_1_to_1000000"
pool_load_start
pool_dry_run
pool_steps_down
pool_steps_up

# What memgov took bounds a grow: two steps down (64M taken), then back by at most 16M; and a
# pool smaller than what memgov took is the server's (or someone's) doing, said so.
run shrink 0 $CONFIGURED max
run shrink 0 $CONFIGURED max
[[ $(size) == $((192 * M)) ]] || fail "two shrink steps left the pool at $(size)"
run grow 0 $CONFIGURED $((16 * M))
[[ $r_error == 0 && $(size) == $((208 * M)) ]] ||
        fail "a grow bounded to 16M: error $r_error, the pool is $(size): $r_detail"
[[ $r_detail == *"by itself"* ]] || fail "a grow bounded to 16M of 64M missing says nothing of the rest: $r_detail"
echo "pool-mariadbd: ok: bounded grow: $r_detail"
run grow 0 $CONFIGURED 0
[[ $r_error == 0 && $(size) == $((208 * M)) ]] ||
        fail "a grow bounded to 0: error $r_error, the pool is $(size): $r_detail"
echo "pool-mariadbd: ok: nothing to give back: $r_detail"
run grow 0 $CONFIGURED max
run grow 0 $CONFIGURED max
[[ $(size) == "$CONFIGURED" ]] || fail "the pool did not come back to $(mib $CONFIGURED): $(size)"

# The server's own floor for shrinking on memory pressure (MariaDB 10.11.12+, 11.4.6+, 11.8.2+).
if [[ -n $(mariadb_sql "SHOW GLOBAL VARIABLES LIKE 'innodb_buffer_pool_size_auto_min'") ]]; then
        auto_min=$(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size_auto_min")
        mariadb_sql "SET GLOBAL innodb_buffer_pool_size_auto_min = $((160 * M))"
        for s in 224 192 160; do
                run shrink 0 $CONFIGURED max
                [[ $r_error == 0 && $(size) == $((s * M)) ]] ||
                        fail "shrink with auto_min: error $r_error, the pool is $(size): $r_detail"
        done
        run shrink 0 $CONFIGURED max
        [[ $r_error == -34 && $(size) == $((160 * M)) && $r_detail == *"innodb_buffer_pool_size_auto_min"* ]] ||
                fail "the step at auto_min: error $r_error, the pool is $(size): $r_detail"
        echo "pool-mariadbd: ok: the server's floor: $r_detail"
        mariadb_sql "SET GLOBAL innodb_buffer_pool_size_auto_min = $auto_min;
                     SET GLOBAL innodb_buffer_pool_size = $CONFIGURED"
fi

# An account without the privilege: an explained failure, the pool as it was.
mariadb_sql "CREATE USER memgov_nopriv@localhost IDENTIFIED BY 'memgov-test-password';
             GRANT PROCESS ON *.* TO memgov_nopriv@localhost"
printf '[client]\nuser=memgov_nopriv\npassword=memgov-test-password\n' >"$dir/nopriv.cnf"
chmod 600 "$dir/nopriv.cnf"
MEMGOV_TEST_OPTION_FILE=$dir/nopriv.cnf run shrink 0 $CONFIGURED max
[[ $r_error == -13 && $r_explained == 1 && $r_detail == *"SUPER"* && $(size) == "$CONFIGURED" ]] ||
        fail "an account without the privilege: error $r_error, the pool is $(size): $r_detail"
echo "pool-mariadbd: ok: without the privilege: $r_detail"

pool_load_stop

pool_no_new_connection
