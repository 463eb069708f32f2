#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The reset rung on the real kernel, on servers of other flavours from their Debian chroots
# (MySQL 9.7, MariaDB 11.8), as mariadb-sessions.sh runs it on the host's MariaDB: the server in a
# cgroup under memory.max, three sessions piling up user variables while a normal client keeps
# querying, memgov governing the cgroup (memory.current, memory.events) with the fast test
# policy. The growing sessions are chosen by the server's own measure of their memory and reset,
# the normal client never notices, the kernel kills nothing. One flavour after the other, in one
# boot of the VM.
#   tests/vm/run-vm.sh --disk 2G --mem 2G --env MEMGOV_BUILD=build tests/vm/scenarios/server-sessions.sh FLAVOUR...
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "server-sessions: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
(( $# )) || { echo "usage: server-sessions.sh FLAVOUR..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
# shellcheck source=../../lib/servers.sh
. "$here/lib/servers.sh"
policy=$here/vm/policies/sessions.ini
M=$((1 << 20))
mib() { echo "$(( $1 / M ))M"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
trap 'server_stop' EXIT

run_flavour() { # FLAVOUR
        local flavour=$1 name=server-sessions-$1 out=$results/$1 cg=${MEMGOV_CGROUP:?}/$1
        fail() { echo "$name: FAIL: $*" >&2; exit 1; }
        mkdir -p "$out"
        server_provision "$flavour"
        mkdir "$cg"
        echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
        local t0 ready held MAX
        t0=$(uptime_s)
        SERVER_CGROUP=$cg server_start "${MEMGOV_DISK:?run with --disk}/$flavour" || exit 1
        ready=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.0f", b - a }')
        server_sql "CREATE USER leaky@localhost IDENTIFIED BY 'leaky-password';
                    CREATE USER app@localhost IDENTIFIED BY 'app-password'"
        # memory.max twice what the idle server holds, and 160M over it at least: the idle server
        # under the policy's trim.at (55%). The sessions grow by a megabyte a second each for every
        # 80M of room (2 to MariaDB's 160M, 6 to MySQL's 490M): the same clock on both, at
        # reset.at (70%) within 15 s, at memory.max within half a minute.
        held=$(cat "$cg/memory.current")
        MAX=$(( held * 2 > held + 160 * M ? held * 2 : held + 160 * M ))
        MAX=$(( (MAX + M - 1) / M * M ))
        local rate=$(( (MAX - held) / (80 * M) ))
        # The cgroup's limit must be what binds, not the machine's RAM: with less room than that
        # around it, the whole guest thrashes (MySQL answered nothing in 10 s, PSI some at 28%).
        local total
        total=$(awk '$1 == "MemTotal:" { print $2 * 1024 }' /proc/meminfo)
        (( MAX + 256 * M <= total )) || fail "memory.max $(mib "$MAX") leaves less than 256M of the guest's $(mib "$total") (run-vm.sh --mem)"
        echo "$MAX" >"$cg/memory.max"
        echo "$name: $(server_sql "SELECT VERSION()") ready in ${ready}s, memory.current $(mib "$held"), memory.max $(mib "$MAX"), three sessions growing ${rate}M/s each"

        "$build/memgov" run --cgroup "/$flavour" --policy "$policy" --record "$out/memgov.trace.csv" \
                --socket "/run/memgov/$flavour.sock" --state-dir "$out" 2>"$out/memgov.log" &
        local governor=$!
        sleep 1
        export SESSIONS_CLIENT="nsenter -t $SERVER_PID -m -r -w -- $SERVER_CLIENT"
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" normal app app-password 70 >"$out/normal.log" &
        local normal=$!
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" leaky leaky leaky-password 3 "$rate" 70 >"$out/leaky.log" &
        local leaky=$!
        # Until the three growing sessions are gone (and 5 s more for the normal client), the
        # kernel killed something, or their 70 s are over.
        local ended=
        for _ in $(seq 400); do
                grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
                grep -q "leaky done" "$out/leaky.log" && break
                if [[ -z $ended ]] && grep -q "leaky ended 3" "$out/leaky.log"; then ended=$(uptime_s); fi
                [[ -n $ended ]] && awk -v a="$ended" -v b="$(uptime_s)" 'BEGIN { exit !(b - a >= 5) }' && break
                kill -0 "$leaky" 2>/dev/null || break
                sleep 0.2
        done
        kill "$leaky" 2>/dev/null || true
        wait "$leaky" || true
        kill -TERM "$normal" 2>/dev/null || true
        wait "$normal" || true
        "$build/memgov" status --socket "/run/memgov/$flavour.sock" >"$out/status.txt" || true
        kill "$governor"
        wait "$governor" || true
        echo "== $flavour: memgov"
        grep -E 'memgov: (trim|reset|level|effect|warning)|-> ' "$out/memgov.log" | cut -c1-300 || true
        echo "memory.events: $(tr '\n' ' ' <"$cg/memory.events"); memory.peak $(mib "$(cat "$cg/memory.peak" 2>/dev/null || echo 0)")"
        cat "$out/normal.log" "$out/leaky.log"
        grep '^  database' "$out/status.txt" || true

        grep -q '^oom_kill 0' "$cg/memory.events" || fail "the server was OOM-killed with memgov"
        kill -0 "$SERVER_PID" 2>/dev/null || fail "the server is gone"
        grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$out/memgov.log" || fail "no growing session was reset"
        grep -- '-> reset' "$out/memgov.log" | grep -q 'app@localhost' && fail "the normal client's session was reset"
        grep -q 'errors=0' "$out/normal.log" || fail "the normal client saw errors"
        grep -q "leaky ended 3" "$out/leaky.log" || fail "not all three growing sessions were ended"
        [[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer"
        # memgov explain on the real cgroup v2, after the storm: the parts add up to memory.current,
        # and what no part claims is at most 5% of it, or 48M.
        "$build/memgov" explain --cgroup "/$flavour" --json >"$out/explain.json" ||
                fail "explain: $(cat "$out/explain.json")"
        python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
p, t, o = e["parts"], e["total"], e["overcounted"]
line = ", ".join(f"{k} {v >> 20}M" for k, v in p.items() if v) + f" = memory.current {t >> 20}M, {o >> 20}M overcounted"
if e["total_source"] != "memory.current" or sum(p.values()) != t:
    sys.exit(f"explain: the parts do not add up: {line}")
# 5%, or the fixed share a small server has outside every part (the stacks of its threads, the
# mappings it makes outside its allocator). Seen: 37M of an idle 179M MariaDB 11.8.
if (p["unaccounted"] + o) * 100 > 5 * t and p["unaccounted"] + o > 48 << 20:
    sys.exit(f"explain: more than 5% and 48M unaccounted or overcounted: {line}")
a = e.get("allocator", {}).get("allocator", "not asked")
# MariaDB 11.8 has the pressure listener; in its chroot, without a cgroup file system of its own,
# it finds no memory.pressure. MySQL has none: nothing is said.
mp = e.get("memory_pressure", {}).get("access")
if mp != {"mariadb-11.8": "no-file"}.get(sys.argv[3]):
    sys.exit(f"explain: memory_pressure {mp} for {sys.argv[3]}")
print(f"{sys.argv[2]}: ok: explain: {line}; allocator {a}; memory.pressure for the server: {mp}")' "$out/explain.json" "$name" "$flavour" ||
                fail "explain on the cgroup"
        server_stop
        echo "$name: ok: the growing sessions were reset, the normal client went on, no OOM kill"
}

for f in "$@"; do
        run_flavour "$f"
done
