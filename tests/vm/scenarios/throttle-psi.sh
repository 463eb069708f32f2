#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# memory.high throttling on a real kernel: a workload allocating past memory.high is slowed
# (memory.events "high" counts up, PSI memory stalls accrue), and the governor is woken both
# by its PSI trigger and by the memory.events change notification.
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "throttle-psi: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }

here=$(cd "$(dirname "$0")/.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
fail() { echo "throttle-psi: FAIL: $*" >&2; exit 1; }

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 256M >"$cg/memory.max"
echo 48M >"$cg/memory.high"

"$build/memgov" run --dry-run --cgroup /db --policy "$here/policies/fast.ini" --log-level debug \
        --record "$results/trace.csv" --socket /run/memgov/db.sock 2>"$results/memgov.log" &
governor=$!
sleep 1

( echo "$BASHPID" >"$cg/cgroup.procs"; exec "$build/tests/memgov-memhog" grow 8 120 ) >"$results/memhog.log" 2>&1 &
hog=$!
sleep 25

"$build/memgov" status --json --socket /run/memgov/db.sock >"$results/status.json"
kill "$hog" "$governor"
wait "$governor" || true

echo "memory.events:"; cat "$cg/memory.events"
echo "memory.pressure:"; cat "$cg/memory.pressure"
python3 - "$results/status.json" "$cg" "$results/memgov.log" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
cg = sys.argv[2]
# memgov started on an empty cgroup and looked for its process at every sample until the
# workload came: the cgroup stayed the same, and so did its trigger (armed again, a trigger
# starts a new window and fires late).
armed = sum(1 for line in open(sys.argv[3]) if "PSI trigger" in line and "armed" in line)
events = dict(l.split() for l in open(cg + "/memory.events"))
some_total = int(open(cg + "/memory.pressure").readline().split("total=")[1])
checks = [
    (int(events["high"]) > 0, f"memory.events high = {events['high']} (throttling at memory.high)"),
    (some_total > 0, f"PSI some total = {some_total} us of stall"),
    (st["psi_triggers"] > 0, f"the PSI trigger woke the governor {st['psi_triggers']} times"),
    (st["memory_events_notifications"] > 0,
     f"memory.events notifications woke the governor {st['memory_events_notifications']} times"),
    (st["sample"]["events"]["high"] > 0, f"the governor read memory.events high = {st['sample']['events']['high']}"),
    (armed == 1, f"the PSI trigger was armed {armed} time(s), once for the one cgroup"),
]
bad = [m for ok, m in checks if not ok]
for ok, m in checks:
    print(("ok: " if ok else "FAIL: ") + m)
sys.exit(1 if bad else 0)
PY
