#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The reset rung on the real kernel, on a server of another flavour from its Debian chroot
# (MySQL 9.7, MariaDB 11.8), as mariadb-sessions.sh runs it on the host's MariaDB: the server in a
# cgroup under memory.max, three sessions piling up user variables while a normal client keeps
# querying, memgov governing the cgroup (memory.current, memory.events) with the fast test
# policy. The growing sessions are chosen by the server's own measure of their memory and reset,
# the normal client never notices, the kernel kills nothing.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/server-sessions.sh FLAVOUR
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "server-sessions: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
flavour=${1:?usage: server-sessions.sh FLAVOUR}
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
name=server-sessions-$flavour
# shellcheck source=../../lib/servers.sh
. "$here/lib/servers.sh"
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
policy=$here/vm/policies/sessions.ini
M=$((1 << 20))
mib() { echo "$(( $1 / M ))M"; }

server_provision "$flavour"
cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
uptime_s() { cut -d' ' -f1 /proc/uptime; }
t0=$(uptime_s)
SERVER_CGROUP=$cg server_start "${MEMGOV_DISK:?run with --disk}/server" || exit 1
ready=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.0f", b - a }')
trap 'server_stop' EXIT
server_sql "CREATE USER leaky@localhost IDENTIFIED BY 'leaky-password';
            CREATE USER app@localhost IDENTIFIED BY 'app-password'"
# memory.max twice what the idle server holds, and 160M over it at least: the idle server under
# the policy's trim.at (55%), the three sessions (6M a second together) at its reset.at (70%)
# within half a minute of their 70, at memory.max within a minute.
held=$(cat "$cg/memory.current")
MAX=$(( held * 2 > held + 160 * M ? held * 2 : held + 160 * M ))
MAX=$(( (MAX + M - 1) / M * M ))
echo "$MAX" >"$cg/memory.max"
echo "$name: $(server_sql "SELECT VERSION()") ready in ${ready}s, memory.current $(mib "$held"), memory.max $(mib "$MAX")"

"$build/memgov" run --cgroup /db --policy "$policy" --record "$results/memgov.trace.csv" \
        --socket /run/memgov/db.sock --state-dir "$results" 2>"$results/memgov.log" &
governor=$!
sleep 1
export SESSIONS_CLIENT="nsenter -t $SERVER_PID -m -r -w -- $SERVER_CLIENT"
python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" normal app app-password 70 >"$results/normal.log" &
normal=$!
python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" leaky leaky leaky-password 3 2 70 >"$results/leaky.log" &
leaky=$!
for _ in $(seq 400); do
        grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
        grep -q "leaky done" "$results/leaky.log" && break
        kill -0 "$leaky" 2>/dev/null || break
        sleep 0.2
done
kill "$leaky" 2>/dev/null || true
wait "$normal" || true
"$build/memgov" status --socket /run/memgov/db.sock >"$results/status.txt" || true
kill "$governor"
wait "$governor" || true
echo "== memgov"
grep -E 'memgov: (trim|reset|level|effect|warning)|-> ' "$results/memgov.log" | cut -c1-300 || true
echo "memory.events: $(tr '\n' ' ' <"$cg/memory.events"); memory.peak $(mib "$(cat "$cg/memory.peak" 2>/dev/null || echo 0)")"
cat "$results/normal.log" "$results/leaky.log"
grep '^  database' "$results/status.txt" || true

grep -q '^oom_kill 0' "$cg/memory.events" || fail "the server was OOM-killed with memgov"
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server is gone"
grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$results/memgov.log" || fail "no growing session was reset"
grep -- '-> reset' "$results/memgov.log" | grep -q 'app@localhost' && fail "the normal client's session was reset"
grep -q 'errors=0' "$results/normal.log" || fail "the normal client saw errors"
[[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer"
echo "$name: ok: the growing sessions were reset, the normal client went on, no OOM kill"
