#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The same fragmented heap (four threads, 48 MiB each, 63 blocks in 64 freed), trimmed once by
#   gdb -p PID -batch -ex 'call (int)malloc_trim(0)'
# and once by memgov trim, side by side: how long the process is kept from running (a thread of
# the workload ticking every 200 us measures it; memgov also reports how long it held its one
# thread) and how much each gives back. Prints the figures and the ratios. Needs root and gdb.
#   bench/trim-vs-gdb.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
command -v gdb >/dev/null || { echo "trim-vs-gdb: gdb is not installed" >&2; exit 77; }

start() {
        coproc HOG { exec "$build/tests/memgov-memhog" fragment 4 48 64; }
        read -r line <&"${HOG[0]}"
        read -r line <&"${HOG[0]}" # one tick line before: the stall counter is settled
}
stall_after() {
        # The trim falls in the second covered by the next line or the one after: the worst of both.
        local a b
        read -r a <&"${HOG[0]}"
        read -r b <&"${HOG[0]}"
        printf '%s\n%s\n' "$a" "$b" | awk '$5 > m {m = $5} END {print m + 0}'
}
rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }

python_lines=()
for round in $(seq "$rounds"); do
        start
        pid=$HOG_PID
        before=$(rss "$pid")
        t0=$(date +%s%N)
        gdb -p "$pid" -batch -ex 'call (int)malloc_trim(0)' >/dev/null 2>&1
        t1=$(date +%s%N)
        gdb_stall=$(stall_after)
        gdb_freed=$(( before - $(rss "$pid") ))
        kill "$pid"; wait "$pid" 2>/dev/null || true

        start
        pid=$HOG_PID
        before=$(rss "$pid")
        report=$("$build/memgov" trim --pid "$pid" --json)
        mg_stall=$(stall_after)
        mg_freed=$(( before - $(rss "$pid") ))
        held=$(echo "$report" | python3 -c 'import json,sys; print(json.load(sys.stdin)["held_us"])')
        kill "$pid"; wait "$pid" 2>/dev/null || true
        python_lines+=("$round $(( (t1 - t0) / 1000 )) $gdb_stall $gdb_freed $held $mg_stall $mg_freed")
done

printf '%s\n' "${python_lines[@]}" | python3 -c '
import statistics, sys
rows = [list(map(int, l.split())) for l in sys.stdin if l.strip()]
print("trim of the same fragmented heap: gdb call malloc_trim(0) vs memgov trim (%d rounds, medians)" % len(rows))
med = lambda i: statistics.median(r[i] for r in rows)
gdb_run, gdb_stall, gdb_freed, held, mg_stall, mg_freed = (med(i) for i in range(1, 7))
print(f"  gdb     process stopped {gdb_stall / 1000:9.1f} ms (all threads; gdb ran {gdb_run / 1000:.0f} ms)   freed {gdb_freed / 2**20:6.1f} MiB")
print(f"  memgov  thread held     {held / 1000:9.3f} ms (one thread; the others did not stop: worst tick delay {mg_stall / 1000:.3f} ms)   freed {mg_freed / 2**20:6.1f} MiB")
print(f"  stop time ratio gdb/memgov: {gdb_stall / max(held, 1):.0f}x    reclaim ratio memgov/gdb: {mg_freed / max(gdb_freed, 1):.2f}")
'
