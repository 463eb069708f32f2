#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The guest side of bench/idle-cost.sh.
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "idle-cost: runs inside the VM (bench/idle-cost.sh)" >&2; exit 77; }
build=${MEMGOV_BUILD:?}
seconds=${BENCH_SECONDS:-120}

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 512M >"$cg/memory.max"
( echo "$BASHPID" >"$cg/cgroup.procs"; exec "$build/tests/memgov-memhog" grow 100 200 ) >/dev/null &
sleep 3
"$build/memgov" run --cgroup /db --socket "" --state-dir "" 2>"$MEMGOV_RESULTS/memgov.log" &
governor=$!
# Debian's earlyoom.service: EARLYOOM_ARGS="-r 3600" (a memory report an hour).
"${EARLYOOM:?}" -r 3600 >"$MEMGOV_RESULTS/earlyoom.log" 2>&1 &
earlyoom=$!
sleep 5

# CPU ticks (utime + stime) and context switches of every thread, and the resident set.
snap() {
        local pid=$1 cpu=0 sw=0 t
        for t in /proc/"$pid"/task/*; do
                cpu=$(( cpu + $(awk '{ print $14 + $15 }' "$t/stat") ))
                sw=$(( sw + $(awk '/ctxt_switches/ { s += $2 } END { print s }' "$t/status") ))
        done
        echo "$cpu $sw $(awk '/^VmRSS/ { r = $2 } /^RssAnon/ { a = $2 } END { print r, a }' /proc/"$pid"/status)"
}
read -r m_cpu0 m_sw0 _ _ <<<"$(snap "$governor")"
read -r e_cpu0 e_sw0 _ _ <<<"$(snap "$earlyoom")"
sleep "$seconds"
read -r m_cpu1 m_sw1 m_rss m_anon <<<"$(snap "$governor")"
read -r e_cpu1 e_sw1 e_rss e_anon <<<"$(snap "$earlyoom")"
kill "$governor" "$earlyoom"

python3 - "$seconds" "$(getconf CLK_TCK)" "$m_cpu0" "$m_cpu1" "$m_sw0" "$m_sw1" "$m_rss" "$m_anon" \
        "$e_cpu0" "$e_cpu1" "$e_sw0" "$e_sw1" "$e_rss" "$e_anon" <<'PY'
import sys
secs, hz = float(sys.argv[1]), float(sys.argv[2])
m = [int(x) for x in sys.argv[3:9]]
e = [int(x) for x in sys.argv[9:15]]
per_min = 60.0 / secs
def row(name, v):
    cpu_ms = (v[1] - v[0]) * 1000.0 / hz * per_min
    wake = (v[3] - v[2]) * per_min
    print(f"  {name:9s} CPU {cpu_ms:8.1f} ms/min   wakeups {wake:7.1f}/min   RSS {v[4] / 1024:6.1f} MiB "
          f"(anonymous {v[5] / 1024:5.1f} MiB, the rest shared libraries)")
    return cpu_ms, wake, v[4]
print(f"idle cost over {secs:.0f} s, a calm cgroup, the same VM (TCG; CPU at {hz:.0f} ticks/s):")
mc, mw, mr = row("memgov", m)
ec, ew, er = row("earlyoom", e)
print(f"  ratio memgov/earlyoom: CPU {mc / ec if ec else float('nan'):.2f}  wakeups {mw / ew if ew else float('nan'):.2f}"
      f"  RSS {mr / er:.2f}")
PY
