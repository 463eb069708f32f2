#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Reaction time, in the VM: from a kernel memory event (a PSI trigger firing, a memory.events
# change) to memgov having sampled, decided and logged. A second observer arms the same kind of
# PSI trigger and watches memory.events: its wakeup is the event's time. Prints p50/p99 and the
# ratio to the sampling intervals memgov would otherwise wait for.
#   tests/vm/run-vm.sh --env MEMGOV_BUILD=$PWD/build bench/vm-event-latency.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "vm-event-latency: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
policy=$(dirname "$0")/../tests/vm/policies/fast.ini

cg=${MEMGOV_CGROUP:?}/bench
mkdir "$cg"
echo 512M >"$cg/memory.max"
echo 40M >"$cg/memory.high"

"$build/memgov" run --dry-run --cgroup /bench --policy "$policy" --log-level debug --socket "" \
        --duration 40s 2>"$results/memgov.log" &
governor=$!
"$build/tests/memgov-eventwatch" "$cg" 100000 2000000 38 >"$results/events.log" &
watcher=$!
sleep 1
# Bursts past memory.high: each one is throttled (memory.events "high") and stalls (PSI).
( echo "$BASHPID" >"$cg/cgroup.procs"
  for _ in $(seq 12); do timeout 2 "$build/tests/memgov-memhog" grow 40 80 >/dev/null || true; sleep 1; done ) &
load=$!
wait "$watcher" "$load" "$governor" || true

python3 - "$results/memgov.log" "$results/events.log" <<'PY'
import re, sys, bisect
ticks = []
for line in open(sys.argv[1]):
    m = re.search(r"tick \((psi|memory\.events)\) sampled at (\d+) done at (\d+)", line)
    if m:
        ticks.append((m.group(1), int(m.group(2)), int(m.group(3))))
events = {"psi": [], "memory.events": []}
for line in open(sys.argv[2]):
    kind, t = line.split()
    events["psi" if kind == "psi" else "memory.events"].append(int(t))
lat = {"psi": [], "memory.events": []}
for kind, sampled, done in ticks:
    ev = events[kind]
    i = bisect.bisect_right(ev, sampled) - 1
    # The observer's wakeup for the same event: the latest one before memgov sampled, within 1s.
    if i >= 0 and sampled - ev[i] < 1_000_000:
        lat[kind].append(done - ev[i])
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
print("reaction time from a kernel memory event to memgov's decision, logged (TCG VM):")
for kind, v in lat.items():
    if not v:
        print(f"  {kind:14s} no matched events"); continue
    p50, p99 = pct(v, 50) / 1000, pct(v, 99) / 1000
    print(f"  {kind:14s} {len(v):4d} events  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  "
          f"vs sampling every 1 s: {1000 / p50:6.0f}x sooner at p50; every 5 s: {5000 / p50:6.0f}x")
PY
