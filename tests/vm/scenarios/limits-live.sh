#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# memgov acting on a real cgroup: it lowers memory.high (the value lands in the cgroup, read
# back), the kernel throttles the growing workload at it (memory.events "high" counts up), and
# memgov never writes against a value someone else set (it adopts it).
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "limits-live: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
fail() { echo "limits-live: FAIL: $*" >&2; exit 1; }

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 256M >"$cg/memory.max"
( echo "$BASHPID" >"$cg/cgroup.procs"; exec "$build/tests/memgov-memhog" grow 3 600 ) >"$results/memhog.log" 2>&1 &
hog=$!
"$build/memgov" run --cgroup /db --policy "$here/policies/limits.ini" --record "$results/trace.csv" \
        --socket /run/memgov/db.sock --state-dir "$results" 2>"$results/memgov.log" &
governor=$!

# Until memgov throttles: its memory.high is in the cgroup file. memgov's first write, while the
# workload is still small, is the calm value (the budget minus the headroom); its throttle steps
# come below it, one every throttle cooldown, so the file and memgov's own figure are compared as
# read together, never against a later read that a next step may already have moved.
set_value= file= calm=
for _ in $(seq 600); do
        set_value=$("$build/memgov" status --json --socket /run/memgov/db.sock 2>/dev/null |
                python3 -c 'import json,sys; v = json.load(sys.stdin).get("memory_high_set"); print(v if isinstance(v, int) else "")' || true)
        file=$(cat "$cg/memory.high")
        [[ -z $calm && $file != max ]] && calm=$file
        if [[ -n $set_value && -n $calm && $file == "$set_value" ]] && (( file < calm )); then
                break
        fi
        sleep 0.2
done
[[ -n $set_value && -n $calm && $file == "$set_value" ]] && (( file < calm )) ||
        fail "memory.high is $file (calm value ${calm:-never seen}), memgov set ${set_value:-nothing}"
grep -q 'throttle: toward' "$results/memgov.log" || fail "memory.high came below the calm value with no throttle decision logged"
echo "limits-live: ok: memory.high in the cgroup is $set_value, as memgov set it (throttled from the calm $calm)"
# The workload grows into it (memory.high comes down to the floor, 60 % of the budget).
high_events=0
for _ in $(seq 300); do
        high_events=$(awk '/^high / {print $2}' "$cg/memory.events")
        (( high_events > 0 )) && break
        sleep 0.2
done
(( high_events > 0 )) || fail "memory.events high stayed 0: no throttling at memgov's memory.high"
echo "limits-live: ok: the kernel throttled at it: memory.events high = $high_events"

# Someone else sets memory.high: memgov adopts it within a few samples, and does not write over it.
# The value is 16M below the one in the file, not a fixed one: memgov's own steps (1% of the budget
# down, or a PSI back-off up) can land on any round figure, and a foreign value equal to memgov's
# last write is, rightly, no change at all.
now=$(cat "$cg/memory.high")
[[ $now =~ ^[0-9]+$ ]] || fail "memory.high reads '$now', not memgov's throttled value"
foreign=$(( now - (16 << 20) ))
echo "$foreign" >"$cg/memory.high"
for _ in $(seq 100); do grep -q 'changed by someone else, adopted' "$results/memgov.log" && break; sleep 0.2; done
grep -q 'changed by someone else, adopted' "$results/memgov.log" || fail "the foreign memory.high was not noticed"
kill "$hog" 2>/dev/null || true
kill "$governor"; wait "$governor" || true
grep -h 'memory.high is .* changed by someone else' "$results/memgov.log"
echo "limits-live: ok: a memory.high set by someone else was adopted, not fought"
# memgov stopped: the memory.high it leaves is the one someone else set, not a throttle of its own.
[[ $(cat "$cg/memory.high") == "$foreign" ]] || fail "memgov left memory.high at $(cat "$cg/memory.high"), not the $foreign set by someone else"
echo "limits-live: ok: on stopping, memory.high is the $foreign set by someone else"
