#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A fragmenting multi-threaded allocator workload: four threads fill their malloc arenas with
# small blocks and free 63 in 64, so the server holds ~100M it does not use. The governor sees
# the arenas and climbs to trim; replaying its trace gives the decisions it logged.
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "fragmentation: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }

here=$(cd "$(dirname "$0")/.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
fail() { echo "fragmentation: FAIL: $*" >&2; exit 1; }

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 192M >"$cg/memory.max"

( echo "$BASHPID" >"$cg/cgroup.procs"; exec "$build/tests/memgov-memhog" fragment 4 28 64 ) >"$results/memhog.log" 2>&1 &
hog=$!
for _ in $(seq 100); do grep -q fragmented "$results/memhog.log" && break; sleep 0.2; done
grep -q fragmented "$results/memhog.log" || fail "the workload did not start"
cat "$results/memhog.log"

"$build/memgov" run --dry-run --cgroup /db --policy "$here/policies/fast.ini" --duration 12s \
        --record "$results/trace.csv" --socket /run/memgov/db.sock 2>"$results/memgov.log" &
governor=$!
sleep 8
"$build/memgov" status --json --socket /run/memgov/db.sock >"$results/status.json"
wait "$governor" || true
kill "$hog"

python3 - "$results/status.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
p = st["sample"]["process"]
# main, the four fragmenting threads and the stall ticker
ok = p["anon_maps"] >= 4 and p["threads"] == 6 and p["rss"] > 100 << 20
print(f"{'ok' if ok else 'FAIL'}: the governor sees {p['threads']} threads, {p['anon_maps']} anonymous "
      f"mappings (malloc arenas), RSS {p['rss'] >> 20}M")
sys.exit(0 if ok else 1)
PY
python3 "$here/check-ladder.py" "$build/memgov" "$here/policies/fast.ini" "$results/trace.csv" "$results/memgov.log" --rungs trim
