#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The session memgov keeps open for its actions (sql.keep-open), against a real mariadbd
# (Debian's package) started by the test: the daemon opens it at start; then every connection
# the server allows is taken (sessions of an account without privileges up to max_connections,
# and a root session in the one the server keeps for SUPER), so that no new connection gets in
# (error 1040, as in a storm that swamps the server). A trim through the loadable function
# (trim.method sql), called for by a smaller budget on SIGHUP, is carried out on the kept
# session, the same one. With sql.keep-open = no and the server full again, the same trim fails
# with the server's "Too many connections": the test bites.
#   sql-keep-mariadbd.sh MEMGOV UDF MEMGOV_CONN_STORM
set -euo pipefail
memgov=$1
export MEMGOV_UDF=$2
conn_storm=$3
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "sql-keep-mariadbd: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
fail() { echo "sql-keep-mariadbd: FAIL: $*" >&2; [[ -s ${log:-} ]] && sed 's/^/  memgov: /' "$log" >&2; exit 1; }

MAX=40
dir=$(mktemp -d /tmp/memgov-keep-XXXXXX)
log=
daemon=
stop_daemon() {
        if [[ -n $daemon ]]; then
                kill "$daemon" 2>/dev/null || true
                wait "$daemon" 2>/dev/null || true
                daemon=
        fi
}
stop_storm() {
        if [[ -n ${STORM_PID:-} ]]; then
                echo quit >&"${STORM[1]}" 2>/dev/null || true
                wait "$STORM_PID" 2>/dev/null || true
                STORM_PID=
        fi
}
sleeper=
filled_from=0
stop_sleeper() {
        [[ -n $sleeper ]] && { kill "$sleeper" 2>/dev/null || true; wait "$sleeper" 2>/dev/null || true; }
        sleeper=
}
trap 'stop_daemon; stop_sleeper; stop_storm; mariadb_unfragment; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" --max-connections=$MAX || exit $?
mariadb_sql "CREATE FUNCTION IF NOT EXISTS memgov_trim RETURNS INTEGER SONAME 'memgov_udf.so'"
mariadb_sql "CREATE USER storm@localhost IDENTIFIED BY 'memgov-test-password'"
status() { mariadb_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }

# policy KEEP BUDGET: the trim alone, through SQL, on a budget.
policy() {
        cat >"$dir/policy.ini" <<EOF
[budget]
size = $2
[sampling]
interval = 1s
fast-interval = 1s
[trim]
method = sql
min-gain = 1
[throttle]
enabled = no
[admit]
enabled = no
[reset]
enabled = no
[restart]
enabled = no
[sql]
keep-open = $1
EOF
}
wait_log() { # PATTERN SECONDS
        local i
        for i in $(seq $(($2 * 10))); do
                grep -q -- "$1" "$log" && return 0
                kill -0 "$daemon" 2>/dev/null || fail "memgov exited"
                sleep 0.1
        done
        return 1
}
start_daemon() { # KEEP BUDGET LOG
        log=$dir/$3
        mkdir -p -m 700 "$dir/state"
        policy "$1" "$2"
        "$memgov" run --pid "$MARIADB_PID" -p "$dir/policy.ini" --socket "$dir/state/memgov.sock" --state-dir "$dir/state" >"$log" 2>&1 &
        daemon=$!
}
# Every connection the server allows taken: the storm up to max_connections, then a root
# session in the slot kept for SUPER. A new connection, even root's, is refused. What is
# connected is only a starting point (a session on its way out, memgov's own short ones): the
# storm opens a little less, then one more at a time until the server refuses it (1040), and
# again whenever a root connection still gets in.
fill() {
        filled_from=$(status Threads_connected)
        local connected=$((filled_from - 1)) # not this query's own connection
        local base=$((MAX - connected - 3))
        (( base > 0 )) || base=1
        coproc STORM { "$conn_storm" "$(mariadb_client_socket)" storm memgov-test-password $base; }
        STORM_PID=$!
        IFS= read -r -t 60 opened <&"${STORM[0]}" || fail "the storm did not open its sessions"
        [[ $opened == "open $base" ]] || fail "the storm: $opened"
        storm_n=$base
        local i out reply
        for i in $(seq 100); do
                while :; do
                        echo connect >&"${STORM[1]}"
                        IFS= read -r -t 30 reply <&"${STORM[0]}" || fail "the storm did not answer"
                        [[ $reply == "connect ok" ]] || break
                        storm_n=$((storm_n + 1))
                done
                [[ $reply == "connect error 1040 "* ]] || fail "the storm's next session: $reply"
                # (again if it lost the slot to the probe below and was refused)
                [[ -n $sleeper ]] && kill -0 "$sleeper" 2>/dev/null ||
                        { mariadb_sql "SELECT 'sql-keep sleeper', SLEEP(600)" >/dev/null 2>&1 & sleeper=$!; }
                out=$(mariadb_sql "SELECT 1" 2>&1) || break
                sleep 0.1
        done
        [[ $out == *"Too many connections"* ]] || fail "the server still takes connections: $out"
        echo "sql-keep-mariadbd: the server is full: the storm's $storm_n sessions, $((MAX - storm_n)) others," \
             "root in the slot for SUPER; a new root connection: $out"
}
# The storm's and the sleeper's sessions gone, on the server's side too: a killed client's SLEEP
# goes on in the server until it is killed there (the fragmenting sessions' SLEEPs are left
# alone: they hold the memory to trim), and a closed session takes a moment to leave
# Threads_connected.
# The next fill() counts what is connected, so it must not count what is on its way out.
empty() {
        stop_sleeper
        stop_storm
        local id i
        for id in $(mariadb_sql "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT ''sql-keep sleeper''%' AND ID <> CONNECTION_ID()"); do
                mariadb_sql "KILL $id" 2>/dev/null || true
        done
        for i in $(seq 100); do
                (( $(status Threads_connected) <= filled_from )) && return 0
                sleep 0.1
        done
        fail "the storm's sessions did not leave: $(status Threads_connected) connected, $filled_from before"
}

# Memory to trim: holes in the server's heap that only a trim gives back.
mariadb_fragment 8 40
rss=$(mariadb_rss)

# 1. Kept open: the daemon opens its session at start, on a budget it is far below.
start_daemon yes 64G keep.log
wait_log "sql: a session kept open for the actions: id" 20 || fail "no session kept open"
line=$(grep -m1 "sql: a session kept open" "$log")
kept_id=$(sed -E 's/.*: id ([0-9]+) on .*/\1/' <<<"$line")
echo "sql-keep-mariadbd: ${line#*sql: }"
[[ $(mariadb_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $kept_id AND USER = 'root'") == 1 ]] ||
        fail "session $kept_id is not in the server's process list"
# memgov status: the server's flavour, version and allocator, and the session.
"$memgov" status --socket "$dir/state/memgov.sock" --json >"$dir/status.json" || fail "memgov status failed"
python3 - "$dir/status.json" "$kept_id" "$(mariadbd --version | awk '{print $3}')" <<'PY' || fail "memgov status: $(cat "$dir/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))["server"]
want = {"flavour": "MariaDB", "version": sys.argv[3], "allocator": "glibc", "sql_session": "open",
        "sql_session_id": int(sys.argv[2])}
bad = {k: s.get(k) for k, v in want.items() if s.get(k) != v}
if bad:
    sys.exit(f"status server: {bad}, expected {want}")
PY
echo "sql-keep-mariadbd: memgov status: $("$memgov" status --socket "$dir/state/memgov.sock" | grep '^  database')"
# Lost (a DBA's KILL, the server's wait_timeout): the ping of an idle session finds it, and a
# new one is opened.
mariadb_sql "KILL $kept_id"
t0=$(date +%s)
for i in $(seq 600); do
        [[ $(grep -c "sql: a session kept open" "$log") -ge 2 ]] && break
        kill -0 "$daemon" 2>/dev/null || fail "memgov exited"
        sleep 0.1
done
line=$(grep "sql: a session kept open" "$log" | sed -n 2p)
[[ -n $line ]] || fail "the session killed was not opened again within 60s"
kept_id=$(sed -E 's/.*: id ([0-9]+) on .*/\1/' <<<"$line")
echo "sql-keep-mariadbd: killed; $(( $(date +%s) - t0 ))s later: ${line#*sql: }"
fill
# A budget the working set is at 85% of: trim.at 75% calls for a trim.
policy yes $((rss * 100 / 85))
kill -HUP "$daemon"
wait_log "memgov: -> " 30 || fail "no trim result within 30s"
result=$(grep -m1 -- "memgov: -> " "$log")
echo "sql-keep-mariadbd: the trim with every connection taken: ${result#*-> }"
[[ $result == *"over SQL"*freed* ]] || fail "the trim with every connection taken: $result"
[[ $result != *failed* ]] || fail "the trim failed on the kept session: $result"
(( $(grep -c "sql: a session kept open" "$log") == 2 )) || fail "another session was opened: $(grep "kept open" "$log")"
stop_daemon
empty

# 2. Not kept: the same trim needs a new connection, and the full server refuses it.
start_daemon no 64G nokeep.log
sleep 2
fill
policy no $(($(mariadb_rss) * 100 / 85))
kill -HUP "$daemon"
wait_log "-> trim failed" 30 || fail "no failed trim within 30s (keep-open = no)"
result=$(grep -m1 -- "-> trim failed" "$log")
echo "sql-keep-mariadbd: the same without a kept session: ${result#*-> }"
[[ $result == *"trim failed"*"cannot connect"*": Too many connections" ]] || fail "without a kept session: $result"
grep -q "session kept open" "$log" && fail "keep-open = no kept a session"
stop_daemon
empty
echo "sql-keep-mariadbd: ok"
