#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Kubernetes sidecar topology of pod-sidecar.sh, with servers of other flavours from their
# Debian chroots (MySQL 9.7, MariaDB 11.8): "container A" runs the server in its own root, cgroup
# and mount namespaces, with a read-only cgroup file system rooted at its own cgroup; "container
# B" runs memgov with the same, sharing the process namespace. memgov finds the server by name,
# reads its cgroup through /proc/PID/root, reaches its socket in the server's root, says that
# memory.high cannot be set, and trims (the server's own allocator's call) and resets sessions
# across the containers; the kernel kills nothing. One flavour after the other, in one boot.
#   tests/vm/run-vm.sh --disk 2G --mem 2G --env MEMGOV_BUILD=build tests/vm/scenarios/pod-servers.sh FLAVOUR...
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "pod-servers: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
(( $# )) || { echo "usage: pod-servers.sh FLAVOUR..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
# shellcheck source=../../lib/servers.sh
. "$here/lib/servers.sh"
container=$here/lib/container.sh
policy=$here/vm/policies/pod.ini
M=$((1 << 20))
mib() { echo "$(( $1 / M ))M"; }
trap 'server_stop' EXIT

run_flavour() { # FLAVOUR
        local flavour=$1 name=pod-servers-$1 out=$results/$1 pod=${MEMGOV_CGROUP:?}/pod-$1
        fail() { echo "$name: FAIL: $*" >&2; [[ -s $out/memgov.log ]] && sed 's/^/  memgov: /' "$out/memgov.log" | tail -30 >&2; exit 1; }
        ok() { echo "$name: ok: $*"; }
        mkdir -p "$out" "$pod/db" "$pod/memgov"
        echo "+memory +pids" >"$pod/cgroup.subtree_control"
        echo 0 >"$pod/db/memory.swap.max" 2>/dev/null || true
        server_provision "$flavour"

        # Container A: the server, in its chroot, its cgroup file system its container's own.
        SERVER_WRAP=("$container" --)
        SERVER_CGROUPFS=1 SERVER_CGROUP=$pod/db server_start "${MEMGOV_DISK:?run with --disk}/$flavour" || exit 1
        SERVER_WRAP=()
        server_sql "CREATE USER leaky@localhost IDENTIFIED BY 'leaky-password'"
        [[ $(sed -n 's/^0:://p' "/proc/$SERVER_PID/cgroup") == "${pod#/sys/fs/cgroup}/db" ]] ||
                fail "the server is in $(cat "/proc/$SERVER_PID/cgroup")"
        [[ $(readlink "/proc/$SERVER_PID/ns/cgroup") != "$(readlink /proc/self/ns/cgroup)" ]] ||
                fail "the server is not in a cgroup namespace of its own"
        [[ -e /proc/$SERVER_PID/root/sys/fs/cgroup/memory.current ]] || fail "the server's root has no cgroup file system"
        # memory.max twice what the idle server holds, 160M over it at least (as server-sessions.sh).
        local held MAX rate
        held=$(cat "$pod/db/memory.current")
        MAX=$(( held * 2 > held + 160 * M ? held * 2 : held + 160 * M ))
        MAX=$(( (MAX + M - 1) / M * M ))
        rate=$(( (MAX - held) / (80 * M) ))
        echo "$MAX" >"$pod/db/memory.max"
        ok "container A: $SERVER_FLAVOUR ($(server_sql "SELECT VERSION()")) pid $SERVER_PID in ${pod#/sys/fs/cgroup}/db," \
           "memory.current $(mib "$held"), memory.max $(mib "$MAX")"

        # Container B: memgov, finding the server on its own.
        ( echo "$BASHPID" >"$pod/memgov/cgroup.procs"
          exec "$container" -- "$build/memgov" run --policy "$policy" --socket "/run/memgov/pod-$flavour.sock" \
                --state-dir "" --record "$out/trace.csv" ) 2>"$out/memgov.log" &
        local governor=$!
        for _ in $(seq 100); do grep -q governing "$out/memgov.log" && break; sleep 0.2; done
        grep -q "governing ${SERVER_BIN##*/} pid $SERVER_PID (/../db through /proc/$SERVER_PID/root/sys/fs/cgroup)" "$out/memgov.log" ||
                fail "memgov did not find the server's cgroup"
        ok "container B: memgov found ${SERVER_BIN##*/} pid $SERVER_PID, cgroup /../db read through /proc/PID/root"

        export SESSIONS_CLIENT="nsenter -t $SERVER_PID -m -r -w -- $SERVER_CLIENT"
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" leaky leaky leaky-password 3 "$rate" 80 >"$out/leaky.log" &
        local leaky=$!
        for _ in $(seq 450); do
                grep -q -- '-> reset [0-9]* of' "$out/memgov.log" && break
                grep -q '^oom_kill [1-9]' "$pod/db/memory.events" && break
                kill -0 "$leaky" 2>/dev/null || break
                sleep 0.2
        done
        kill "$leaky" 2>/dev/null || true
        wait "$leaky" 2>/dev/null || true
        kill "$governor"
        wait "$governor" || true
        grep -E 'read-only|-> |throttle skipped' "$out/memgov.log" | cut -c1-240 || true
        echo "memory.events: $(tr '\n' ' ' <"$pod/db/memory.events")"

        grep -q '^oom_kill 0' "$pod/db/memory.events" || fail "the server was OOM-killed"
        [[ $(grep -c 'memory.high and memory.max cannot be set, so there is no throttling' "$out/memgov.log") == 1 ]] ||
                fail "the read-only cgroup file system was not reported exactly once"
        [[ $(cat "$pod/db/memory.high") == max ]] || fail "memory.high is $(cat "$pod/db/memory.high")"
        local call
        [[ $flavour == mysql-* ]] && call="tcmalloc MallocExtension_ReleaseFreeMemory" || call="glibc malloc_trim"
        grep -q -- "-> $call in thread" "$out/memgov.log" || fail "no $call injected across the containers"
        grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$out/memgov.log" ||
                fail "no session reset over the socket in the server's root"
        [[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer"
        server_stop
        ok "read-only cgroup said once; $call injected and sessions reset across the containers; oom_kill 0"
}

for f in "$@"; do
        run_flavour "$f"
done
echo "pod-servers: PASS"
