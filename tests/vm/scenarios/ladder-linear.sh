#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Linear growth under memory.max, like the 800-900 MB/h MariaDB retention test scaled to a
# minute and a half: a dry-run governor must log every rung of the ladder before the kernel's
# OOM kill, and replaying its recorded trace must give exactly the decisions it logged.
# Runs in the VM: tests/vm/run-vm.sh --env MEMGOV_BUILD=build tests/vm/scenarios/ladder-linear.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "ladder-linear: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }

here=$(cd "$(dirname "$0")/.." && pwd)
build=${MEMGOV_BUILD:?MEMGOV_BUILD is the build directory}
results=${MEMGOV_RESULTS:?}
policy=$here/policies/fast.ini

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 160M >"$cg/memory.max"
echo 0 >"$cg/memory.swap.max" 2>/dev/null || true

"$build/memgov" run --dry-run --cgroup "${cg#/sys/fs/cgroup}" --policy "$policy" \
        --record "$results/trace.csv" --socket /run/memgov/db.sock 2>"$results/memgov.log" &
governor=$!

# The workload joins the cgroup, then grows 1.6 MiB a second toward 400 MiB: it cannot make it.
( echo "$BASHPID" >"$cg/cgroup.procs"; exec "$build/tests/memgov-memhog" grow 1.6 400 ) >"$results/memhog.log" 2>&1 &
hog=$!

# Wait for the OOM kill (at most 3 minutes), then give the governor two samples to see it.
for _ in $(seq 900); do
        grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
        sleep 0.2
done
sleep 2
"$build/memgov" status --socket /run/memgov/db.sock >"$results/status.txt" || true
"$build/memgov" status --json --socket /run/memgov/db.sock >"$results/status.json" || true
kill "$governor" 2>/dev/null || true
wait "$governor" || true
kill "$hog" 2>/dev/null || true

cat "$cg/memory.events"
grep -q '^oom_kill [1-9]' "$cg/memory.events" || { echo "ladder-linear: FAIL: the workload was never OOM-killed" >&2; exit 1; }
grep -q '"psi_triggers"' "$results/status.json" || { echo "ladder-linear: FAIL: memgov status did not answer" >&2; exit 1; }
cat "$results/status.txt"
python3 "$here/check-ladder.py" "$build/memgov" "$policy" "$results/trace.csv" "$results/memgov.log" --before-oom
