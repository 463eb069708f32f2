#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Kubernetes sidecar topology, built with unshare: "container A" runs a real MariaDB,
# "container B" runs memgov; each has its own cgroup and mount namespaces and a read-only
# cgroup file system rooted at its own cgroup, and they share the process namespace
# (shareProcessNamespace). memgov in B finds the server by name, reads its cgroup through
# /proc/PID/root (its /proc/PID/cgroup path starts with "/.."), reaches its socket (private to
# A) through /proc/PID/root, says once that memory.high cannot be set, and still trims and
# resets. Then B gets the host's cgroup hierarchy, writable (a hostPath mount, --cgroup-root):
# the same server's cgroup is found by its absolute path and memory.high is set.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/pod-sidecar.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "pod-sidecar: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
# shellcheck source=../../lib/mariadb.sh
. "$here/lib/mariadb.sh"
fail() { echo "pod-sidecar: FAIL: $*" >&2; exit 1; }
ok() { echo "pod-sidecar: ok: $*"; }
container=$here/lib/container.sh
policy=$here/vm/policies/pod.ini
sessions=$here/workloads/sessions.py

pod=${MEMGOV_CGROUP:?}/pod
mkdir -p "$pod/db" "$pod/memgov"
echo "+memory +pids" >"$pod/cgroup.subtree_control"
echo 400M >"$pod/db/memory.max"
echo 0 >"$pod/db/memory.swap.max" 2>/dev/null || true

# Container A: the server.
MARIADB_CGROUP=$pod/db
MARIADB_WRAP=("$container" --private "${MEMGOV_DISK:?run with --disk}/mariadb/run" --)
mkdir -p "$MEMGOV_DISK/mariadb/run"
mariadb_start "$MEMGOV_DISK/mariadb"
mariadb_sql "CREATE USER IF NOT EXISTS leaky@localhost IDENTIFIED BY 'leaky'"
sock=$(mariadb_client_socket)
[[ ! -S $MARIADB_SOCKET ]] || fail "the server's socket is visible outside its container"
[[ $(sed -n 's/^0:://p' "/proc/$MARIADB_PID/cgroup") == "${pod#/sys/fs/cgroup}/db" ]] ||
        fail "the server is in $(cat "/proc/$MARIADB_PID/cgroup")"
ok "container A: mariadbd pid $MARIADB_PID in ${pod#/sys/fs/cgroup}/db, its socket private to it"

# Container B: memgov, finding the server on its own.
( echo "$BASHPID" >"$pod/memgov/cgroup.procs"
  exec "$container" -- "$build/memgov" run --policy "$policy" --socket /run/memgov/pod.sock --state-dir "" \
        --record "$results/pod.trace.csv" ) 2>"$results/pod.memgov.log" &
governor=$!
for _ in $(seq 50); do grep -q governing "$results/pod.memgov.log" && break; sleep 0.2; done
grep -q "governing mariadbd pid $MARIADB_PID (/../db through /proc/$MARIADB_PID/root/sys/fs/cgroup)" \
        "$results/pod.memgov.log" || fail "memgov did not find the server's cgroup: $(cat "$results/pod.memgov.log")"
[[ $(sed -n 's/^0:://p' "/proc/$governor/cgroup") == "${pod#/sys/fs/cgroup}/memgov" ]] || fail "memgov is not in container B"
ok "container B: memgov found mariadbd pid $MARIADB_PID, cgroup /../db read through /proc/PID/root"

python3 "$sessions" "$sock" leaky leaky leaky 3 2 80 >"$results/pod.leaky.log" &
leaky=$!
for _ in $(seq 450); do
        grep -q -- '-> reset [0-9]* of' "$results/pod.memgov.log" && break
        grep -q '^oom_kill [1-9]' "$pod/db/memory.events" && break
        sleep 0.2
done
kill "$leaky" 2>/dev/null || true
kill "$governor"; wait "$governor" || true
grep -E 'read-only|-> |throttle skipped' "$results/pod.memgov.log" || true

[[ $(grep -c 'memory.high and memory.max cannot be set, so there is no throttling' "$results/pod.memgov.log") == 1 ]] ||
        fail "the read-only cgroup file system was not reported exactly once"
grep -q 'throttle skipped: the cgroup file system is read-only here' "$results/pod.memgov.log" ||
        fail "throttling was not held back"
grep -q -- '-> memory.high' "$results/pod.memgov.log" && fail "memory.high was written"
[[ $(cat "$pod/db/memory.high") == max ]] || fail "memory.high is $(cat "$pod/db/memory.high")"
grep -q -- '-> .*malloc_trim in thread' "$results/pod.memgov.log" || fail "no trim injected across the containers"
grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$results/pod.memgov.log" ||
        fail "no session reset over the server's private socket"
grep -q '^oom_kill 0' "$pod/db/memory.events" || fail "the server was OOM-killed"
ok "read-only cgroup said once, no throttling; trim injected and sessions reset across the containers; oom_kill 0"

# Container B with the host's hierarchy (a writable hostPath mount at /host/cgroup).
( echo "$BASHPID" >"$pod/memgov/cgroup.procs"
  exec "$container" --host-cgroup /host/cgroup -- "$build/memgov" run --policy "$policy" --cgroup-root /host/cgroup \
        --socket /run/memgov/pod2.sock --state-dir "" ) 2>"$results/pod2.memgov.log" &
governor=$!
for _ in $(seq 100); do grep -q -- '-> memory.high of' "$results/pod2.memgov.log" && break; sleep 0.2; done
high_set=$(cat "$pod/db/memory.high")
kill "$governor"; wait "$governor" || true
grep -q "governing mariadbd pid $MARIADB_PID (${pod#/sys/fs/cgroup}/db)" "$results/pod2.memgov.log" ||
        fail "with the host hierarchy, the cgroup was not found by its path: $(head -5 "$results/pod2.memgov.log")"
grep -q 'read-only' "$results/pod2.memgov.log" && fail "the writable hierarchy was taken for read-only"
grep -q -- '-> memory.high of .* is now' "$results/pod2.memgov.log" || fail "memory.high was not set: $(cat "$results/pod2.memgov.log")"
[[ $high_set != max ]] || fail "memory.high was still max in the cgroup while memgov ran"
[[ $(cat "$pod/db/memory.high") == max ]] || fail "memgov stopped and left memory.high at $(cat "$pod/db/memory.high")"
ok "host hierarchy at /host/cgroup: cgroup ${pod#/sys/fs/cgroup}/db found, memory.high set to $high_set, put back to max on stopping"
mariadb_stop
echo "pod-sidecar: PASS"
