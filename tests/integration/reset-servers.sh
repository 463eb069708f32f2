#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The reset rung on a real server of another flavour, from its Debian chroot: Oracle MySQL 9.7
# (each session's memory from performance_schema's memory by thread) or MariaDB 11.8
# (PROCESSLIST.MEMORY_USED). Three sessions pile up user variables beside a normal client; the
# daemon, on a budget they grow into, lists the sessions with their memory, ends the three
# growing ones by KILL CONNECTION and gives their memory back to the kernel with the allocator's
# own call (tcmalloc's release in mysqld, glibc's trim in mariadbd). The normal client is not
# chosen and sees no error. On MySQL, a server started with its memory instruments off is then
# shown to make the reset fail with the reason said (which instruments, and how to turn them on),
# not as "no session holds enough".
# The growing sessions are an SQL account's that plays the server's own threads: the anonymous
# account, logged in as "system user", the name the server gives its own threads. The server
# lists each session with the name it logged in with; such a client is reset like any other.
# With an exempt user in the policy, the daemon warns of that anonymous account: through it any
# client could log in under the exempt name.
#   reset-servers.sh FLAVOUR MEMGOV
set -euo pipefail
flavour=$1
memgov=$2
here=$(cd "$(dirname "$0")/.." && pwd)
name=reset-$flavour
# shellcheck source=../lib/servers.sh
. "$here/lib/servers.sh"
[[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root (chroot, mount namespaces, debootstrap)" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; [[ -s ${log:-} ]] && sed 's/^/  memgov: /' "$log" >&2; exit 1; }
mib() { echo "$(( $1 >> 20 ))M"; }

server_provision "$flavour"
dir=$(mktemp -d /tmp/memgov-reset-XXXXXX)
log=
daemon= normal= leaky= still=
stop_all() {
        local p
        for p in $daemon $normal $leaky $still; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
        daemon= normal= leaky= still=
}
trap 'stop_all; server_stop; rm -rf "$dir"' EXIT

# The test's keys besides the default: the budget, a 1 s sampling, the reset alone (a host with
# the memory controller on cgroup v1 has no memory.high to throttle with), and a min-memory the
# growing sessions reach within seconds.
policy() { # BUDGET [RESET_KEYS]
        cat >"$dir/policy.ini" <<EOF
[budget]
size = $1
[sampling]
interval = 1s
fast-interval = 1s
[trim]
enabled = no
[throttle]
enabled = no
[admit]
enabled = no
[pool]
enabled = no
[restart]
enabled = no
[reset]
min-memory = 32M
exempt-users = monitor
${2:-}
EOF
}
# The chroot's own client in the server's root: the workload's sessions are its connections.
client="nsenter -t %PID% -m -r -w -- $SERVER_CLIENT"

# run_case LABEL ROOM [server options...]: the server, its accounts, the daemon on a budget ROOM
# bytes over the idle server's RSS (negative: below it) and the clients; the daemon's log in $log
# when the growing sessions are gone, a reset failed, or 90 s are over. With $still_mb set, a
# session of another account holds that many MiB, set before the daemon starts, idle.
# $reset_keys: more keys of [reset].
still_mb= reset_keys=
run_case() {
        local label=$1 room=$2
        shift 2
        mkdir -p "$dir/server"
        server_start "$dir/server" "$@" || exit $? # the data directory of the case before, if any
        server_sql "CREATE USER IF NOT EXISTS ''@localhost IDENTIFIED BY 'leaky-password';
                    CREATE USER IF NOT EXISTS app@localhost IDENTIFIED BY 'app-password';
                    CREATE USER IF NOT EXISTS keeper@localhost IDENTIFIED BY 'keeper-password'"
        local idle budget i
        idle=$(server_rss)
        budget=$(( idle + room ))
        policy "$budget" "$reset_keys"
        export SESSIONS_CLIENT=${client/\%PID\%/$SERVER_PID}
        if [[ -n $still_mb ]]; then
                python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" still keeper keeper-password "$still_mb" 90 \
                        >"$dir/$label.still" &
                still=$!
                for i in $(seq 100); do
                        grep -q "still set" "$dir/$label.still" && break
                        kill -0 "$still" 2>/dev/null || fail "$label: the still session: $(cat "$dir/$label.still")"
                        sleep 0.1
                done
                grep -q "still set" "$dir/$label.still" || fail "$label: the still session's variables not set in 10 s"
        fi
        log=$dir/$label.log
        mkdir -p -m 700 "$dir/state"
        "$memgov" run --pid "$SERVER_PID" -p "$dir/policy.ini" --socket "$dir/state/memgov.sock" \
                --state-dir "$dir/state" --record "$dir/$label.trace.csv" >"$log" 2>&1 &
        daemon=$!
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" normal app app-password 90 >"$dir/$label.normal" &
        normal=$!
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" leaky "system user" leaky-password 3 4 90 >"$dir/$label.leaky" &
        leaky=$!
        echo "$name: $label: $SERVER_FLAVOUR pid $SERVER_PID, RSS $(mib "$idle") idle, budget $(mib "$budget")" \
             "${reset_keys:-(reset.at 92%: $(mib $((budget * 92 / 100))))}"
        for i in $(seq 900); do
                grep -q -- "-> reset" "$log" && grep -q "leaky ended 3" "$dir/$label.leaky" && break
                grep -q -- "-> reset failed" "$log" && break
                kill -0 "$daemon" 2>/dev/null || fail "$label: memgov exited"
                kill -0 "$leaky" 2>/dev/null || break
                sleep 0.1
        done
        # A result reaches the trace with the sample after it: one more sample before the daemon
        # stops (a reset logged just before the stop was once in no row).
        local rows
        rows=$(wc -l <"$dir/$label.trace.csv")
        for i in $(seq 100); do
                (( $(wc -l <"$dir/$label.trace.csv") > rows )) && break
                sleep 0.1
        done
        kill -TERM "$normal" 2>/dev/null || true
        wait "$normal" || true
        normal=
        kill "$leaky" 2>/dev/null || true
        wait "$leaky" || true
        leaky=
        if [[ -n $still ]]; then
                kill -TERM "$still" 2>/dev/null || true
                wait "$still" || true
                still=
        fi
        # The session kept for the actions told of, even where the reset opened it first.
        for i in $(seq 150); do
                grep -q "sql: a session kept open for the actions" "$log" && break
                sleep 0.1
        done
        "$memgov" status --socket "$dir/state/memgov.sock" --json >"$dir/$label.status.json" || fail "$label: memgov status failed"
        "$memgov" status --socket "$dir/state/memgov.sock" >"$dir/$label.status" || fail "$label: memgov status failed"
        kill "$daemon" 2>/dev/null || true
        wait "$daemon" || true
        daemon=
}

run_case grow $((240 << 20))
result=$(grep -m1 -E -- "memgov: (warning: )?-> (would )?reset" "$log") || fail "grow: no reset within 90 s: $(cat "$dir/grow.leaky")"
echo "$name: grow: ${result#*-> }"
[[ $result != *"reset failed"* ]] || fail "grow: $result"
chosen=$(grep -o '#[0-9]* [a-z ]*@localhost ([^)]*)' <<<"$result") || fail "grep: no session named: $result"
[[ $(grep -c '#[0-9]* system user@localhost' <<<"$chosen") == 3 ]] ||
        fail "grow: the three growing sessions (anonymous, logged in as \"system user\") were not the ones chosen: $chosen"
grep -q 'app@localhost' <<<"$chosen" && fail "grow: the normal client's session was chosen: $chosen"
# Each chosen session's memory as the server measured it: 32M (reset.min-memory) or more.
while read -r m; do
        python3 -c 'import sys; v = sys.argv[1]; u = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[v[-1]]
sys.exit(0 if float(v[:-1]) * u >= 32 << 20 else 1)' "$m" || fail "grow: a session chosen with $m: $chosen"
done < <(sed -E 's/.*, ([0-9.]+[KMG])\)$/\1/' <<<"$chosen")
[[ $result == *"; 3 ended; trimmed; RSS "* ]] || fail "grow: not 3 ended and trimmed: $result"
read -r before after < <(sed -E 's/.*; RSS ([0-9.]+[KMG]) -> ([0-9.]+[KMG]).*/\1 \2/' <<<"$result")
python3 -c 'import sys
u = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
b, a = (float(v[:-1]) * u[v[-1]] for v in sys.argv[1:])
sys.exit(0 if b - a >= 64 << 20 else 1)' "$before" "$after" || fail "grow: less than 64M given back: RSS $before -> $after"
grep -q "leaky ended 3" "$dir/grow.leaky" || fail "grow: the growing clients did not see their sessions end: $(cat "$dir/grow.leaky")"
n=$(cat "$dir/grow.normal")
[[ $n =~ ^normal\ ok=([0-9]+)\ errors=0\ reconnects=0$ ]] && (( BASH_REMATCH[1] > 50 )) ||
        fail "grow: the normal client: $n"
echo "$name: grow: ok: 3 sessions ended, RSS $before -> $after, the normal client: $n"
# Every session at reset.min-memory ended, 3 of reset.max-per-step 4: the trace says the reset found
# fewer than it was allowed (the emergency reset comes again on growth after such a one).
python3 - "$dir/grow.trace.csv" <<'PY' || fail "grow: the trace does not say the reset found fewer than its max"
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
fewer = [r for r in rows if "reset" in r["found_fewer"].split("+")]
print(f"grow: trace: found_fewer=reset on {len(fewer)} of {len(rows)} samples")
sys.exit(0 if len(fewer) == 1 and not any("reset" in r["failed"].split("+") for r in fewer) else 1)
PY
warned=$(grep -m1 "anonymous account" "$log") || fail "grow: no word of the anonymous account with exempt-users set"
[[ $warned == *"warning: "*"(''@'localhost')"*"exempt name"* ]] || fail "grow: $warned"
echo "$name: grow: ok: ${warned#*memgov: }"
# The server's own measure of each session's memory is on by default (MySQL's memory instruments
# since 8.0, MariaDB's MEMORY_USED), and status says that it is.
measured=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["server"].get("session_memory"))' "$dir/grow.status.json")
[[ $measured == measured ]] || fail "grow: memgov status: the sessions' memory is $measured, not measured"
grep -q "cannot rank the sessions" "$log" && fail "grow: memgov warned of the sessions' memory: $(grep "cannot rank" "$log")"
server_stop

# The emergency reset on its ETA ends what grows. Beside the growing sessions, a session of
# another account holds 48M of user variables, set before the daemon starts, and idle: the first
# the emergency reset would take by its order (idle ones first, then the largest). With reset.at
# off, the reset comes on its ETA alone, an emergency (the OOM within restart.emergency-eta). It
# has no listing of this server process before its own: it lists the sessions again 2 s later,
# ends the growing ones, passes over the one that holds as much as 2 s before and says so; that
# session's client is still connected.
still_mb=48 reset_keys="at = off"
run_case emergency $((240 << 20))
still_mb= reset_keys=
decided=$(grep -m1 -- "emergency reset (" "$log") || fail "emergency: no emergency reset decided"
[[ $decided == *"those that do not grow only at"* ]] || fail "emergency: not the reset that ends what grows: $decided"
result=$(grep -m1 -E -- "memgov: (warning: )?-> (would )?reset" "$log") || fail "emergency: no reset within 90 s"
echo "$name: emergency: ${result#*-> }"
[[ $result != *"reset failed"* ]] || fail "emergency: $result"
chosen=$(grep -o '#[0-9]* [a-z ]*@localhost ([^)]*)' <<<"$result") || fail "grep: no session named: $result"
grep -q 'keeper@localhost' <<<"$chosen" && fail "emergency: the session that does not grow was chosen: $chosen"
grep -q '#[0-9]* system user@localhost' <<<"$chosen" || fail "emergency: no growing session chosen: $chosen"
[[ $result == *"; 1 more holding 8M or more passed over: as much as "*" before (not what grows); "* ]] ||
        fail "emergency: the session that does not grow not said passed over: $result"
grep -q "still alive" "$dir/emergency.still" ||
        fail "emergency: the client of the session that does not grow: $(cat "$dir/emergency.still")"
echo "$name: emergency: ok: $(grep -c '#[0-9]* system user@localhost' <<<"$chosen") growing session(s) ended," \
     "the one that holds 48M passed over and still connected"
server_stop

if [[ $flavour == mysql-* ]]; then
        # The same with the memory instruments off: performance_schema counts no session's memory,
        # and the reset says so instead of finding no session large enough. The idle server is
        # over reset.at already: the reset is called for at once.
        run_case uninstrumented $(( -(24 << 20) )) --performance-schema-instrument='memory/%=OFF'
        result=$(grep -m1 -E -- "memgov: (warning: )?-> (would )?reset" "$log") || fail "uninstrumented: no reset decided within 90 s"
        echo "$name: uninstrumented: ${result#*-> }"
        [[ $result == *"reset failed"*"performance_schema"*"memory/%"* ]] ||
                fail "uninstrumented: the reset does not say that the memory instruments are off: $result"
        # Said before any reset too: when the session is opened, and in memgov status.
        warned=$(grep -m1 "sql: the reset cannot rank the sessions by their memory: " "$log") ||
                fail "uninstrumented: no warning when the session was opened"
        echo "$name: uninstrumented: ${warned#*sql: }"
        line=$(grep '^  sessions ' "$dir/uninstrumented.status") || fail "uninstrumented: memgov status says nothing of it"
        [[ $line == *"memory instruments (memory/%) are off"* ]] || fail "uninstrumented: memgov status: $line"
        echo "$name: uninstrumented: memgov status: $line"
        server_stop
fi
echo "$name: ok"
