#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A real MariaDB server whose heap sessions fragmented: memgov trims it, the memory comes back,
# and nothing further happens: no reset, no restart, no OOM kill.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/mariadb-fragmentation.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "mariadb-fragmentation: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
export MEMGOV_UDF=$build/memgov_udf.so
# shellcheck source=../../lib/mariadb.sh
. "$here/lib/mariadb.sh"
fail() { echo "mariadb-fragmentation: FAIL: $*" >&2; exit 1; }

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 640M >"$cg/memory.max"
MARIADB_CGROUP=$cg mariadb_start "${MEMGOV_DISK:?run with --disk}/mariadb"
# The heap fragmented over time before memgov looks at it.
mariadb_fragment 10 40 || fail "the fragmenting sessions did not start"
echo "fragmented: RSS $(( $(mariadb_rss) >> 20 ))M"
# What memgov explain says of it on a real cgroup v2: the parts add up to memory.current, and
# what it says a trim gives back is checked against the trim below.
"$build/memgov" explain --cgroup /db --json >"$results/explain.json" || fail "explain: $(cat "$results/explain.json")"
predicted=$(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
p, t = e["parts"], e["total"]
if e["total_source"] != "memory.current" or sum(p.values()) != t:
    sys.exit(f"explain: the parts {p} do not add up to memory.current {t}")
r = [f["gives_back"] for f in e["findings"] if f["kind"] == "allocator-retention"]
if not r:
    sys.exit("explain: no allocator-retention finding: " + json.dumps(e["findings"]))
print(r[0])
o = e["overcounted"]
print("explain: " + ", ".join(f"{k} {v >> 20}M" for k, v in p.items()) + f" = memory.current {t >> 20}M; "
      f"{o >> 20}M overcounted; a trim would give back {r[0] >> 20}M", file=sys.stderr)' \
        "$results/explain.json") || fail "explain"
"$build/memgov" run --cgroup /db --policy "$here/vm/policies/fragmentation.ini" --record "$results/trace.csv" \
        --socket /run/memgov/db.sock --state-dir "$results" 2>"$results/memgov.log" &
governor=$!
for _ in $(seq 300); do grep -q 'effect *trim freed' "$results/memgov.log" && break; sleep 0.2; done
sleep 8
"$build/memgov" status --socket /run/memgov/db.sock >"$results/status.txt" || true
kill "$governor"; wait "$governor" || true
mariadb_unfragment
cat "$results/status.txt"

grep -q '^oom_kill 0' "$cg/memory.events" || fail "OOM kill"
line=$(grep -m1 'effect *trim freed' "$results/memgov.log") || fail "no trim"
echo "$line"
freed=$(echo "$line" | sed -n 's/.*trim freed \(only \)\{0,1\}\([0-9.]*\)\([KMG]\).*/\2 \3/p')
read -r n unit <<<"$freed"
python3 -c "import sys; v = float('${n:-0}') * {'K': 1 / 1024, 'M': 1, 'G': 1024}.get('$unit', 0); sys.exit(0 if v >= 100 else 1)" ||
        fail "the trim freed only $n$unit"
python3 -c "import sys; v = float('${n:-0}') * {'K': 1 / 1024, 'M': 1, 'G': 1024}.get('$unit', 0); p = $predicted / 2**20
sys.exit(0 if abs(p - v) <= 0.2 * v else 1)" || fail "explain said a trim gives back $(( predicted >> 20 ))M, it freed $n$unit"
echo "mariadb-fragmentation: ok: explain said a trim gives back $(( predicted >> 20 ))M, the trim freed $n$unit"
grep -E 'memgov: (would )?(reset|restart) ' "$results/memgov.log" && fail "a step above trim was taken"
grep -q 'level .*trim -> normal' "$results/memgov.log" || fail "the ladder did not come back to normal"
echo "mariadb-fragmentation: ok: the trim gave the fragmented heap back, the ladder came back to normal, no further step"
mariadb_stop
