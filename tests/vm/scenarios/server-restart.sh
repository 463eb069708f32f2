#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The graceful restart on the real kernel, on servers of other flavours from their Debian chroots
# (MySQL 9.7, MariaDB 11.8), as mariadb-restart.sh runs it on the host's MariaDB: growth nothing
# else can stop (the growing sessions belong to an exempt user), in a cgroup under memory.max;
# memgov restarts the server before the OOM point (pre-flush, SIGTERM through a pidfd, a
# supervisor outside the cgroup starts it again as a kubelet would), memory.max raised while it
# stops and put back; the server's error log shows a clean shutdown and no crash recovery. The
# time from the old server's exit to the new one answering is measured. One flavour after the
# other, in one boot of the VM.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/server-restart.sh FLAVOUR...
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "server-restart: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
(( $# )) || { echo "usage: server-restart.sh FLAVOUR..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
# shellcheck source=../../lib/servers.sh
. "$here/lib/servers.sh"
policy=$here/vm/policies/restart.ini
M=$((1 << 20))
mib() { echo "$(( $1 / M ))M"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }'; }
trap 'server_stop' EXIT

run_flavour() { # FLAVOUR
        local flavour=$1 name=server-restart-$1 out=$results/$1 cg=${MEMGOV_CGROUP:?}/$1
        fail() { echo "$name: FAIL: $*" >&2; exit 1; }
        mkdir -p "$out"
        rm -f /tmp/memgov-pre-restart /tmp/memgov-post-restart
        server_provision "$flavour"
        mkdir "$cg"
        echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
        local t0 ready held MAX first
        t0=$(uptime_s)
        SERVER_SUPERVISE=1 SERVER_CGROUP=$cg server_start "${MEMGOV_DISK:?run with --disk}/$flavour" || exit 1
        ready=$(since "$t0")
        first=$SERVER_PID
        server_sql "CREATE USER leaky@localhost IDENTIFIED BY 'leaky-password'"
        # memory.max twice what the idle server holds, and 160M over it at least (the idle
        # server under the policy's trim.at, 55%); the sessions grow by a megabyte a second each
        # for every 80M of room, as in server-sessions.sh: at restart.at (80%) within 25 s.
        held=$(cat "$cg/memory.current")
        MAX=$(( held * 2 > held + 160 * M ? held * 2 : held + 160 * M ))
        MAX=$(( (MAX + M - 1) / M * M ))
        local rate=$(( (MAX - held) / (80 * M) ))
        echo "$MAX" >"$cg/memory.max"
        echo "$name: $(server_sql "SELECT VERSION()") ready in ${ready}s, memory.current $(mib "$held")," \
             "memory.max $(mib "$MAX"), three sessions of an exempt user growing ${rate}M/s each"

        "$build/memgov" run --cgroup "/$flavour" --policy "$policy" --record "$out/memgov.trace.csv" \
                --socket "/run/memgov/$flavour.sock" --state-dir "$out" 2>"$out/memgov.log" &
        local governor=$!
        sleep 1
        export SESSIONS_CLIENT="nsenter -t $SERVER_PID -m -r -w -- $SERVER_CLIENT"
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" leaky leaky leaky-password 3 "$rate" 90 >"$out/leaky.log" &
        local leaky=$!
        # Until the old server is gone (a restart, or the kernel's kill), or 120 s.
        local gone=
        for _ in $(seq 600); do
                kill -0 "$first" 2>/dev/null || { gone=$(uptime_s); break; }
                grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
                sleep 0.2
        done
        kill "$leaky" 2>/dev/null || true
        wait "$leaky" || true
        [[ -n $gone ]] || fail "the server did not stop within 120 s: $(grep -c . "$out/memgov.log") lines of log"
        server_wait_restart "$first" 300 || fail "the server did not come back within 300 s"
        local back
        back=$(since "$gone")
        for _ in $(seq 100); do grep -q 'graceful restart done' "$out/memgov.log" && break; sleep 0.2; done
        sleep 3 # memgov puts memory.max back once it sees the new server
        "$build/memgov" status --socket "/run/memgov/$flavour.sock" >"$out/status.txt" || true
        kill "$governor"
        wait "$governor" || true
        echo "== $flavour: memgov"
        grep -E 'memgov: (trim|reset|restart|set memory|level|effect|warning|event)|-> ' "$out/memgov.log" | cut -c1-300 || true
        echo "memory.events: $(tr '\n' ' ' <"$cg/memory.events"); memory.peak $(mib "$(cat "$cg/memory.peak" 2>/dev/null || echo 0)")"
        grep -E 'Shutdown complete|shutdown complete|ready for connections' "$SERVER_DIR/error.log" | cut -c1-200 || true

        grep -q '^oom_kill 0' "$cg/memory.events" || fail "the server was OOM-killed with memgov"
        grep -q 'graceful restart done' "$out/memgov.log" || fail "memgov did not see the restart through"
        grep -q -- '-> stopped .* with SIGTERM .*flushed dirty pages' "$out/memgov.log" || fail "no graceful stop with pre-flush"
        grep -q 'set memory.max.*raise memory.max' "$out/memgov.log" || fail "memory.max was not raised for the stop"
        [[ $(cat "$cg/memory.max") == "$MAX" ]] || fail "memory.max is $(cat "$cg/memory.max"), not put back to $MAX"
        [[ -e /tmp/memgov-pre-restart && -e /tmp/memgov-post-restart ]] || fail "the pre- and post-restart hooks did not run"
        grep -qiE 'Shutdown complete' "$SERVER_DIR/error.log" || fail "the error log shows no clean shutdown"
        grep -qiE 'crash recovery|Starting crash recovery|database was not shut down normally' "$SERVER_DIR/error.log" &&
                fail "the server went through crash recovery"
        [[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the new server does not answer"
        local second=$SERVER_PID
        server_stop
        echo "$name: ok: restarted gracefully before the OOM point (pid $first -> $second), ready again" \
             "${back}s after the old one exited, clean shutdown, no crash recovery, memory.max raised and put back"
}

for f in "$@"; do
        run_flavour "$f"
done
