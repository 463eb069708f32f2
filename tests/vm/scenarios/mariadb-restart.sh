#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Growth nothing else can stop (the growing sessions belong to an exempt user): memgov restarts
# the server gracefully before the OOM point (pre-flush, SIGTERM through a pidfd, a supervisor
# starts it again as a kubelet would), memory.max is raised while it stops and put back; the
# error log shows a clean shutdown and no crash recovery. Then memgov itself is restarted: the
# restart history on disk holds it to one restart a day.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/mariadb-restart.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "mariadb-restart: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
export MEMGOV_UDF=$build/memgov_udf.so
# shellcheck source=../../lib/mariadb.sh
. "$here/lib/mariadb.sh"
fail() { echo "mariadb-restart: FAIL: $*" >&2; exit 1; }
policy=$here/vm/policies/restart.ini
sessions=$here/workloads/sessions.py

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
rm -rf "$results/state"
echo 360M >"$cg/memory.max"
MARIADB_CGROUP=$cg MARIADB_SUPERVISE=1 mariadb_start "${MEMGOV_DISK:?run with --disk}/mariadb"
mariadb_sql "CREATE USER IF NOT EXISTS leaky@localhost IDENTIFIED BY 'leaky'"
first=$MARIADB_PID

"$build/memgov" run --cgroup /db --policy "$policy" --record "$results/trace1.csv" --socket /run/memgov/db.sock \
        --state-dir "$results/state" 2>"$results/memgov1.log" &
governor=$!
sleep 1
python3 "$sessions" "$MARIADB_SOCKET" leaky leaky leaky 3 2 90 >"$results/leaky1.log" &
leaky=$!
for _ in $(seq 600); do
        grep -q 'graceful restart done' "$results/memgov1.log" && break
        grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
        sleep 0.2
done
kill "$leaky" 2>/dev/null || true
grep -q 'graceful restart done' "$results/memgov1.log" || fail "no restart completed"
mariadb_wait_restart "$first" || fail "the server did not come back"
sleep 3 # memgov puts memory.max back when it sees the new server
"$build/memgov" status --socket /run/memgov/db.sock >"$results/status1.txt" || true
kill "$governor"; wait "$governor" || true

echo "memory.events:"; cat "$cg/memory.events"
grep -q '^oom_kill 0' "$cg/memory.events" || fail "the server was OOM-killed"
grep -q 'set memory.max.*raise memory.max 360M -> 396M' "$results/memgov1.log" || fail "memory.max was not raised for the stop"
[[ $(cat "$cg/memory.max") == $((360 << 20)) ]] || fail "memory.max is $(cat "$cg/memory.max"), not put back"
grep -q -- '-> stopped .* with SIGTERM .*flushed dirty pages' "$results/memgov1.log" || fail "no graceful stop with pre-flush"
grep -q 'Shutdown complete' "$MARIADB_DIR/error.log" || fail "the error log shows no clean shutdown"
[[ -e /tmp/memgov-pre-restart && -e /tmp/memgov-post-restart ]] || fail "the pre- and post-restart hooks did not run"
grep -qi 'crash recovery' "$MARIADB_DIR/error.log" && fail "the server went through crash recovery"
grep -h 'graceful restart\|-> stopped\|set memory.max\|event ' "$results/memgov1.log"
echo "mariadb-restart: ok: restarted gracefully before the OOM point (pid $first -> $MARIADB_PID), clean shutdown, no crash recovery, memory.max raised and put back"

# memgov restarts; the growth comes back; the history on disk says a restart happened today.
second=$MARIADB_PID
"$build/memgov" run --cgroup /db --policy "$policy" --record "$results/trace2.csv" --socket /run/memgov/db.sock \
        --state-dir "$results/state" 2>"$results/memgov2.log" &
governor=$!
for _ in $(seq 150); do grep -q 'restart history: ' "$results/memgov2.log" && break; sleep 0.2; done
grep -q 'restart history: 1 restart(s) remembered' "$results/memgov2.log" || fail "the restart history was not read back"
python3 "$sessions" "$MARIADB_SOCKET" leaky leaky leaky 3 2 90 >"$results/leaky2.log" &
leaky=$!
for _ in $(seq 600); do
        grep -q 'restart held' "$results/memgov2.log" && break
        sleep 0.2
done
kill "$leaky" 2>/dev/null || true
kill "$governor"; wait "$governor" || true
grep -q 'restart held: 1 restart(s) in the last 24h (restart.max-per-day 1)' "$results/memgov2.log" ||
        fail "the second restart was not held back"
grep -q 'would restart\|-> stopped' "$results/memgov2.log" && fail "a second restart was attempted"
[[ $(cat "$MARIADB_DIR/run/mysqld.pid") == "$second" ]] || fail "the server was restarted again"
grep -h 'restart held' "$results/memgov2.log"
echo "mariadb-restart: ok: after memgov restarted, max-per-day held the second restart back"
mariadb_stop
