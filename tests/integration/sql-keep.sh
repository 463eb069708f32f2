#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The session memgov keeps open for its actions (sql.keep-open), against a real server started by
# the test: the host's MariaDB (FLAVOUR mariadb, Debian's package) or one from its Debian chroot
# (mysql-9.7, mariadb-11.8). The daemon opens it at start, and opens it again when a DBA kills
# it; then every connection the server allows is taken (a storm of an account without privileges
# up to max_connections, and a root session in the one the server keeps for its administrators),
# so that no new connection gets in (error 1040, as in a storm that swamps the server). A trim
# through memgov's loadable function (trim.method sql), called for by a smaller budget on SIGHUP,
# is carried out on the kept session, the same one. With sql.keep-open = no and the server full
# again, the same trim fails with the server's "Too many connections": the test bites.
#   sql-keep.sh FLAVOUR MEMGOV UDF MEMGOV_CONN_STORM
set -euo pipefail
flavour=$1
memgov=$2
udf=$3
conn_storm=$4
here=$(cd "$(dirname "$0")/.." && pwd)
# The server through the same few calls whichever it is.
if [[ $flavour == mariadb ]]; then
        name=sql-keep-mariadbd
        # shellcheck source=../lib/mariadb.sh
        . "$here/lib/mariadb.sh"
        export MEMGOV_UDF=$udf
        db_start() { mariadb_start "$@"; }
        db_sql() { mariadb_sql "$@"; }
        db_socket() { mariadb_client_socket; }
        db_pid() { echo "$MARIADB_PID"; }
        db_fragment() { mariadb_fragment "$@"; }
        db_unfragment() { mariadb_unfragment; }
        db_rss() { mariadb_rss; }
        db_stop() { mariadb_stop; }
        [[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
else
        name=sql-keep-$flavour
        # shellcheck source=../lib/servers.sh
        . "$here/lib/servers.sh"
        export SERVER_UDF=$udf
        db_start() { server_start "$@"; }
        db_sql() { server_sql "$@"; }
        db_socket() { server_host_socket; }
        db_pid() { echo "$SERVER_PID"; }
        db_fragment() { server_fragment "$@"; }
        db_unfragment() { server_unfragment; }
        db_rss() { server_rss; }
        db_stop() { server_stop; }
        [[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root (chroot, mount namespaces, debootstrap)" >&2; exit 77; }
        server_provision "$flavour"
fi
fail() { echo "$name: FAIL: $*" >&2; [[ -s ${log:-} ]] && sed 's/^/  memgov: /' "$log" >&2; exit 1; }

MAX=40
dir=$(mktemp -d /tmp/memgov-keep-XXXXXX)
log= daemon= sleeper= STORM_PID=
stop_daemon() {
        [[ -n $daemon ]] || return 0
        kill "$daemon" 2>/dev/null || true
        wait "$daemon" 2>/dev/null || true
        daemon=
}
stop_storm() {
        [[ -n $STORM_PID ]] || return 0
        echo quit >&"${STORM[1]}" 2>/dev/null || true
        wait "$STORM_PID" 2>/dev/null || true
        STORM_PID=
}
stop_sleeper() {
        [[ -n $sleeper ]] && { kill "$sleeper" 2>/dev/null || true; wait "$sleeper" 2>/dev/null || true; }
        sleeper=
}
trap 'stop_daemon; stop_sleeper; stop_storm; db_unfragment; db_stop; rm -rf "$dir"' EXIT
db_start "$dir" --max-connections=$MAX || exit $?
db_sql "CREATE FUNCTION memgov_trim RETURNS INTEGER SONAME 'memgov_udf.so'"
db_sql "CREATE USER storm@localhost IDENTIFIED BY 'memgov-test-password'"
status() { db_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
connected() { status Threads_connected; }

policy() { # KEEP BUDGET [QUERY_TIMEOUT]: the trim alone, through SQL, on a budget
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
[pool]
enabled = no
[restart]
enabled = no
[sql]
keep-open = $1
query-timeout = ${3:-10s}
EOF
}
wait_log() { # PATTERN SECONDS
        for _ in $(seq $(($2 * 10))); do
                grep -q -- "$1" "$log" && return 0
                kill -0 "$daemon" 2>/dev/null || fail "memgov exited"
                sleep 0.1
        done
        return 1
}
session_id() { sed -E 's/.*: id ([0-9]+) on .*/\1/' <<<"$1"; } # a "session kept open" line's id
# The daemon's first kept session: its log line in kept_line, its id in kept_id.
first_kept() {
        wait_log "sql: a session kept open for the actions: id" 30 || fail "no session kept open"
        kept_line=$(grep -m1 "sql: a session kept open" "$log")
        kept_id=$(session_id "$kept_line")
}
start_daemon() { # KEEP BUDGET LOG [QUERY_TIMEOUT]
        log=$dir/$3
        mkdir -p -m 700 "$dir/state"
        policy "$1" "$2" "${4:-}"
        "$memgov" run --pid "$(db_pid)" -p "$dir/policy.ini" --socket "$dir/state/memgov.sock" \
                --state-dir "$dir/state" >"$log" 2>&1 &
        daemon=$!
}
# Every connection the server allows taken: the storm a little under max_connections, then one
# more at a time until the server refuses it (1040), and a root session in the slot kept for
# administrators (again whenever a root connection still gets in).
fill() {
        filled_from=$(connected)
        local base=$((MAX - filled_from - 2)) i out reply
        (( base > 0 )) || base=1
        coproc STORM { "$conn_storm" "$(db_socket)" storm memgov-test-password $base 2>&1; }
        STORM_PID=$!
        IFS= read -r -t 120 opened <&"${STORM[0]}" || fail "the storm did not open its sessions"
        [[ $opened == "open $base" ]] || fail "the storm: $opened"
        storm_n=$base
        for i in $(seq 100); do
                while :; do
                        echo connect >&"${STORM[1]}"
                        IFS= read -r -t 30 reply <&"${STORM[0]}" || fail "the storm did not answer"
                        [[ $reply == "connect ok" ]] || break
                        storm_n=$((storm_n + 1))
                done
                [[ $reply == "connect error 1040 "* ]] || fail "the storm's next session: $reply"
                [[ -n $sleeper ]] && kill -0 "$sleeper" 2>/dev/null ||
                        { db_sql "SELECT 'sql-keep sleeper', SLEEP(600)" >/dev/null 2>&1 & sleeper=$!; }
                out=$(db_sql "SELECT 1" 2>&1) || break
                sleep 0.1
        done
        [[ $out == *"Too many connections"* ]] || fail "the server still takes connections: $out"
        echo "$name: the server is full: the storm's $storm_n sessions, root in the administrators' slot;" \
             "a new root connection: $out"
}
# The storm's and the sleeper's sessions gone, on the server's side too (a killed client's SLEEP
# goes on in the server until it is killed there).
empty() {
        stop_sleeper
        stop_storm
        local id
        for _ in $(seq 100); do db_sql "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
        for id in $(db_sql "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT ''sql-keep sleeper''%' AND ID <> CONNECTION_ID()"); do
                db_sql "KILL $id" 2>/dev/null || true
        done
        for _ in $(seq 100); do
                (( $(connected) <= filled_from )) && return 0
                sleep 0.1
        done
        fail "the storm's sessions did not leave: $(connected) connected, $filled_from before"
}

# Something to trim: holes in the server's heap.
db_fragment 8 20
version=$(db_sql "SELECT VERSION()")
[[ $flavour == mysql-* ]] && want_flavour=MySQL want_alloc=tcmalloc || want_flavour=MariaDB want_alloc=glibc

# 1. Kept open: the daemon opens its session at start, on a budget it is far below.
start_daemon yes 64G keep.log
first_kept
echo "$name: ${kept_line#*sql: }"
[[ $(db_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $kept_id AND USER = 'root'") == 1 ]] ||
        fail "session $kept_id is not in the server's process list"
for _ in $(seq 50); do
        "$memgov" status --socket "$dir/state/memgov.sock" --json >"$dir/status.json" || fail "memgov status failed"
        grep -q '"accepting_clients": true' "$dir/status.json" && break
        sleep 0.2
done
python3 - "$dir/status.json" "$kept_id" "$version" "$want_flavour" "$want_alloc" <<'PY' || fail "memgov status: $(cat "$dir/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))["server"]
want = {"flavour": sys.argv[4], "version": sys.argv[3], "allocator": sys.argv[5], "sql_session": "open",
        "sql_session_id": int(sys.argv[2]), "accepting_clients": True}
bad = {k: s.get(k) for k, v in want.items() if s.get(k) != v}
if bad:
    sys.exit(f"status server: {bad}, expected {want}")
PY
echo "$name: memgov status: $("$memgov" status --socket "$dir/state/memgov.sock" | grep '^  database')"
# Lost (a DBA's KILL, the server's wait_timeout): the ping of an idle session finds it, and a
# new one is opened.
db_sql "KILL $kept_id"
t0=$(date +%s)
for _ in $(seq 600); do
        (( $(grep -c "sql: a session kept open" "$log") >= 2 )) && break
        kill -0 "$daemon" 2>/dev/null || fail "memgov exited"
        sleep 0.1
done
line=$(grep "sql: a session kept open" "$log" | sed -n 2p)
[[ -n $line ]] || fail "the session killed was not opened again within 60s"
kept_id=$(session_id "$line")
echo "$name: killed; $(( $(date +%s) - t0 ))s later: ${line#*sql: }"
fill
# A budget the server's RSS is at 85% of: trim.at 75% calls for a trim.
policy yes $(( $(db_rss) * 100 / 85 ))
kill -HUP "$daemon"
wait_log "memgov: -> " 30 || fail "no trim result within 30s"
trimmed_at=$EPOCHREALTIME
result=$(grep -m1 -- "memgov: -> " "$log")
echo "$name: the trim with every connection taken: ${result#*-> }"
[[ $result == *"over SQL"*freed* && $result != *failed* ]] || fail "the trim with every connection taken: $result"
(( $(grep -c "sql: a session kept open" "$log") == 2 )) || fail "another session was opened: $(grep "kept open" "$log")"
stop_daemon
empty

# 2. Killed right before an action: the action takes the kept session without a ping when it
# answered within the last 30s, but not one the server has closed (its socket reads the end): a
# new session is opened for it, and the trim goes through.
start_daemon yes 64G killed.log
first_kept
# The loadable function trims once in 10 s, whoever calls it: 10 s after the last trim.
sleep "$(python3 -c 'import sys, time; print(max(0, float(sys.argv[1]) + 10.5 - time.time()))' "$trimmed_at")"
db_sql "KILL $kept_id"
for _ in $(seq 100); do
        [[ $(db_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $kept_id") == 0 ]] && break
        sleep 0.1
done
policy yes $(( $(db_rss) * 100 / 85 ))
kill -HUP "$daemon"
wait_log "memgov: -> " 30 || fail "no trim result within 30s of the kill"
result=$(grep -m1 -- "memgov: -> " "$log")
echo "$name: the trim right after its session was killed: ${result#*-> }"
[[ $result == *"over SQL"*freed* && $result != *failed* ]] || fail "the trim after the kill: $result"
for _ in $(seq 100); do
        (( $(grep -c "sql: a session kept open" "$log") >= 2 )) && break
        sleep 0.1
done
reopened=$(grep "sql: a session kept open" "$log" | sed -n 2p)
[[ -n $reopened && $reopened != *": id $kept_id on "* ]] || fail "no new session for the action: $(grep "kept open" "$log")"
echo "$name: ${reopened#*sql: }"
stop_daemon

# 3. No reply within sql.query-timeout (the server stopped for a while, as a swamped one answers
# nothing): the trim fails, and the session stays open, its reply read once it comes; the
# library alone would have closed it, and a server that answers nothing takes no new one.
start_daemon yes 64G stopped.log 1s
first_kept
# (No wait for the loadable function's 10 s: the server answers nothing, whatever it would.)
kill -STOP "$(db_pid)"
policy yes $(( $(db_rss) * 100 / 85 )) 1s
kill -HUP "$daemon"
wait_log "-> trim failed" 20 || { kill -CONT "$(db_pid)"; fail "no failed trim within 20s, the server stopped: $(grep -- "-> " "$log")"; }
sleep 1
kill -CONT "$(db_pid)"
result=$(grep -m1 -- "-> trim failed" "$log")
echo "$name: the trim, the server stopped: ${result#*-> }"
[[ $result == *"trim failed"*"no reply within sql.query-timeout 1s (the session is kept"* ]] ||
        fail "the trim on a stopped server: $result"
# The reply comes once the server runs again, and is read at the session's next use (the idle
# round, every 10 s): the same session, idle in the server, and no other opened.
for _ in $(seq 150); do
        [[ $(db_sql "SELECT COMMAND FROM information_schema.PROCESSLIST WHERE ID = $kept_id") == Sleep ]] && break
        sleep 0.2
done
[[ $(db_sql "SELECT COMMAND FROM information_schema.PROCESSLIST WHERE ID = $kept_id") == Sleep ]] ||
        fail "session $kept_id is not idle in the server: $(db_sql "SELECT ID, COMMAND, INFO FROM information_schema.PROCESSLIST")"
sleep 11 # past the next idle round, which reads the reply
"$memgov" status --socket "$dir/state/memgov.sock" --json >"$dir/status.json" || fail "memgov status failed"
python3 - "$dir/status.json" "$kept_id" <<'PY' || fail "memgov status: $(cat "$dir/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))["server"]
if s.get("sql_session") != "open" or s.get("sql_session_id") != int(sys.argv[2]):
    sys.exit(f"status server: session {s.get('sql_session')} id {s.get('sql_session_id')}, expected open id {sys.argv[2]}")
PY
(( $(grep -c "sql: a session kept open" "$log") == 1 )) || fail "the session was lost: $(grep "sql: " "$log")"
grep -q "sql: cannot keep" "$log" && fail "the session was said lost: $(grep "sql: " "$log")"
echo "$name: session $kept_id kept through the stop, open in memgov status"
stop_daemon

# 4. Not kept: the same trim needs a new connection, and the full server refuses it.
start_daemon no 64G nokeep.log
sleep 2
fill
policy no $(( $(db_rss) * 100 / 85 ))
kill -HUP "$daemon"
wait_log "-> trim failed" 30 || fail "no failed trim within 30s (keep-open = no)"
result=$(grep -m1 -- "-> trim failed" "$log")
echo "$name: the same without a kept session: ${result#*-> }"
[[ $result == *"trim failed"*"cannot connect"*"Too many connections"* ]] || fail "without a kept session: $result"
grep -q "session kept open" "$log" && fail "keep-open = no kept a session"
stop_daemon
empty
echo "$name: ok"
