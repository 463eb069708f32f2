#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The allocators side by side on this machine, the fragmentation study's way: Debian's MariaDB
# and sysbench loops without a restart between them, each loop dropping and reloading the data
# set and running oltp_read_write at 1, 16, 64 and 128 users (STEP seconds each), one server per
# allocator, in turn in one invocation:
#   glibc          Debian's libc
#   arena-max-2    glibc with MALLOC_ARENA_MAX=2
#   jemalloc       Debian's libjemalloc2, preloaded (its defaults)
#   tcmalloc       Debian's libgoogle-perftools4, preloaded (its defaults)
# After each loop: the server's RSS, and what memgov explain says (the allocator's free memory,
# its findings). After the last loop: memgov trim, and what it gave back. Per loop: the
# transactions a second over its steps, and the p99 latency of its 128-user step. Writes one
# line per loop and one per allocator (key=value) to OUT, and prints them.
#   bench/allocators.sh [BUILD_DIR] [LOOPS] [OUT]
# STEP (seconds, default 15), POOL_MIB (default 128), TABLES, ROWS and RANGE_SIZE (the rows of
# each range query: sysbench's 100 by default; larger, each connection's result and sort buffers
# grow with it) change the setup.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
loops=${2:-3}
out=${3:-/dev/null}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../tests/lib/mariadb.sh
. "$here/tests/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "allocators: needs root to run mariadbd as mysql" >&2; exit 77; }
command -v sysbench >/dev/null || { echo "allocators: sysbench is not installed (scripts/setup-deps.sh --test)" >&2; exit 77; }
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
for lib in "$jemalloc" "$tcmalloc"; do
        [[ -e $lib ]] || { echo "allocators: $lib is missing (scripts/setup-deps.sh --test)" >&2; exit 77; }
done
step=${STEP:-15} pool_mib=${POOL_MIB:-128} tables=${TABLES:-4} rows=${ROWS:-20000} range_size=${RANGE_SIZE:-100}
users=(1 16 64 128)
memgov=$build/memgov

dir=
cleanup() {
        mariadb_stop
        [[ -z $dir ]] || rm -rf "$dir"
}
trap cleanup EXIT
: >"$out"
say() { echo "$*"; echo "$*" >>"$out"; }
say "# bench/allocators.sh: MariaDB $(mariadbd --version | sed -n 's/.*Ver \([^ ]*\).*/\1/p'); $(nproc) cores; $loops loops of" \
    "oltp_read_write at ${users[*]} users, ${step} s each; $tables tables of $rows rows; ranges of $range_size rows;" \
    "pool ${pool_mib}M;" \
    "memgov $(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)"

for allocator in glibc arena-max-2 jemalloc tcmalloc; do
        case $allocator in
        glibc) MARIADB_WRAP=() ;;
        arena-max-2) MARIADB_WRAP=(env MALLOC_ARENA_MAX=2) ;;
        jemalloc) MARIADB_WRAP=(env "LD_PRELOAD=$jemalloc") ;;
        tcmalloc) MARIADB_WRAP=(env "LD_PRELOAD=$tcmalloc") ;;
        esac
        dir=$(mktemp -d /tmp/memgov-allocators-XXXXXX)
        mariadb_start "$dir" --innodb-buffer-pool-size=$((pool_mib << 20)) --innodb-flush-log-at-trx-commit=0 \
                --max-connections=300 || exit $?
        mariadb_sql "CREATE DATABASE sbtest"
        sb=(--db-driver=mysql --mysql-socket="$MARIADB_SOCKET" --mysql-user=root --mysql-db=sbtest
            --tables="$tables" --table-size="$rows" --range-size="$range_size" --db-ps-mode=disable)
        for loop in $(seq "$loops"); do
                # The study's loop: the data set dropped and loaded again, then the users ramp up.
                sysbench oltp_read_write "${sb[@]}" cleanup >/dev/null 2>&1 || true
                sysbench oltp_read_write "${sb[@]}" --threads=4 prepare >"$dir/prepare.log" 2>&1 ||
                        { tail "$dir/prepare.log" >&2; exit 1; }
                txn=0 secs=0 p99=
                for u in "${users[@]}"; do
                        sysbench oltp_read_write "${sb[@]}" --threads="$u" --time="$step" --percentile=99 \
                                --report-interval=0 run >"$dir/run-$u.log" 2>&1 ||
                                { tail "$dir/run-$u.log" >&2; exit 1; }
                        t=$(awk '/transactions:/ {print $2}' "$dir/run-$u.log")
                        txn=$((txn + t)) secs=$((secs + step))
                        p99=$(awk '/99th percentile:/ {print $3}' "$dir/run-$u.log")
                done
                sleep 2
                rss=$(mariadb_rss)
                explained=$("$memgov" explain --pid "$MARIADB_PID" --json) || { echo "$explained" >&2; exit 1; }
                read -r free listed findings gives < <(python3 -c '
import json, sys
e = json.load(sys.stdin)
a = e.get("allocator", {})
f = [x for x in e["findings"] if x["kind"] == "allocator-retention"]
print(e["parts"].get("allocator_free", 0), a.get("free_listed", 0),
      "+".join(x["kind"] for x in e["findings"]) or "none", f[0]["gives_back"] if f else 0)' <<<"$explained")
                say "allocator=$allocator loop=$loop rss=$rss tps=$(( txn / secs )) p99_ms=$p99" \
                    "explain_free=$free explain_free_listed=$listed explain_findings=$findings explain_gives_back=$gives"
        done
        before=$(mariadb_rss)
        report=$("$memgov" trim --pid "$MARIADB_PID" --json) || { echo "$report" >&2; exit 1; }
        sleep 1
        after=$(mariadb_rss)
        fn=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["function"])' <<<"$report")
        say "allocator=$allocator trim=$fn rss_before=$before rss_after=$after trim_freed=$((before > after ? before - after : 0))"
        mariadb_stop
        rm -rf "$dir"
        dir= MARIADB_DIR=
done
