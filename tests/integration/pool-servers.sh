#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The buffer-pool rung on a real server of another flavour, from its Debian chroot (MySQL 9.7,
# MariaDB 11.8 with its new buffer-pool code), as pool-mariadbd.sh runs it on the host's MariaDB:
# a 256M pool filled with a table's pages; a dry run changes nothing; shrink steps go down one
# step each (12.5%) to the floor (25%), where the step fails with its sentence; what each step
# gave back is measured; the server answers queries throughout; grow steps come back to the
# configured size and no further. MySQL resizes its pool in chunks: it runs with
# innodb_buffer_pool_chunk_size 32M, the step's size (with its default 128M, memgov's steps
# round to whole chunks).
#   pool-servers.sh FLAVOUR MEMGOV_POOL_RESIZE
set -euo pipefail
flavour=$1
pool_resize=$2
here=$(cd "$(dirname "$0")/.." && pwd)
name=pool-$flavour
# shellcheck source=../lib/servers.sh
. "$here/lib/servers.sh"
[[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root (chroot, mount namespaces, debootstrap)" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }

M=$((1024 * 1024))
CONFIGURED=$((256 * M))
STEP_BP=1250   # 32M
FLOOR_BP=2500  # 64M

server_provision "$flavour"
dir=$(mktemp -d /tmp/memgov-pool-XXXXXX)
stop_load() {
        if [[ -n ${load_pid:-} ]]; then
                touch "$dir/load.stop"
                wait "$load_pid" 2>/dev/null || true
                load_pid=
        fi
}
trap 'stop_load; server_stop; rm -rf "$dir"' EXIT
opts=(--innodb-buffer-pool-size=$CONFIGURED)
[[ $flavour == mysql-* ]] && opts+=(--innodb-buffer-pool-chunk-size=$((32 * M)) --innodb-buffer-pool-instances=1)
server_start "$dir" "${opts[@]}" || exit $?

size() { server_sql "SELECT @@GLOBAL.innodb_buffer_pool_size"; }
r_error='' r_explained='' r_value='' r_value_before='' r_has_freed='' r_freed='' r_detail=''
run() { # ACTION DRY CONFIGURED GROW_MAX: one pool_run(); its result in r_<key>
        local out line
        out=$("$pool_resize" "$SERVER_PID" "$1" "$2" "$3" $STEP_BP $FLOOR_BP "$4" 60) ||
                fail "$1: the driver failed: $out"
        while IFS= read -r line; do
                printf -v "r_${line%%=*}" '%s' "${line#*=}"
        done <<<"$out"
}
mib() { echo "$(( $1 / M ))M"; }

# A table of about 280M, larger than the pool, read once so that its pages fill every frame. Its
# rows from MariaDB's sequence engine, or on MySQL from a recursive query.
rows="SELECT seq, REPEAT('p', 255) FROM seq_1_to_1000000"
[[ $flavour == mysql-* ]] && rows="WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000000)
                                  SELECT n, REPEAT('p', 255) FROM s"
server_sql "CREATE DATABASE memgov_pool; USE memgov_pool;
            CREATE TABLE t (id INT PRIMARY KEY, pad CHAR(255)) ENGINE=InnoDB;
            $([[ $flavour == mysql-* ]] && echo "SET SESSION cte_max_recursion_depth = 1000000;")
            INSERT INTO t $rows;
            SELECT COUNT(*) FROM t WHERE pad LIKE 'q%'" >/dev/null
status() { server_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
free_pages=$(status Innodb_buffer_pool_pages_free) total_pages=$(status Innodb_buffer_pool_pages_total)
echo "$name: $(server_sql "SELECT VERSION()"); pool $(mib "$(size)"), $((total_pages - free_pages)) of $total_pages" \
     "pages in use, RSS $(mib "$(server_rss)")"
(( free_pages * 4 < total_pages )) || fail "the pool did not fill: $free_pages of $total_pages pages free"

# Queries all along: the server must answer every one of them.
: >"$dir/load.log"
( n=0
  while [[ ! -e $dir/load.stop ]]; do
        from=$((RANDOM * 30))
        got=$(server_sql "SELECT COUNT(*) FROM memgov_pool.t WHERE id > $from AND id <= $from + 1000" 2>&1) || true
        if [[ $got == 1000 ]]; then n=$((n + 1)); else echo "fail: $got" >>"$dir/load.log"; fi
  done
  echo "ok $n" >>"$dir/load.log" ) &
load_pid=$!

run shrink 1 $CONFIGURED max
[[ $r_error == 0 && $r_detail == "would shrink "* ]] || fail "dry run: error $r_error: $r_detail"
[[ $(size) == "$CONFIGURED" && $r_value == "$CONFIGURED" && $r_value_before == "$CONFIGURED" ]] ||
        fail "dry run: the pool is $(size) (reported $r_value_before -> $r_value)"
echo "$name: ok: dry run: $r_detail"

expect=$CONFIGURED freed_total=0 rss_before=$(server_rss)
while (( expect > CONFIGURED * FLOOR_BP / 10000 )); do
        expect=$((expect - CONFIGURED * STEP_BP / 10000))
        run shrink 0 $CONFIGURED max
        [[ $r_error == 0 ]] || fail "shrink to $(mib $expect): error $r_error: $r_detail"
        [[ $r_value == "$expect" && $(size) == "$expect" ]] ||
                fail "shrink: the pool is $(size), reported $r_value, expected $expect: $r_detail"
        [[ $r_has_freed == 1 ]] || fail "shrink: nothing measured: $r_detail"
        freed_total=$((freed_total + r_freed))
        [[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer after the shrink to $(mib $expect)"
        echo "$name: ok: shrink: $r_detail"
done
rss_after=$(server_rss)
echo "$name: shrunk $(mib $CONFIGURED) -> $(mib "$(size)"): $(mib $freed_total) given back (measured per step)," \
     "RSS $(mib "$rss_before") -> $(mib "$rss_after")"
(( freed_total >= (CONFIGURED - expect) / 2 )) ||
        fail "only $(mib $freed_total) given back for $(mib $((CONFIGURED - expect)))"

run shrink 0 $CONFIGURED max
[[ $r_error == -34 && $r_explained == 1 && $r_detail == *"floor"* ]] ||
        fail "the step at the floor: error $r_error: $r_detail"
[[ $(size) == "$expect" ]] || fail "the step at the floor changed the pool to $(size)"
echo "$name: ok: at the floor: $r_detail"

while (( expect < CONFIGURED )); do
        expect=$((expect + CONFIGURED * STEP_BP / 10000))
        run grow 0 $CONFIGURED max
        [[ $r_error == 0 && $r_value == "$expect" && $(size) == "$expect" ]] ||
                fail "grow to $(mib $expect): error $r_error, the pool is $(size): $r_detail"
        echo "$name: ok: grow: $r_detail"
done
run grow 0 $CONFIGURED max
[[ $r_error == 0 && $r_value == "$CONFIGURED" && $(size) == "$CONFIGURED" && $r_detail == *"nothing to grow"* ]] ||
        fail "a grow at the configured size: error $r_error, the pool is $(size): $r_detail"
echo "$name: ok: at the configured size: $r_detail"

stop_load
if grep -q '^fail' "$dir/load.log"; then
        fail "queries failed during the resizes: $(grep '^fail' "$dir/load.log" | head -3)"
fi
echo "$name: ok: the server answered all $(sed -n 's/^ok //p' "$dir/load.log") queries made during the resizes"
