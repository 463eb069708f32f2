#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# MariaDB's own memory-pressure handling beside memgov, on the real kernel: MariaDB 11.8 from its
# chroot, started with innodb_buffer_pool_size_auto_min under its pool's size, so that on a
# memory pressure event of its cgroup (a PSI trigger on memory.pressure) it shrinks its buffer
# pool by itself. Its pool is filled by a table; anonymous memory grows beside it in the same
# cgroup; memgov, with the shipped default on a faster clock, lowers memory.high on the way up.
# When the server shrinks its pool, memgov sees it on the session it keeps open, logs what it
# gave back, counts it in memgov status, and never grows the pool back (it took none of it).
#   tests/vm/run-vm.sh --disk 2G --mem 2G --env MEMGOV_BUILD=build tests/vm/scenarios/pool-pressure.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "pool-pressure: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
# shellcheck source=../../lib/servers.sh
. "$here/lib/servers.sh"
fail() { echo "pool-pressure: FAIL: $*" >&2; [[ -s $results/memgov.log ]] && tail -30 "$results/memgov.log" >&2; exit 1; }
policy=$here/vm/policies/pool.ini
hog=$build/tests/memgov-memhog
M=$((1 << 20))
mib() { echo "$(( $1 / M ))M"; }
trap 'kill ${hog_pid:-} ${governor:-} 2>/dev/null || true; server_stop' EXIT

server_provision mariadb-11.8
cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 1G >"$cg/memory.max"
echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
# The server sees its own cgroup file system (it finds its memory.pressure through it), and may
# arm a trigger on its memory.pressure as the mysql account, as in a cgroup delegated to it.
chown "$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$SERVER_ROOT/etc/passwd")" "$cg/memory.pressure"
SERVER_CGROUPFS=1 SERVER_CGROUP=$cg server_start "${MEMGOV_DISK:?run with --disk}/mariadb-11.8" \
        --innodb-buffer-pool-size=$((256 * M)) --innodb-buffer-pool-size-auto-min=$((128 * M)) || exit 1
grep -i 'memory pressure' "$SERVER_DIR/error.log" || { tail -30 "$SERVER_DIR/error.log" >&2; fail "the server did not start its memory-pressure listener"; }
server_sql "CREATE DATABASE p; USE p; CREATE TABLE t (id INT PRIMARY KEY, pad CHAR(255)) ENGINE=InnoDB;
            INSERT INTO t SELECT seq, REPEAT('p', 255) FROM seq_1_to_1000000;
            SELECT COUNT(*) FROM t WHERE pad LIKE 'q%'" >/dev/null
sync
echo 1 >/proc/sys/vm/drop_caches
held=$(cat "$cg/memory.current")
MAX=$(( (held * 100 / 80 + M - 1) / M * M ))
echo "$MAX" >"$cg/memory.max"
echo "pool-pressure: $(server_sql "SELECT VERSION()"), pool $(mib "$(server_sql "SELECT @@innodb_buffer_pool_size")")," \
     "auto_min 128M; memory.current $(mib "$held"), memory.max $(mib "$MAX")"

# memgov explain sees what the server sees: the cgroup file system bound into its root, its
# memory.pressure handed to its account (above), auto_min under the pool: the listener can act,
# and there is no pressure-listener-idle finding.
"$build/memgov" explain --cgroup /db --json --no-allocator >"$results/explain.json" ||
        fail "explain: $(cat "$results/explain.json")"
python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
mp = e.get("memory_pressure", {})
if mp.get("access") != "writable" or mp.get("ids_allow") is not True:
    sys.exit(f"memory_pressure: {mp}, expected writable")
if any(f["kind"] == "pressure-listener-idle" for f in e["findings"]):
    sys.exit("a pressure-listener-idle finding where the listener runs: " + json.dumps(e["findings"]))
print(f"pool-pressure: ok: explain: memory.pressure {mp}, no pressure-listener-idle finding")' "$results/explain.json" ||
        fail "explain"

"$build/memgov" run --cgroup /db --policy "$policy" --socket /run/memgov/db.sock --state-dir "$results" \
        --record "$results/trace.csv" 2>"$results/memgov.log" &
governor=$!
sleep 3
( echo "$BASHPID" >"$cg/cgroup.procs"; exec "$hog" grow 1 $(( (MAX - held) / M )) ) >"$results/hog.log" 2>&1 &
hog_pid=$!
for _ in $(seq 900); do
        grep -q 'pool: the buffer pool shrank without memgov' "$results/memgov.log" && break
        grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
        kill -0 "$hog_pid" 2>/dev/null || break
        sleep 0.2
done
sleep 12 # the next reads of the pool, and what memgov does after
kill "$hog_pid" 2>/dev/null || true
wait "$hog_pid" 2>/dev/null || true
"$build/memgov" status --socket /run/memgov/db.sock --json >"$results/status.json" || true
"$build/memgov" status --socket /run/memgov/db.sock >"$results/status.txt" || true
kill "$governor"
wait "$governor" || true
grep -E 'memgov: (level|set memory|resize pool|reset|effect)|pool: |-> ' "$results/memgov.log" | cut -c1-240 || true
grep -i 'pressure\|buffer pool\|resiz' "$SERVER_DIR/error.log" | cut -c1-200 | tail -10 || true
grep '^  buffer pool' "$results/status.txt" || true
echo "memory.events: $(tr '\n' ' ' <"$cg/memory.events")"

grep -q '^oom_kill 0' "$cg/memory.events" || fail "the kernel OOM-killed a process"
grep -q "pool: buffer pool 256M; the server shrinks it by itself on memory pressure, down to 128M" "$results/memgov.log" ||
        fail "memgov did not say that the server shrinks its pool by itself"
line=$(grep -m1 'pool: the buffer pool shrank without memgov' "$results/memgov.log") ||
        fail "the server's own shrink was not seen (pool $(server_sql "SELECT @@innodb_buffer_pool_size"))"
echo "pool-pressure: ${line#*memgov: }"
grep -q -- '-> grew innodb_buffer_pool_size' "$results/memgov.log" && fail "memgov grew back what the server took"
python3 - "$results/status.json" <<'PY' || fail "memgov status: $(cat "$results/status.json")"
import json, sys
b = json.load(open(sys.argv[1]))["server"]["buffer_pool"]
assert b["server_shrinks_on_pressure"] is True and b["auto_min"] == 128 << 20, b
assert b["shrinks_by_server"] >= 1 and b["shrunk_by_server"] > 0, b
print(f"pool-pressure: memgov status: the server shrank its pool {b['shrinks_by_server']} time(s), "
      f"{b['shrunk_by_server'] >> 20}M in all; pool {b['size'] >> 20}M of {b['found'] >> 20}M")
PY
[[ $(server_sql "SELECT COUNT(*) FROM p.t") == 1000000 ]] || fail "the server does not answer"
echo "pool-pressure: ok: the server shrank its own pool on memory pressure; memgov saw it, counted it, left it"
