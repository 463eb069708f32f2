#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The outcome benchmark, second version: what happens to a real database server under memory
# pressure, and to its real clients, with each governor. The server is alone in the VM (a real
# 6.1 kernel, systemd as PID 1, one guest CPU); its clients and the probe run on the host and
# reach it over TCP (QEMU's user network, a port forwarded on 127.0.0.1), as applications reach a
# database server on another machine. Every run is one VM boot.
#
#   bench/outcome2.sh BUILD_DIR [--servers mariadb-10.11,mysql-9.7,mariadb-11.8]
#        [--settings container,host] [--scenarios ramp,growth,storm,linear,slow,retention]
#        [--governors none,control,memgov,memgov-eq,earlyoom,nohang,oomd,manual]
#        [--runs N] [--runs-others M] [--scale SECONDS] [--seed N] [--out DIR] [--resume]
#        [--dry-run]
#
# Settings: container (the server's unit has MemoryMax, the limit binds: memgov, systemd-oomd
# and the manual recipe act there) and host (no MemoryMax, the guest's RAM binds: earlyoom and
# nohang act there, memgov with its budget from RAM). The limit is per server (LIMITS below); on
# the host setting the guest's RAM is that limit plus what the guest's own system needs.
# Governors: none and control (the same, a second set of runs: the noise), memgov (the shipped
# default policy, as memgov@UNIT.service) and memgov-eq (memory.max never raised), earlyoom and
# nohang (Debian's packages as their Debian services run them), oomd (systemd-oomd, Debian's
# defaults, the unit with ManagedOOMMemoryPressure=kill), manual (the server's own limits, a
# static MemoryHigh at 90% and the allocator's release through gdb on a schedule).
# Runs: N for none, control, memgov and memgov-eq (default 5), M for the others (default 3);
# within each round every governor of a cell runs once, their order rotated round by round.
# --resume keeps the runs already in --out made with the same benchmark scripts, data, settings
# and seed (for memgov's runs, the same memgov), and makes only the others: a pass longer than
# one sitting is assembled from parts, never mixed with runs of other code. A part kept in the
# tree (bench/outcome2-keep.sh) is completed on another machine by copying it into --out first.
# The alternatives are Debian's packages, unpacked into a cache (MEMGOV_BENCH_CACHE, default
# /var/cache/memgov-bench), never installed on this host; MySQL 9.7 and MariaDB 11.8 are the test
# suite's chroots (scripts/provision-servers.sh). Keep the machine otherwise idle during a pass.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: outcome2.sh BUILD_DIR [options]}" && pwd)
shift
servers=mariadb-10.11,mysql-9.7 settings=container scenarios=ramp,growth,storm,linear,slow,retention
governors=none,control,memgov,memgov-eq,earlyoom,nohang,oomd,manual
runs=5 runs_others=3 scale=20 seed=1 out= resume=0 dry=0
while (($#)); do
        case $1 in
        --servers) servers=$2; shift 2 ;;
        --settings) settings=$2; shift 2 ;;
        --scenarios) scenarios=$2; shift 2 ;;
        --governors) governors=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --runs-others) runs_others=$2; shift 2 ;;
        --scale) scale=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --resume) resume=1; shift ;;
        --dry-run) dry=1; shift ;;
        *) echo "outcome2: unknown option $1" >&2; exit 2 ;;
        esac
done
check_list() { # WHAT LIST ALLOWED...
        local what=$1 list=$2 x
        shift 2
        for x in ${list//,/ }; do
                [[ " $* " == *" $x "* ]] || { echo "outcome2: unknown $what '$x' ($*)" >&2; exit 2; }
        done
}
check_list server "$servers" mariadb-10.11 mysql-9.7 mariadb-11.8
check_list setting "$settings" container host
check_list scenario "$scenarios" ramp growth storm linear slow retention
check_list governor "$governors" none control memgov memgov-eq earlyoom nohang oomd manual
for n in "$runs" "$runs_others" "$scale" "$seed"; do
        [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "outcome2: expected a whole number from 1, got '$n'" >&2; exit 2; }
done
((resume == 0)) || [[ -n $out ]] || { echo "outcome2: --resume needs --out DIR (the runs to keep)" >&2; exit 2; }
for p in sysbench mariadb gdb qemu-system-x86_64; do
        command -v $p >/dev/null || { echo "outcome2: $p is missing (apt-get install sysbench mariadb-server gdb qemu-system-x86)" >&2; exit 77; }
done
out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/memgov-outcome2.XXXXXX")}
mkdir -p "$out"

# The limit per server: what its server at rest leaves room for (MariaDB 10.11: 246-268M at rest,
# its 128M pool warm; MySQL 9.7: 647M, its performance schema on).
limit_of() { case $1 in mysql-*) echo 1G ;; *) echo 512M ;; esac; }
# The guest's RAM: on the container setting room to spare beside the limit; on the host setting
# the limit plus what the guest's own system uses (systemd, journald, the VM's harness: some 200M).
guest_mem() { # SERVER SETTING
        local l
        l=$(( $(numfmt --from=iec "$(limit_of "$1")") >> 20 ))
        [[ $2 == container ]] && echo "$((l + 512))M" || echo "$((l + 224))M"
}
phases_of() { case $1 in ramp) echo 10 ;; growth) echo 10 ;; storm) echo 8 ;; linear) echo 12 ;; slow) echo 40 ;; retention) echo 12 ;; esac; }

# The alternatives, from Debian's packages, unpacked.
cache=${MEMGOV_BENCH_CACHE:-/var/cache/memgov-bench}
# shellcheck source=alternatives.sh
. "$here/bench/alternatives.sh"
alternatives_unpack "$cache" outcome2
versions=$ALTERNATIVES_VERSIONS

# The servers: MariaDB 10.11 is the host's package; the others the test suite's chroots, each
# with its data directory template.
declare -A root version
for s in ${servers//,/ }; do
        if [[ $s == mariadb-10.11 ]]; then
                command -v mariadbd >/dev/null || { echo "outcome2: mariadbd is missing (apt-get install mariadb-server)" >&2; exit 77; }
                root[$s]=/ version[$s]=$(mariadbd --version | awk '{print $3}')
        else
                # shellcheck source=../tests/lib/servers.sh
                . "$here/tests/lib/servers.sh"
                server_provision "$s" || exit 77
                server_template || { echo "outcome2: no data directory template for $s" >&2; exit 1; }
                root[$s]=$SERVER_ROOT
                version[$s]=$("${SERVER_IN_ROOT[@]}" /tmp "$SERVER_BIN" --version | grep -o '[0-9]\+\.[0-9]\+\.[0-9]\+[^ ]*' | head -1)
        fi
done
echo "outcome2: alternatives: $versions; servers: $(for s in ${servers//,/ }; do echo -n "$s (${version[$s]}) "; done)sysbench $(sysbench --version | awk '{print $2}')"
echo "outcome2: servers $servers; settings $settings; scenarios $scenarios; governors $governors;" \
     "$runs run(s) (none, control, memgov, memgov-eq), $runs_others (others); phase ${scale}s; results in $out"

tables=8 rows=50000
port=$((20000 + RANDOM % 20000))
vm() { # DIR SERVER SETTING MEM TIMEOUT PORT ENV...
        local d=$1 s=$2 setting=$3 mem=$4 timeout=$5 port=$6
        shift 6
        local e=() x
        for x in "$@"; do e+=(--env "$x"); done
        "$here/tests/vm/run-vm.sh" -q --systemd --disk 4G --mem "$mem" --cpus 1 --results "$d" --timeout "$timeout" \
                --forward "$port:3306" --env "MEMGOV_BUILD=$build" --env "BENCH_SERVER=$s" \
                --env "BENCH_SERVER_ROOT=${root[$s]}" --env "BENCH_SETTING=$setting" --env "BENCH_ALT=$cache/root" \
                --env "BENCH_MAX=$(limit_of "$s")" --env "BENCH_TABLES=$tables" --env "BENCH_ROWS=$rows" \
                "${e[@]}" "$here/bench/outcome2-guest.sh" >"$d/run-vm.log" 2>&1
}

# The data directory, made once per server and version (and kept in the cache).
declare -A data
for s in ${servers//,/ }; do
        data[$s]=$cache/outcome2-datadir-$s-${version[$s]}-${tables}x$rows-seed1.tar
        [[ -s ${data[$s]} ]] && continue
        d=$out/prepare-$s
        rm -rf "$d"
        mkdir -p "$d"
        echo "outcome2: preparing $s's data directory ($tables tables of $rows rows)"
        vm "$d" "$s" container "$(guest_mem "$s" container)" 1800 "$port" BENCH_SCENARIO=prepare BENCH_GOVERNOR=none ||
                { echo "outcome2: preparing $s's data directory failed: $(tail -3 "$d/stderr.log")" >&2; exit 1; }
        mv "$d/datadir.tar" "${data[$s]}"
done

# What a run's figures depend on besides its cell, governor and seed: the benchmark's own code,
# the data, the settings, and for memgov's runs memgov itself. The data by its recipe (the guest
# script's prepare, with its fixed seed, the server's version, the tables and rows), not the
# tarball's bytes, which differ with every making: a pass kept in the tree (outcome2-keep.sh)
# can be completed on another machine, its runs copied into --out and --resume'd.
ident_digest() { # SERVER FILE...
        local s=$1
        shift
        { cat "$here/bench/outcome2-guest.sh" "$here/bench/outcome2-clients.sh" "$here/bench/outcome2-storm.lua" \
                "$here/bench/outcome2-server.py" "$@"
          echo "data: ${data[$s]##*/}"; } |
                sha256sum | cut -c1-16 | sed "s/\$/-scale$scale-limit$(limit_of "$s")/"
}
# memgov by what it is built from, not by its bytes: the binary holds the paths of its source
# tree (memgov demo runs that tree's scripts) and of its build directory (the debug information),
# so the same commit built in another directory differs in bytes. The tree of what goes into the
# binary and its unit at the source's commit, the compiler and the build options; a source with
# changes not committed to those paths is identified by the binary's bytes (it cannot be built
# again).
memgov_source() {
        local src paths=(include src policies systemd meson.build meson_options.txt)
        src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
                "$build/meson-info/meson-info.json" 2>/dev/null) ||
                { echo "outcome2: $build is not a meson build directory (no meson-info)" >&2; return 1; }
        # Built from the source as it is now: else the commit is not what was built.
        if ! ninja -C "$build" -n memgov 2>/dev/null | grep -q "no work to do"; then
                echo "outcome2: $build is not up to date with its source $src: build it again (ninja -C $build)" >&2
                return 1
        fi
        if git -C "$src" rev-parse -q --verify HEAD >/dev/null 2>&1 &&
           [[ -z $(git -C "$src" status --porcelain --untracked-files=no -- "${paths[@]}") ]]; then
                git -C "$src" ls-tree HEAD -- "${paths[@]}"
        else
                sha256sum <"$build/memgov"
        fi
        "${CC:-cc}" --version | head -1
        python3 -c 'import json, sys
print(sorted((o["section"], o["name"], str(o["value"])) for o in json.load(open(sys.argv[1]))))' \
                "$build/meson-info/intro-buildoptions.json"
}
declare -A ident_others ident_memgov
memgov_source >"$out/.memgov-source" || exit 1
for s in ${servers//,/ }; do
        ident_others[$s]=$(ident_digest "$s")
        ident_memgov[$s]=$(ident_digest "$s" "$out/.memgov-source" "$build/systemd/memgov@.service")
done

one_run() { # SERVER SETTING SCENARIO GOVERNOR RUN
        local s=$1 setting=$2 sc=$3 g=$4 r=$5 d ident status=0 t phases wait_done timeout vmpid
        d=$out/$s/$setting/$sc/$g/run-$r
        ident=$([[ $g == memgov* ]] && echo "${ident_memgov[$s]}" || echo "${ident_others[$s]}")-seed$((seed + r - 1))
        if ((resume)) && [[ -s $d/result.env && $(cat "$d/ident" 2>/dev/null) == "$ident" ]]; then
                if ! python3 "$here/bench/outcome2-report.py" --void "$d/result.env"; then
                        echo "outcome2: $s/$setting/$sc/$g run $r: kept from an earlier invocation"
                        return 0
                fi
                echo "outcome2: $s/$setting/$sc/$g run $r: its $sc did not take place: made again"
        fi
        ((dry)) && { echo "outcome2: would run $s/$setting/$sc/$g run $r"; return 0; }
        rm -rf "$d"
        mkdir -p "$d"
        phases=$(phases_of "$sc")
        # The clients' time, half a minute more for queries stuck at the limit, 2 minutes for the
        # server to answer again, and room.
        wait_done=$((scale * phases + 420))
        timeout=$((wait_done + 600))
        t=$(date +%s)
        # A port of its own for each run: a client of the last run still closing does not reach this one.
        port=$((port + 1))
        local hport=$port
        vm "$d" "$s" "$setting" "$(guest_mem "$s" "$setting")" "$timeout" "$hport" "BENCH_SCENARIO=$sc" "BENCH_GOVERNOR=$g" \
                "BENCH_SCALE=$scale" "BENCH_DATA=${data[$s]}" "BENCH_WAIT=$wait_done" &
        vmpid=$!
        while [[ ! -e $d/ready ]] && kill -0 $vmpid 2>/dev/null; do sleep 0.5; done
        if [[ -e $d/ready ]]; then
                echo "$(cut -d' ' -f1 /proc/uptime) $(cat "$d/ready")" >"$d/clock"   # host uptime, guest uptime
                "$here/bench/outcome2-clients.sh" "$d" "$hport" "$s" "$sc" "$scale" "$((seed + r - 1))" \
                        "$(limit_of "$s")" "$tables" "$rows" "${data[$s]}" >"$d/clients.log" 2>&1 || touch "$d/abort"
                touch "$d/done"
        fi
        wait $vmpid || status=$?
        echo "$ident" >"$d/ident"
        {
                echo "server=$s"
                echo "server_version=${version[$s]}"
                echo "scenario=$sc"
                echo "governor=$g"
                echo "seed=$((seed + r - 1))"
                echo "seconds=$(( $(date +%s) - t ))"
                if [[ $status == 0 && -s $d/server.env && -s $d/clients.env ]]; then
                        cat "$d/server.env" "$d/clients.env"
                else
                        echo "unfinished=1"
                        echo "vm_status=$status"
                        [[ -s $d/clients.env ]] && cat "$d/clients.env"
                        [[ -s $d/probe.log ]] && python3 "$here/bench/outcome2-report.py" --clients "$d" 2>/dev/null |
                                grep -E '^(down|refused)_seconds=' || true
                        [[ -s $d/memory.log ]] &&
                                awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print "peak_bytes=" m }' "$d/memory.log"
                fi
        } >"$d/result.env"
        # The raw logs, compressed (the report needs only result.env).
        if tar -C "$d" -czf "$d.raw.tar.gz" --exclude=./.vm --exclude=./result.env --exclude=./ident .; then
                find "$d" -mindepth 1 -maxdepth 1 ! -name result.env ! -name ident -exec rm -rf {} +
                mv "$d.raw.tar.gz" "$d/raw.tar.gz"
        fi
        # shellcheck disable=SC1091 # the figures come from result.env
        (. "$d/result.env"
         echo "outcome2: $s/$setting/$sc/$g run $r: ${unfinished:+UNFINISHED (VM status $vm_status) }oom_kills=${oom_kills:-?}" \
              "sigkills=${sigkills:-?} recovery=${recovery_seconds:-?}s restarts=${graceful_restarts:-?} down=${down_seconds:-?}s" \
              "refused=${refused:-?} tx=${transactions:-?} errors=${client_errors:-?} p99=${p99_ms:-?}ms" \
              "peak=$(( ${peak_bytes:-0} >> 20 ))M ended=${sessions_ended:-?} ($(( $(date +%s) - t ))s)")
}

t0=$(date +%s)
max_runs=$((runs > runs_others ? runs : runs_others))
IFS=, read -ra govs <<<"$governors"
for s in ${servers//,/ }; do
        for setting in ${settings//,/ }; do
                for sc in ${scenarios//,/ }; do
                        for r in $(seq "$max_runs"); do
                                # Every governor once a round, the order rotated by the round.
                                n=${#govs[@]}
                                for i in $(seq 0 $((n - 1))); do
                                        g=${govs[$(( (i + r - 1) % n ))]}
                                        case $g in none | control | memgov | memgov-eq) ((r <= runs)) || continue ;;
                                        *) ((r <= runs_others)) || continue ;;
                                        esac
                                        one_run "$s" "$setting" "$sc" "$g" "$r"
                                done
                        done
                done
        done
done
echo "outcome2: $(( ($(date +%s) - t0) / 60 )) minutes"
((dry)) && exit 0
python3 "$here/bench/outcome2-report.py" "$out" "Alternatives: $versions. $("$build/memgov" --version)$(git -C "$here" describe \
        --always --dirty 2>/dev/null | sed 's/.*/ (&)/'). One guest CPU; the clients on the host over TCP; phase ${scale}s."
