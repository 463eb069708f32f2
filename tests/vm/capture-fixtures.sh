#!/bin/bash
# capture-fixtures.sh — capture cgroup v2 and /proc files exactly as a real
# kernel writes them, for the parsers' unit tests.
#
# On the host:   tests/vm/capture-fixtures.sh [OUTPUT_DIR]
#   boots the VM (with a zram swap, so that memory.high can be pushed
#   against without throttling the workload for minutes), runs itself inside
#   and copies the files to OUTPUT_DIR (default: tests/data/kernel-X.Y for
#   the guest kernel's X.Y).
# In the VM (MEMGOV_VM=1): writes the captures and their README.md to
#   $MEMGOV_RESULTS/fixtures.
#
# Captured, one file each (README.md, generated, says what each one is):
#   - a cgroup with a running multi-threaded process that malloc'd memory
#     (python3 with a few threads): its memory.* and cgroup.* files, and the
#     process's /proc/PID/{status,stat,statm,maps,smaps_rollup};
#   - the same cgroup's memory files after the workload was pushed against
#     memory.high (the "high" event counter > 0);
#   - a cgroup that had a memcg OOM kill;
#   - /proc/pressure/*, /proc/self/cgroup from inside a child cgroup, and
#     /proc/meminfo.

set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly here

# --- host side ------------------------------------------------------------------

if [[ ${MEMGOV_VM:-} != 1 ]]; then
    out="${1:-}"
    results="$(mktemp -d "${TMPDIR:-/tmp}/memgov-fixtures.XXXXXX")"
    "$here/run-vm.sh" --quiet --timeout 600 --swap 512M --results "$results" "$here/capture-fixtures.sh"
    release="$(cat "$results/fixtures/kernel-release")"
    if [[ -z $out ]]; then
        majmin="$(echo "$release" | cut -d. -f1,2)"
        out="$(cd "$here/.." && pwd)/data/kernel-$majmin"
    fi
    mkdir -p "$out"
    rm -f "$results/fixtures/kernel-release"
    cp "$results/fixtures/"* "$out/"
    echo "capture-fixtures: $(find "$results/fixtures" -type f | wc -l) files from kernel $release in $out"
    rm -rf "$results"
    exit 0
fi

# --- guest side -------------------------------------------------------------------

out="$MEMGOV_RESULTS/fixtures"
rm -rf "$out"
mkdir -p "$out"
parent="${MEMGOV_CGROUP:?}"
describe=()   # "file|what it is" lines for the README

# capture SOURCE NAME WHAT: copy a kernel file as is.
capture() {
    if [[ -e $1 ]]; then
        cat "$1" >"$out/$2"
        describe+=("$2|$3")
    else
        echo "capture-fixtures: $1 does not exist on this kernel, skipped" >&2
    fi
}

wait_for() {  # wait_for FILE SECONDS
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [[ -e $1 ]] && return 0
        sleep 0.1
    done
    echo "capture-fixtures: timed out waiting for $1" >&2
    return 1
}

# A small stand-in for a database server: four threads, each malloc'ing and
# touching memory (so glibc gives them their own arenas, as in mysqld) and
# staying alive, plus 8 MiB in the main thread. Writes READY_FILE once all
# is allocated, then sleeps until killed.
workload() {  # workload CGROUP READY_FILE MiB_PER_THREAD
    # shellcheck disable=SC2016
    bash -c 'echo $$ >"$1/cgroup.procs" && exec python3 -c "$2" "$3" "$4"' _ "$1" '
import ctypes, sys, threading, time
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
mib = int(sys.argv[2])
blocks = []
def work(allocated):
    for _ in range(mib * 4):          # 256 KiB blocks: below the mmap threshold
        p = libc.malloc(256 * 1024)
        ctypes.memset(p, 0x5a, 256 * 1024)
        blocks.append(p)
    allocated.set()
    time.sleep(3600)
events = [threading.Event() for _ in range(4)]
for e in events:
    threading.Thread(target=work, args=(e,), daemon=True).start()
for e in events:
    e.wait()
main_buf = bytearray(8 * 1024 * 1024)
open(sys.argv[1], "w").write("ready\n")
time.sleep(3600)
' "$2" "$3" &
}

# --- a cgroup with a running multi-threaded process -----------------------------------

cg="$parent/fixture-workload"
mkdir "$cg"
echo 256M >"$cg/memory.high"
workload "$cg" /tmp/workload.ready 8
pid=$!
wait_for /tmp/workload.ready 60
sleep 1   # let the stat counters and PSI averages move

capture "$parent/cgroup.controllers" cgroup.controllers "cgroup.controllers of the cgroup the fixture cgroups were created in"
capture "$cg/cgroup.controllers" cgroup.controllers.child "cgroup.controllers of a child cgroup (memory, cpu, io, pids enabled by its parent)"
for f in memory.stat memory.events memory.events.local memory.pressure memory.current \
         memory.high memory.max memory.low memory.min memory.peak memory.oom.group \
         memory.swap.current memory.swap.max memory.swap.high memory.swap.events \
         cgroup.events cgroup.stat cpu.stat cpu.pressure io.pressure pids.current; do
    capture "$cg/$f" "$f" "$f of a cgroup (memory.high=256M, memory.max unset) running the workload"
done
capture /proc/pressure/memory proc-pressure-memory "/proc/pressure/memory, idle system"
capture /proc/pressure/cpu proc-pressure-cpu "/proc/pressure/cpu"
capture /proc/pressure/io proc-pressure-io "/proc/pressure/io"
capture /proc/meminfo proc-meminfo "/proc/meminfo (1 GiB guest, 512 MiB zram swap)"
for f in status stat statm maps smaps_rollup cgroup; do
    capture "/proc/$pid/$f" "proc-$f" "/proc/PID/$f of the workload: python3, 5 threads, 4 of which malloc'd 8 MiB each (glibc arenas)"
done
tids=("/proc/$pid/task/"*)
capture "${tids[-1]}/stat" proc-task-stat \
    "/proc/PID/task/TID/stat of one of the workload's threads"
# /proc/self/cgroup as seen by a process inside the child cgroup.
bash -c 'echo $$ >"$1/cgroup.procs" && exec cat /proc/self/cgroup' _ "$cg" >"$out/proc-self-cgroup"
describe+=("proc-self-cgroup|/proc/self/cgroup of a process in the child cgroup $(cat "$out/proc-self-cgroup")")

kill "$pid"
wait "$pid" 2>/dev/null || true

# --- pushed against memory.high ---------------------------------------------------------

# memory.high well below what the workload touches: reclaim swaps the excess
# to zram and the "high" counter counts the breaches.
cg="$parent/fixture-high"
mkdir "$cg"
echo 48M >"$cg/memory.high"
workload "$cg" /tmp/high.ready 24
pid=$!
wait_for /tmp/high.ready 300
sleep 1
what="of a cgroup with memory.high=48M whose workload touched ~104 MiB (zram swap): memory.high was breached"
capture "$cg/memory.stat" memory.stat.under-pressure "memory.stat $what"
capture "$cg/memory.events" memory.events.under-pressure "memory.events $what"
capture "$cg/memory.events.local" memory.events.local.under-pressure "memory.events.local $what"
capture "$cg/memory.pressure" memory.pressure.under-pressure "memory.pressure $what"
capture "$cg/memory.current" memory.current.under-pressure "memory.current $what"
capture "$cg/memory.swap.current" memory.swap.current.under-pressure "memory.swap.current $what"
capture "$cg/memory.high" memory.high.under-pressure "memory.high $what"
capture /proc/pressure/memory proc-pressure-memory.under-pressure "/proc/pressure/memory right after that"
kill "$pid"
wait "$pid" 2>/dev/null || true
awk '$1 == "high" && $2 > 0 { ok = 1 } END { exit !ok }' "$out/memory.events.under-pressure" || {
    echo "capture-fixtures: memory.high was never breached:" >&2
    cat "$out/memory.events.under-pressure" >&2
    exit 1
}

# --- an OOM kill ------------------------------------------------------------------------

cg="$parent/fixture-oom"
mkdir "$cg"
echo 64M >"$cg/memory.max"
echo 0 >"$cg/memory.swap.max"
( bash -c 'echo $$ >"$1/cgroup.procs" && exec dd if=/dev/zero of=/dev/null bs=100M count=1' _ "$cg"
  exit $? ) 2>/dev/null || true
what="of a cgroup with memory.max=64M, memory.swap.max=0 after a 100 MiB allocation was OOM-killed"
capture "$cg/memory.events" memory.events.oom "memory.events $what"
capture "$cg/memory.events.local" memory.events.local.oom "memory.events.local $what"
capture "$cg/memory.stat" memory.stat.oom "memory.stat $what"
capture "$cg/memory.max" memory.max.oom "memory.max $what"
capture "$cg/memory.peak" memory.peak.oom "memory.peak $what"
awk '$1 == "oom_kill" && $2 > 0 { ok = 1 } END { exit !ok }' "$out/memory.events.oom" || {
    echo "capture-fixtures: no OOM kill recorded:" >&2
    cat "$out/memory.events.oom" >&2
    exit 1
}

# --- README -----------------------------------------------------------------------------

uname -r >"$out/kernel-release"
{
    echo "# Real kernel files: Linux $(uname -r)"
    echo
    echo "Captured by \`tests/vm/capture-fixtures.sh\` in the QEMU VM of \`tests/vm/\`"
    echo "(Debian kernel package version $(sed -n 's/.*Debian \([^ ]*\) .*/\1/p' /proc/version), $(nproc) CPUs,"
    echo "$(awk '/MemTotal/ { printf "%d MiB", $2 / 1024 }' /proc/meminfo) of memory, 512 MiB of zram swap, $MEMGOV_VM_MODE mode)."
    echo "Files are byte for byte what the kernel wrote; rerun the script to refresh them."
    echo
    echo "\`uname -r\`: \`$(uname -r)\`"
    echo
    echo "\`/proc/version\`: \`$(cat /proc/version)\`"
    echo
    echo "| File | What it is |"
    echo "|------|------------|"
    for d in "${describe[@]}"; do
        printf '| %s | %s |\n' "\`${d%%|*}\`" "${d#*|}"
    done
} >"$out/README.md"

echo "capture-fixtures: ${#describe[@]} files captured"
