#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The outcome benchmark: what happens to a real MariaDB server under memory pressure, and to its
# real clients, with each governor. In the VM (a real 6.1 kernel, systemd as PID 1), Debian's
# mariadb.service under a MemoryMax; each scenario runs once per governor with the same seed,
# RUNS times; the medians side by side, as a table (and outcome.md, outcome.svg) in OUT.
#
#   bench/outcome.sh BUILD_DIR [--runs N] [--scale SECONDS] [--seed N] [--out DIR] [--jobs N]
#                    [--scenarios ramp,growth,storm,linear] [--governors none,memgov,...] [--resume]
#
# Governors: none (the kernel's OOM killer), memgov (its shipped default policy, as
# memgov@mariadb.service), earlyoom and nohang (Debian's packages, the arguments of their Debian
# services), oomd (systemd-oomd, Debian's defaults, the server's unit with
# ManagedOOMMemoryPressure=kill), manual (a static MemoryHigh at 90% of MemoryMax and
# malloc_trim(0) through gdb on a schedule). The alternatives are Debian's packages, downloaded
# and unpacked into a cache (MEMGOV_BENCH_CACHE, default /var/cache/memgov-bench), never
# installed on this host (their services would start here). --scale is the length of one phase
# of a scenario in seconds (the VM is slow: TCG). Every scenario x governor runs on its own:
# pick them with --scenarios and --governors. --jobs N runs N VMs at once, each with
# 2/N guest CPUs (at least one): on a machine with 2 cores, --jobs 2 gives each VM a core of
# its own and halves the time; every governor meets the same conditions. --resume keeps the
# runs already in --out that were made with the same benchmark scripts, data, settings and seed
# (and for memgov's runs the same memgov binary and unit), and makes only the others: a pass
# longer than one sitting can be completed later, never mixed with runs of other code.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: outcome.sh BUILD_DIR [options]}" && pwd)
shift
runs=3 scale=20 seed=1 out= jobs=1 resume=0
scenarios=ramp,growth,storm,linear
governors=none,memgov,earlyoom,nohang,oomd,manual
max=384M vm_mem=768M
while (($#)); do
        case $1 in
        --runs) runs=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --scenarios) scenarios=$2; shift 2 ;;
        --governors) governors=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --resume) resume=1; shift ;;
        *) echo "outcome: unknown option $1" >&2; exit 2 ;;
        esac
done
((resume == 0)) || [[ -n $out ]] || { echo "outcome: --resume needs --out DIR (the runs to keep)" >&2; exit 2; }
out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/memgov-outcome.XXXXXX")}
mkdir -p "$out"
for g in ${governors//,/ }; do
        case $g in none | memgov | earlyoom | nohang | oomd | manual) ;;
        *) echo "outcome: unknown governor '$g' (none, memgov, earlyoom, nohang, oomd, manual)" >&2; exit 2 ;;
        esac
done
for s in ${scenarios//,/ }; do
        case $s in ramp | growth | storm | linear) ;;
        *) echo "outcome: unknown scenario '$s' (ramp, growth, storm, linear)" >&2; exit 2 ;;
        esac
done
for p in sysbench mariadbd gdb; do
        command -v $p >/dev/null || { echo "outcome: $p is missing (apt-get install sysbench mariadb-server gdb)" >&2; exit 77; }
done

# The alternatives, from Debian's packages, unpacked.
cache=${MEMGOV_BENCH_CACHE:-/var/cache/memgov-bench}
# shellcheck source=alternatives.sh
. "$here/bench/alternatives.sh"
alternatives_unpack "$cache" outcome
versions=$ALTERNATIVES_VERSIONS
echo "outcome: alternatives: $versions; MariaDB $(mariadbd --version | awk '{print $3}'); sysbench $(sysbench --version | awk '{print $2}')"
echo "outcome: scenarios $scenarios; governors $governors; $runs run(s); phase ${scale}s; MemoryMax $max in a $vm_mem VM; $jobs VM(s) at once; results in $out"

# The data directory, made once per MariaDB version (and kept in the cache).
data=$cache/datadir-$(mariadbd --version | awk '{print $3}').tar
if [[ ! -s $data ]]; then
        d=$out/prepare
        mkdir -p "$d"
        "$here/tests/vm/run-vm.sh" -q --systemd --disk 2G --mem "$vm_mem" --results "$d" --timeout 900 \
                --env "MEMGOV_BUILD=$build" --env BENCH_SCENARIO=prepare --env BENCH_GOVERNOR=none \
                --env "BENCH_ALT=$cache/root" "$here/bench/outcome-guest.sh" >"$d/run-vm.log" 2>&1 ||
                { echo "outcome: preparing the data directory failed: $(tail -3 "$d/stderr.log")" >&2; exit 1; }
        mv "$d/datadir.tar" "$data"
fi

[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "outcome: --jobs: expected a whole number from 1" >&2; exit 2; }
cpus=$((2 / jobs > 0 ? 2 / jobs : 1))
# What a run's figures depend on besides its scenario, governor and seed: the benchmark's own
# code, the data, the settings, and for memgov's runs memgov itself. --resume keeps a run only
# when this is the same (a new memgov makes only its own runs again).
ident_digest() { # FILE...
        cat "$here/bench/outcome-guest.sh" "$here/bench/outcome-storm.lua" "$data" "$@" |
                sha256sum | cut -c1-16 | sed "s/\$/-scale$scale-max$max-cpus$cpus/"
}
# Once for the pass: the data directory is large.
ident_others=$(ident_digest)
ident_memgov=$(ident_digest "$build/memgov" "$build/systemd/memgov@.service")
# A run the VM did not finish (a server stuck at memory.max past the timeout, a guest that died)
# is kept with what its logs say, marked unfinished, so that the table shows it rather than
# leaving it out: the time not answering up to the end of the probe's log (a lower bound) and
# the peak of memory.current; what only the end of a run collects (the kernel's and systemd's
# logs, the clients' reports) is not known.
partial_result() { # SCENARIO GOVERNOR SEED DIR VM_STATUS TIMEOUT
        local d=$4
        {
                echo "scenario=$1"
                echo "governor=$2"
                echo "seed=$3"
                echo "unfinished=1"
                echo "vm_status=$5"
                [[ $5 == 124 ]] && echo "seconds=$6"
                [[ -s $d/probe.log ]] &&
                        echo "down_seconds=$(awk -f "$here/bench/outcome-down.awk" "$d/probe.log")"
                [[ -s $d/memory.log ]] &&
                        awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print "peak_bytes=" m }' "$d/memory.log"
        } >"$d/result.env"
}
one_run() { # SCENARIO GOVERNOR RUN
        local s=$1 g=$2 r=$3 d=$out/$1/$2/run-$3 t status=0 ident
        ident=$([[ $g == memgov ]] && echo "$ident_memgov" || echo "$ident_others")-seed$((seed + r - 1))
        if ((resume)) && [[ -s $d/result.env && $(cat "$d/ident" 2>/dev/null) == "$ident" ]]; then
                echo "outcome: $s/$g run $r: kept from an earlier invocation"
                return 0
        fi
        rm -rf "$d"
        mkdir -p "$d"
        # The longest scenario is 12 phases; a boot, the server's start and its return after the
        # workload take up to 4 minutes more. A run still going 3 minutes after that has a server
        # stuck at its limit: it is ended and counted as unfinished, its time down a lower bound.
        local timeout=$((scale * 12 + 420))
        t=$(date +%s)
        "$here/tests/vm/run-vm.sh" -q --systemd --disk 2G --mem "$vm_mem" --cpus "$cpus" --results "$d" \
                --timeout $timeout --env "MEMGOV_BUILD=$build" \
                --env "BENCH_SCENARIO=$s" --env "BENCH_GOVERNOR=$g" --env "BENCH_SEED=$((seed + r - 1))" \
                --env "BENCH_SCALE=$scale" --env "BENCH_ALT=$cache/root" --env "BENCH_MAX=$max" \
                --env "BENCH_DATA=$data" \
                "$here/bench/outcome-guest.sh" >"$d/run-vm.log" 2>&1 || status=$?
        if [[ $status != 0 || ! -s $d/result.env ]]; then
                echo "outcome: $s/$g run $r failed (status $status$([[ $status == 124 ]] && echo ", timed out after ${timeout}s")):" \
                     "$(tail -3 "$d/stderr.log" 2>/dev/null | tr '\n' ' ')" >&2
                partial_result "$s" "$g" "$((seed + r - 1))" "$d" "$status" "$timeout"
                echo "$ident" >"$d/ident"
                return 0
        fi
        echo "$ident" >"$d/ident"
        # shellcheck disable=SC1091,SC2154 # the figures come from result.env
        (. "$d/result.env"
         echo "outcome: $s/$g run $r: ${seconds}s: oom_kills=$oom_kills sigkills=$sigkills" \
              "restarts=$graceful_restarts down=${down_seconds}s tx=$transactions errors=$client_errors" \
              "p99=${p99_ms}ms peak=$((peak_bytes >> 20))M ($(( $(date +%s) - t ))s)")
}
t0=$(date +%s)
for s in ${scenarios//,/ }; do
        for r in $(seq "$runs"); do
                for g in ${governors//,/ }; do
                        while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
                        one_run "$s" "$g" "$r" &
                done
        done
done
wait
echo "outcome: $(( ($(date +%s) - t0) / 60 )) minutes"
python3 "$here/bench/outcome-report.py" "$out" "$versions" "$max" "$scale" "$runs" \
        "$jobs VM(s) at a time, $cpus guest CPU(s) each; $("$build/memgov" --version)$(git -C "$here" describe \
        --always --dirty 2>/dev/null | sed 's/.*/ (&)/')"
