#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The demo itself, run by memgov demo as root on a cgroup v2 host or in the VM: a database server
# from Debian's packages under memory.max, memgov governing it, and two kinds of growth: a heap
# fragmented by many sessions (what a trim gives back), then sessions piling up memory only
# closing them frees (what a connection reset gives back). MEMGOV_DEMO_SERVER says which server:
# mariadb (the host's MariaDB, the default), or mysql-9.7 or mariadb-11.8 from their chroots
# (scripts/provision-servers.sh, built by memgov demo before it starts this).
# Writes to $MEMGOV_RESULTS: phase (one line: what is happening), status.json (memgov status,
# every second), memgov.log, trace.csv, metrics.prom, explain.json (memgov explain, with the heap
# fragmented), summary.json at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
out=${MEMGOV_RESULTS:?}
work=${MEMGOV_DISK:-/var/tmp/memgov-demo}
flavour=${MEMGOV_DEMO_SERVER:-mariadb}
# The server through the same few calls whichever it is: db_start CGROUP, db_sql SQL, db_socket,
# db_stop; a chroot's server is reached through its own client in its root (sessions.py too).
if [[ $flavour == mariadb ]]; then
        # shellcheck source=../../tests/lib/mariadb.sh
        . "$here/tests/lib/mariadb.sh"
        name=MariaDB
        db_start() { MARIADB_CGROUP=$1 mariadb_start "$work/mariadb" --innodb-buffer-pool-size=64M; }
        db_sql() { mariadb_sql "$@"; }
        db_socket() { mariadb_client_socket; }
        db_stop() { mariadb_stop; }
else
        # shellcheck source=../../tests/lib/servers.sh
        . "$here/tests/lib/servers.sh"
        server_provision "$flavour" # built already: verified here, never built in the VM
        case $flavour in mysql-*) name=MySQL ;; *) name=MariaDB ;; esac
        db_start() {
                SERVER_CGROUP=$1 server_start "$work/$flavour" --innodb-buffer-pool-size=64M || return 1
                export SESSIONS_CLIENT="nsenter -t $SERVER_PID -m -r -w -- $SERVER_CLIENT"
        }
        db_sql() { server_sql "$@"; }
        db_socket() { echo "$SERVER_SOCKET"; }
        db_stop() { server_stop; }
fi
sessions=$here/tests/workloads/sessions.py
phase() { echo "$*" >"$out/phase.new" && mv "$out/phase.new" "$out/phase"; }
start=$(date +%s)

# memory.max 600M, or 480M over what the idle server holds where that is more (MySQL's idle
# mysqld holds some 500M): the same room to grow into on every server.
M=$((1 << 20))
phase "starting $name"
cg=${MEMGOV_CGROUP:?}/memgov-demo
mkdir -p "$cg"
echo 1200M >"$cg/memory.max"
echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
db_start "$cg"
db_sql "CREATE USER IF NOT EXISTS app@localhost IDENTIFIED BY 'app'" >/dev/null
version=$(db_sql "SELECT VERSION()")
held=$(cat "$cg/memory.current")
max=$(( held + 480 * M > 600 * M ? (held + 480 * M + M - 1) / M * M : 600 * M ))
echo "$max" >"$cg/memory.max"
phase "$name $version under memory.max $((max / M))M"

phase "starting memgov"
# The demo's policy, and its metrics as a node_exporter textfile for the summary.
{ cat "$here/scripts/demo/demo.ini"; printf '[metrics]\ntextfile = %s\n' "$out/metrics.prom"; } >"$out/policy.ini"
"$build/memgov" run --cgroup "/${cg#/sys/fs/cgroup/}" --policy "$out/policy.ini" \
        --record "$out/trace.csv" --socket /run/memgov/demo.sock --state-dir "" 2>"$out/memgov.log" &
governor=$!
trap 'kill $governor $reporter 2>/dev/null || true; db_stop || true' EXIT
( while kill -0 "$governor" 2>/dev/null; do
        "$build/memgov" status --json --socket /run/memgov/demo.sock >"$out/status.json.new" 2>/dev/null &&
                mv "$out/status.json.new" "$out/status.json"
        sleep 1
  done ) &
reporter=$!
sleep 2

phase "growth 1: 10 sessions, one every 3 s, fragment the server's heap (memory freed but kept by the allocator)"
# Each session sets 30 one-megabyte variables in its own thread's malloc arena, frees every other
# one and stays: half of what it took are holes only a trim gives back.
set_vars="" unset_vars=""
for j in $(seq 30); do
        set_vars+="SET @v$j = REPEAT('m', 1000000 + $j);"
        (( j % 2 == 0 )) && unset_vars+="SET @v$j = NULL;"
done
frag=()
for _ in $(seq 10); do
        db_sql "$set_vars $unset_vars SELECT SLEEP(600);" >/dev/null 2>&1 &
        frag+=($!)
        sleep 3
done
# Where the memory is with the heap fragmented (the trim may have given some of it back already).
"$build/memgov" explain --cgroup "/${cg#/sys/fs/cgroup/}" --json >"$out/explain.json" 2>"$out/explain.err" || true
for _ in $(seq 100); do grep -q 'effect *trim freed' "$out/memgov.log" && break; sleep 0.2; done
sleep 8
phase "the fragmenting sessions end"
# Each is ended once it sleeps: one still setting its variables (a server slowed by memory.high, a
# busy machine) is caught on a later round, not left to sleep its 600 s. At most a minute.
frag_alive() { local p; for p in "${frag[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
for _ in $(seq 60); do
        { db_sql "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SLEEP(600)%' AND ID <> CONNECTION_ID()" |
                while read -r id; do db_sql "KILL $id" || true; done; } || true
        frag_alive || break
        sleep 1
done
frag_alive && { kill "${frag[@]}" 2>/dev/null || true; }
wait "${frag[@]}" 2>/dev/null || true
sleep 5

phase "growth 2: 3 sessions pile up memory (3M/s each) that only closing them frees"
# Until the reset (or at most 150 s): on a slow machine the sessions grow more slowly, and a reset
# whose list of sessions a throttled server did not answer within sql.query-timeout comes again
# after its backoff (measured with two VMs on two cores: MySQL 9.7's first one failed so, near
# the end of what were 90 s).
python3 "$sessions" "$(db_socket)" leaky app app 3 3 150 >"$out/sessions.log" &
leaky=$!
for _ in $(seq 750); do
        grep -q -- '-> reset [0-9]* of' "$out/memgov.log" && break
        grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
        kill -0 "$leaky" 2>/dev/null || break
        sleep 0.2
done
kill "$leaky" 2>/dev/null || true
wait "$leaky" 2>/dev/null || true
sleep 5

phase "stopping"
"$build/memgov" status --json --socket /run/memgov/demo.sock >"$out/status.json" 2>/dev/null || true
kill "$governor"
for _ in $(seq 300); do kill -0 "$governor" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$governor" 2>/dev/null; then
        echo "memgov demo: memgov did not stop within 30 s of SIGTERM (its log: $out/memgov.log)" >&2
        kill -KILL "$governor" 2>/dev/null || true
fi
wait "$governor" || true
oom=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")
python3 - "$out/summary.json" <<PY
import json, sys
json.dump({"server": "$name $version", "memory_max": $(cat "$cg/memory.max"), "oom_kills": $oom,
           "seconds": $(( $(date +%s) - start ))}, open(sys.argv[1], "w"))
PY
phase "done"
