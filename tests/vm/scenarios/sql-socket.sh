#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The SQL connection against an unprivileged impostor, with a real MariaDB server (Debian's
# package) in a cgroup of its own. The impostor (uid 4242) listens on a socket and binds others
# whose paths forge /proc/net/unix lines that give the server's socket inode and the impostor's
# path. memgov trim --method sql must reach the real server and never the impostor; and with
# the impostor's socket given as [sql] socket, memgov must refuse it (its listener is not the
# server) before sending anything.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/sql-socket.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "sql-socket: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
export MEMGOV_UDF=$build/memgov_udf.so
# shellcheck source=../../lib/mariadb.sh
. "$here/lib/mariadb.sh"
fail() { echo "sql-socket: FAIL: $*" >&2; exit 1; }
disk=${MEMGOV_DISK:?run with --disk}
atk=$disk/atk
impostor=

cleanup() {
        [[ -n $impostor ]] && kill "$impostor" 2>/dev/null
        mariadb_stop || true
}
trap cleanup EXIT

cg=${MEMGOV_CGROUP:?}/sql-socket
mkdir "$cg"
MARIADB_CGROUP=$cg mariadb_start "$disk/mariadb"
mariadb_sql "CREATE FUNCTION IF NOT EXISTS memgov_trim RETURNS INTEGER SONAME 'memgov_udf.so'"

mkdir -m 0777 "$atk"
# The impostor's own copy of its script: the source tree may sit under a directory only root
# can enter (a clone in a mode 0700 temporary directory).
install -m 0644 "$here/workloads/sql-impostor.py" "$atk/impostor.py"
setpriv --reuid=4242 --regid=4242 --clear-groups python3 "$atk/impostor.py" "$atk" "$MARIADB_SOCKET" 24 \
        2>"$results/impostor.log" &
impostor=$!
for _ in $(seq 100); do [[ -e $atk/ready ]] && break; sleep 0.1; done
[[ -e $atk/ready ]] || { cat "$results/impostor.log" >&2; fail "the impostor did not start"; }
forged=$(grep -c " $atk/i\$" /proc/net/unix || true)
echo "sql-socket: /proc/net/unix holds $forged lines naming the impostor's socket"
(( forged > 1 )) || fail "the forged lines are not in /proc/net/unix"
# A connection to the impostor: "connection BYTES" in its log.
connections() { [[ -e $atk/log ]] && wc -l <"$atk/log" || echo 0; }

# 1. The server's own socket, found by memgov among the forged lines.
report=$("$build/memgov" trim --pid "$MARIADB_PID" --method sql --json 2>"$results/trim-auto.err") ||
        { cat "$results/trim-auto.err" >&2; fail "trim --method sql failed: $report"; }
echo "sql-socket: trim --method sql: $report"
sleep 0.5
(( $(connections) == 0 )) || fail "memgov connected to the impostor: $(cat "$atk/log")"
[[ $(mariadb_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer after the trim"
echo "sql-socket: ok: the forged lines were ignored, the real server was used"

# 2. The impostor's socket in the policy, with the server known: refused before any byte.
printf '[sql]\nsocket = %s/i\n' "$atk" >"$results/impostor.ini"
chmod 0644 "$results/impostor.ini"
if "$build/memgov" trim --pid "$MARIADB_PID" --method sql --policy "$results/impostor.ini" \
        >"$results/trim-policy.out" 2>"$results/trim-policy.err"; then
        fail "memgov used the impostor's socket: $(cat "$results/trim-policy.out")"
fi
cat "$results/trim-policy.err"
grep -q "neither the server (process $MARIADB_PID) nor a process of its user in its cgroup" "$results/trim-policy.err" ||
        fail "the refusal does not say why: $(cat "$results/trim-policy.err")"
sleep 3.5 # the impostor logs a connection when the client has gone, or after 3 s
if [[ -e $atk/log ]] && grep -qv '^connection 0$' "$atk/log"; then
        fail "memgov sent the impostor something: $(cat "$atk/log")"
fi
echo "sql-socket: ok: the impostor's socket was refused, nothing sent to it ($(connections) probe connection)"
