#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The buffer-pool rung against a real mariadbd (Debian's package), started by the test with a
# 256M buffer pool filled with a table's pages: a dry run changes nothing; shrink steps go down by
# one step each (12.5% of 256M) and stop at the floor (25%), where the step fails with its
# sentence; what each step gave back is measured (the server's RSS); the server answers queries
# throughout; grow steps come back to the configured size and no further; pool_grow_max bounds a
# grow, and a grow says when the server had shrunk the pool by itself; the server's own
# innodb_buffer_pool_size_auto_min is a floor; an account without the privilege is told so.
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

dir=$(mktemp -d /tmp/memgov-pool-XXXXXX)
stop_load() {
        if [[ -n ${load_pid:-} ]]; then
                touch "$dir/load.stop"
                wait "$load_pid" 2>/dev/null || true
                load_pid=
        fi
}
trap 'stop_load; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" --innodb-buffer-pool-size=$CONFIGURED || exit $?

size() { mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size"; }
# run ACTION DRY CONFIGURED GROW_MAX: one pool_run(); its result in the variables r_<key>.
r_error='' r_explained='' r_value='' r_value_before='' r_has_freed='' r_freed='' r_detail=''
run() {
        local out line
        out=$("$pool_resize" "$MARIADB_PID" "$1" "$2" "$3" $STEP_BP $FLOOR_BP "$4" 60) ||
                fail "$1: the driver failed: $out"
        while IFS= read -r line; do
                printf -v "r_${line%%=*}" '%s' "${line#*=}"
        done <<<"$out"
}
mib() { echo "$(( $1 / M ))M"; }

# A table of about 280M, larger than the pool, read once so that its pages fill every frame.
mariadb_sql "CREATE DATABASE memgov_pool; USE memgov_pool;
             CREATE TABLE memgov_pool.t (id INT PRIMARY KEY, pad CHAR(255)) ENGINE=InnoDB;
             INSERT INTO memgov_pool.t SELECT seq, REPEAT('p', 255) FROM seq_1_to_1000000;
             SELECT COUNT(*) FROM memgov_pool.t WHERE pad LIKE 'q%'" >/dev/null
status() { mariadb_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
free_pages=$(status Innodb_buffer_pool_pages_free) total_pages=$(status Innodb_buffer_pool_pages_total)
echo "pool-mariadbd: $(mariadbd --version | cut -d' ' -f2-4); pool $(mib "$(size)")," \
     "$((total_pages - free_pages)) of $total_pages pages in use, RSS $(mib "$(mariadb_rss)")"
(( free_pages * 4 < total_pages )) || fail "the pool did not fill: $free_pages of $total_pages pages free"

# Queries all along: the server must answer every one of them.
: >"$dir/load.log"
( n=0
  while [[ ! -e $dir/load.stop ]]; do
        from=$((RANDOM * 30))
        got=$(mariadb_sql "SELECT COUNT(*) FROM memgov_pool.t WHERE id > $from AND id <= $from + 1000" 2>&1) || true
        if [[ $got == 1000 ]]; then n=$((n + 1)); else echo "fail: $got" >>"$dir/load.log"; fi
  done
  echo "ok $n" >>"$dir/load.log" ) &
load_pid=$!

# A dry run: everything but the SET.
run shrink 1 $CONFIGURED max
[[ $r_error == 0 && $r_detail == "would shrink "* ]] || fail "dry run: error $r_error: $r_detail"
[[ $(size) == "$CONFIGURED" && $r_value == "$CONFIGURED" && $r_value_before == "$CONFIGURED" ]] ||
        fail "dry run: the pool is $(size) (reported $r_value_before -> $r_value)"
echo "pool-mariadbd: ok: dry run: $r_detail"

# Shrink, one step at a time, down to the floor.
expect=$CONFIGURED freed_total=0 rss_before=$(mariadb_rss)
while (( expect > CONFIGURED * FLOOR_BP / 10000 )); do
        expect=$((expect - CONFIGURED * STEP_BP / 10000))
        run shrink 0 $CONFIGURED max
        [[ $r_error == 0 ]] || fail "shrink to $(mib $expect): error $r_error: $r_detail"
        [[ $r_value == "$expect" && $(size) == "$expect" ]] ||
                fail "shrink: the pool is $(size), reported $r_value, expected $expect"
        [[ $r_has_freed == 1 ]] || fail "shrink: nothing measured: $r_detail"
        (( r_freed >= 16 * M )) || fail "shrink to $(mib $expect) gave back only $r_freed bytes: $r_detail"
        freed_total=$((freed_total + r_freed))
        [[ $(mariadb_sql "SELECT 6 * 7") == 42 ]] ||
                fail "the server does not answer after the shrink to $(mib $expect)"
        echo "pool-mariadbd: ok: shrink: $r_detail"
done
rss_after=$(mariadb_rss)
steps=$(( (CONFIGURED - expect) / (CONFIGURED * STEP_BP / 10000) ))
echo "pool-mariadbd: shrunk $(mib $CONFIGURED) -> $(mib "$(size)") in $steps steps: $(mib $freed_total) given back" \
     "(measured per step), RSS $(mib "$rss_before") -> $(mib "$rss_after")"
(( freed_total >= (CONFIGURED - expect) / 2 )) ||
        fail "only $(mib $freed_total) given back for $(mib $((CONFIGURED - expect)))"

# At the floor: the step fails, with its sentence, and changes nothing.
run shrink 0 $CONFIGURED max
[[ $r_error == -34 && $r_explained == 1 && $r_detail == *"floor"* ]] ||
        fail "the step at the floor: error $r_error: $r_detail"
[[ $(size) == "$expect" ]] || fail "the step at the floor changed the pool to $(size)"
echo "pool-mariadbd: ok: at the floor: $r_detail"

# Grow back, one step at a time, to the configured size and no further.
while (( expect < CONFIGURED )); do
        expect=$((expect + CONFIGURED * STEP_BP / 10000))
        run grow 0 $CONFIGURED max
        [[ $r_error == 0 && $r_value == "$expect" && $(size) == "$expect" ]] ||
                fail "grow to $(mib $expect): error $r_error, the pool is $(size): $r_detail"
        echo "pool-mariadbd: ok: grow: $r_detail"
done
run grow 0 $CONFIGURED max
[[ $r_error == 0 && $r_value == "$CONFIGURED" && $(size) == "$CONFIGURED" && $r_detail == *"nothing to grow"* ]] ||
        fail "a grow at the configured size: error $r_error, the pool is $(size): $r_detail"
echo "pool-mariadbd: ok: at the configured size: $r_detail"

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

stop_load
if grep -q '^fail' "$dir/load.log"; then
        fail "queries failed during the resizes: $(grep '^fail' "$dir/load.log" | head -3)"
fi
echo "pool-mariadbd: ok: the server answered all $(sed -n 's/^ok //p' "$dir/load.log") queries made during the resizes"
