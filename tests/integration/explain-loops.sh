#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# memgov explain closes the loop on allocator retention, on a real MariaDB (Debian's, glibc), the
# fragmentation study's way: the same workload in loops without a restart, each loop dropping and
# loading the data set again and running sysbench oltp_read_write at 1, 16, 64 and 128 users. Its
# ranges of 2000 rows give each connection result and sort buffers of about a megabyte, freed when
# it ends: on glibc, the heap keeps them. After the loops explain finds allocator retention and
# prints a drop-in; the server is started again on the same data with the drop-in's Environment=
# lines (what systemd does with them; systemd-mariadb applies it through systemd) and runs the
# same loops: the retention is gone (no finding, the allocator's free memory a fifth or less of
# glibc's) and the resident set after the loops is lower by at least 40% of what explain said.
#   explain-loops.sh MEMGOV
set -euo pipefail
memgov=$1
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "explain-loops: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
command -v sysbench >/dev/null || { echo "explain-loops: sysbench is not installed (scripts/setup-deps.sh --test)" >&2; exit 1; }
fail() { echo "explain-loops: FAIL: $*" >&2; exit 1; }
# meson sets MALLOC_PERTURB_, which has glibc write over every block freed (resident, then): the
# server runs without it, as a user's does.
unset MALLOC_PERTURB_
ok() { echo "explain-loops: ok: $*"; }

dir=$(mktemp -d /tmp/memgov-explain-loops-XXXXXX)
trap 'mariadb_stop; rm -rf "$dir"' EXIT
step=2 loops=2 users=(1 16 64 128)
M=$((1 << 20))

start() {
        mariadb_start "$dir" --innodb-buffer-pool-size=$((128 * M)) --innodb-flush-log-at-trx-commit=0 \
                --max-connections=300 || exit $?
        mariadb_sql "CREATE DATABASE IF NOT EXISTS sbtest"
}
# The loops; after each, what explain says (its JSON kept as NAME-LOOP.json); after the last, once
# the allocator had SETTLE seconds to give back what it gives back on its own.
run_loops() { # NAME SETTLE
        local sb=(--db-driver=mysql --mysql-socket="$MARIADB_SOCKET" --mysql-user=root --mysql-db=sbtest
                  --tables=2 --table-size=10000 --range-size=2000 --db-ps-mode=disable) loop u
        for loop in $(seq $loops); do
                sysbench oltp_read_write "${sb[@]}" cleanup >/dev/null 2>&1 || true
                sysbench oltp_read_write "${sb[@]}" --threads=4 prepare >"$dir/prepare.log" 2>&1 ||
                        fail "sysbench prepare: $(tail -3 "$dir/prepare.log")"
                for u in "${users[@]}"; do
                        sysbench oltp_read_write "${sb[@]}" --threads="$u" --time=$step --report-interval=0 run \
                                >"$dir/run.log" 2>&1 || fail "sysbench at $u users: $(tail -3 "$dir/run.log")"
                done
                (( loop < loops )) || sleep "$2"
                "$memgov" explain --pid "$MARIADB_PID" --json >"$dir/$1-$loop.json" ||
                        fail "explain: $(cat "$dir/$1-$loop.json")"
                python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
p, a = e["parts"], e.get("allocator", {})
total, src = e["total"], e["total_source"]
if sum(p.values()) != total:
    sys.exit(f"the parts {p} do not add up to {total}")
found = ", ".join(x["kind"] for x in e["findings"]) or "none"
free = p.get("allocator_free", 0)
name = a.get("allocator")
print(f"explain-loops: {sys.argv[2]}, loop {sys.argv[3]}: {src} {total >> 20}M, allocator {name} free {free >> 20}M; findings: {found}")' \
                        "$dir/$1-$loop.json" "$1" "$loop" || fail "explain after loop $loop"
        done
}
# FILE KEY: a figure of explain's JSON (allocator, total, free, gives_back of allocator-retention).
figure() {
        python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
k = sys.argv[2]
if k == "allocator":
    print(e.get("allocator", {}).get("allocator", "none"))
elif k == "total":
    print(e["total"])
elif k == "free":
    print(e["parts"].get("allocator_free", 0))
elif k == "gives_back":
    f = [x for x in e["findings"] if x["kind"] == "allocator-retention"]
    print(f[0]["gives_back"] if f else 0)' "$1" "$2"
}

start
run_loops glibc 1
last=$dir/glibc-$loops.json
[[ $(figure "$last" allocator) == glibc ]] || fail "the server's allocator is $(figure "$last" allocator)"
predicted=$(figure "$last" gives_back) free=$(figure "$last" free) total=$(figure "$last" total)
# Seen: 147M after two loops (113-128M after one), of a 287M resident set.
(( predicted >= 64 * M )) || fail "no allocator retention of 64M or more after the loops: $(cat "$last")"
# The drop-in, as printed: its Environment= lines, the variables systemd gives the server.
python3 -c '
import json, shlex, sys
e = json.load(open(sys.argv[1]))
fix = [f for f in e["findings"] if f["kind"] == "allocator-retention"][0]["fix"]
env = [l.strip()[len("Environment="):] for l in fix if l.strip().startswith("Environment=")]
if not any(l.strip() == "[Service]" for l in fix) or not env:
    sys.exit("no drop-in in the fix: " + repr(fix))
for v in env:
    # systemd: Environment="A=B" (quotes removed, one assignment each here)
    print(shlex.split(v)[0])' "$last" >"$dir/environment" || fail "the fix"
ok "after $loops loops on glibc: $(( total / M ))M resident, explain says allocator retention gives back" \
   "$(( predicted / M ))M; drop-in environment: $(tr '\n' ' ' <"$dir/environment")"

mariadb_stop
mapfile -t assignments <"$dir/environment"
MARIADB_WRAP=(env "${assignments[@]}")
start
grep -q libjemalloc "/proc/$MARIADB_PID/maps" || fail "the server does not map jemalloc with the drop-in's environment"
# jemalloc's background thread purges what stayed dirty for dirty_decay_ms (5 s), then what stayed
# muzzy for muzzy_decay_ms (5 s more).
run_loops fixed 11
last=$dir/fixed-$loops.json
[[ $(figure "$last" allocator) == jemalloc ]] || fail "the allocator after the fix is $(figure "$last" allocator)"
free2=$(figure "$last" free) total2=$(figure "$last" total)
(( $(figure "$last" gives_back) == 0 )) || fail "allocator retention after the fix: $(cat "$last")"
(( free2 * 5 <= free )) || fail "jemalloc holds $(( free2 / M ))M free after the loops, glibc held $(( free / M ))M"
# The resident set falls by less than the retention: jemalloc's own overhead (its arenas, the
# caches of the threads the server keeps) takes a share. Seen: 98-115M of 147-148M predicted.
(( total - total2 >= predicted * 2 / 5 )) ||
        fail "resident $(( total / M ))M -> $(( total2 / M ))M: less than 40% of the $(( predicted / M ))M predicted"
ok "the same loops with the fix: $(( total / M ))M -> $(( total2 / M ))M resident ($(( (total - total2) / M ))M," \
   "explain predicted $(( predicted / M ))M); allocator free $(( free / M ))M -> $(( free2 / M ))M; no retention"
