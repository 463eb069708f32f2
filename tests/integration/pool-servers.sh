#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The buffer-pool rung on a real server of another flavour, from its Debian chroot (MySQL 9.7,
# MariaDB 11.8 with its new buffer-pool code), as pool-mariadbd.sh runs it on the host's MariaDB
# (the steps shared in tests/lib/pool-steps.sh): a 256M pool filled with a table's pages; a dry
# run changes nothing; shrink steps go down one step each (12.5%) to the floor (25%), where the
# step fails with its sentence; what each step gave back is measured; the server answers queries
# throughout; grow steps come back to the configured size and no further; a server that turns
# every new connection away (pool_no_new_connection). MySQL resizes its pool
# in chunks: it runs with innodb_buffer_pool_chunk_size 32M, the step's size (with its default
# 128M, memgov's steps round to whole chunks).
#   pool-servers.sh FLAVOUR MEMGOV_POOL_RESIZE
set -euo pipefail
flavour=$1
POOL_RESIZE=$2
here=$(cd "$(dirname "$0")/.." && pwd)
name=pool-$flavour
# shellcheck source=../lib/servers.sh
. "$here/lib/servers.sh"
# shellcheck source=../lib/pool-steps.sh
. "$here/lib/pool-steps.sh"
[[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root (chroot, mount namespaces, debootstrap)" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
pool_sql() { server_sql "$1"; }
pool_rss() { server_rss; }

M=$((1024 * 1024))
CONFIGURED=$((256 * M))
STEP_BP=1250   # 32M
FLOOR_BP=2500  # 64M

server_provision "$flavour"
dir=$(mktemp -d /tmp/memgov-pool-XXXXXX)
trap 'pool_load_end; server_stop; rm -rf "$dir"' EXIT
opts=(--innodb-buffer-pool-size=$CONFIGURED)
[[ $flavour == mysql-* ]] && opts+=(--innodb-buffer-pool-chunk-size=$((32 * M)) --innodb-buffer-pool-instances=1)
server_start "$dir" "${opts[@]}" || exit $?
POOL_PID=$SERVER_PID
echo "$name: $(server_sql "SELECT VERSION()")"

# The table's rows from MariaDB's sequence engine, or on MySQL from a recursive query.
if [[ $flavour == mysql-* ]]; then
        POOL_FILL_SETUP="SET SESSION cte_max_recursion_depth = 1000000;"
        pool_fill "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 1000000) SELECT n, REPEAT('p', 255) FROM s"
else
        pool_fill "SELECT seq, REPEAT('p', 255) FROM seq_1_to_1000000"
fi
pool_load_start
pool_dry_run
pool_steps_down
# MySQL resizes in chunks: a floor that is no whole number of them is rounded up, and the step
# says so (with the default 128M chunk, a 128M pool has nowhere to go).
if [[ $flavour == mysql-* ]]; then
        pool_run shrink 0 $((192 * M)) max
        [[ $r_error == -34 && $r_detail == *"floor 64M, 25% of the configured 192M rounded up to the server's resize unit 32M"* ]] ||
                fail "the step at a floor rounded up to the chunk: error $r_error: $r_detail"
        echo "$name: ok: a floor rounded up to the chunk: $r_detail"
fi
pool_steps_up
pool_load_stop
pool_no_new_connection
