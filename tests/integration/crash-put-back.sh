#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What memgov changes on a real MariaDB outlives memgov's own death (SIGKILL: no way out):
#   1. the daemon lowers max_connections in a connection storm; it is SIGKILLed; the storm ends;
#      a new daemon finds the change in the state file and puts max_connections back as the first
#      one found it, once the server takes clients;
#   2. a buffer pool shrunk and a pre-flush's innodb_max_dirty_pages_pct of 0, left by a memgov
#      before (the state file as it writes it, for this very server process): put back too;
#      a change recorded on another server process is not (that one started at its
#      configuration), nor one someone changed since;
#   3. a shrunk buffer pool whose size cannot be read (memgov's SQL login refused) is kept in the
#      state file, "not put back yet", and put back once it can be.
#   crash-put-back.sh MEMGOV MEMGOV_CONN_STORM
set -euo pipefail
memgov=$1
conn_storm=$2
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
name=crash-put-back
[[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; [[ -s ${log:-} ]] && sed 's/^/  memgov: /' "$log" >&2; exit 1; }
ok() { echo "$name: ok: $*"; }

dir=$(mktemp -d /tmp/memgov-crash-XXXXXX)
daemon= STORM_PID= log=
stop_storm() {
        [[ -n $STORM_PID ]] || return 0
        echo quit >&"${STORM[1]}" 2>/dev/null || true
        wait "$STORM_PID" 2>/dev/null || true
        STORM_PID=
}
trap 'stop_storm; [[ -n $daemon ]] && kill -9 "$daemon" 2>/dev/null; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" --max-connections=151 --innodb-buffer-pool-size=256M
mariadb_sql "CREATE USER storm@localhost IDENTIFIED BY 'memgov-test-password'"
mkdir -m 700 "$dir/state"
max_connections() { mariadb_sql "SELECT @@GLOBAL.max_connections"; }

# The budget twice the server's RSS: half of it used, over admit.at; nothing but admission on.
budget=$(( $(mariadb_rss) * 2 ))
cat >"$dir/policy.ini" <<EOF
[budget]
size = $budget
[sampling]
interval = 1s
fast-interval = 1s
[governor]
settle = 1s
[trim]
enabled = no
[throttle]
enabled = no
[admit]
at = 10%
cooldown = 5s
min-rise = 10
rise-window = 30s
fit = no
restore-after = 1h
max-raise = 0%
[reset]
enabled = no
[pool]
enabled = no
[restart]
enabled = no
EOF
start_daemon() { # LOG [POLICY]
        log=$dir/$1
        "$memgov" run --pid "$MARIADB_PID" -p "${2:-$dir/policy.ini}" --socket "$dir/state/memgov.sock" \
                --state-dir "$dir/state" >"$log" 2>&1 &
        daemon=$!
}
wait_log() { # PATTERN SECONDS
        for _ in $(seq $(($2 * 10))); do
                grep -q -- "$1" "$log" && return 0
                kill -0 "$daemon" 2>/dev/null || fail "memgov exited"
                sleep 0.1
        done
        fail "no '$1' in memgov's log within $2 s"
}
state_file() { ls "$dir"/state/*.state 2>/dev/null | head -1; }

# 1. Lowered by the daemon, the daemon killed.
found=$(max_connections)
start_daemon first.log
wait_log "sql: a session kept open" 30
sleep 3 # a calm baseline: the fewest connections within the rise window
coproc STORM { "$conn_storm" "$(mariadb_client_socket)" storm memgov-test-password 60 2>&1; }
STORM_PID=$!
IFS= read -r -t 60 opened <&"${STORM[0]}" || fail "the storm did not open its sessions"
[[ $opened == "open 60" ]] || fail "the storm: $opened"
wait_log "-> lowered max_connections" 60
lowered=$(max_connections)
(( lowered < found )) || fail "max_connections is $lowered, not lowered from $found"
kill -9 "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=
python3 - "$(state_file)" "$found" "$lowered" "$MARIADB_PID" <<'PY' || fail "the state file: $(cat "$(state_file)")"
import json, sys
c = json.load(open(sys.argv[1]))["changes"]["max_connections"]
sys.exit(0 if (c["found"], c["set"], c["pid"]) == (int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])) else 1)
PY
ok "max_connections $found -> $lowered by the daemon, SIGKILLed: the state file holds the change"
stop_storm

# The server calm, a new daemon: the original value back.
start_daemon second.log
wait_log "put max_connections back $lowered -> $found" 30
[[ $(max_connections) == "$found" ]] || fail "max_connections is $(max_connections), not $found"
grep -q '"max_connections"' "$(state_file)" && fail "the change is still in the state file: $(cat "$(state_file)")"
ok "a new daemon put max_connections back $lowered -> $found and forgot the change"
kill "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=

# 2. The buffer pool and the pre-flush's setting, as a memgov before left them; and a change of
# another server process.
pct_found=$(mariadb_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
pool_found=$(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size")
mariadb_sql "SET GLOBAL innodb_buffer_pool_size = 134217728"
for _ in $(seq 100); do
        [[ $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size") == 134217728 ]] && break
        sleep 0.1
done
pool_set=$(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size")
mariadb_sql "SET GLOBAL innodb_max_dirty_pages_pct = 0"
starttime=$(awk '{ print $22 }' "/proc/$MARIADB_PID/stat")
python3 - "$(state_file)" "$MARIADB_PID" "$starttime" "$pool_found" "$pool_set" "$pct_found" <<'PY'
import json, sys
path, pid, st, pool_found, pool_set, pct = sys.argv[1:]
s = json.load(open(path))
s["changes"] = {
    "innodb_buffer_pool_size": {"pid": int(pid), "starttime": int(st), "found": int(pool_found), "set": int(pool_set)},
    "innodb_max_dirty_pages_pct": {"pid": int(pid), "starttime": int(st), "found": round(float(pct) * 100), "set": 0},
    "max_connections": {"pid": int(pid) + 100000, "starttime": 1, "found": 999, "set": 151},
}
json.dump(s, open(path, "w"))
PY
start_daemon third.log
wait_log "innodb_max_dirty_pages_pct put back" 30
wait_log "buffer pool: grew" 60
wait_log "max_connections: changed by the memgov before on server process" 30
[[ $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size") == "$pool_found" ]] ||
        fail "innodb_buffer_pool_size is $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size"), not $pool_found"
[[ $(mariadb_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct") == "$pct_found" ]] ||
        fail "innodb_max_dirty_pages_pct is $(mariadb_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct"), not $pct_found"
[[ $(max_connections) == 151 ]] || fail "another process's change was applied: max_connections $(max_connections)"
python3 -c 'import json, sys; sys.exit(1 if json.load(open(sys.argv[1]))["changes"] else 0)' "$(state_file)" ||
        fail "changes left in the state file: $(cat "$(state_file)")"
ok "left by a memgov before: the buffer pool $pool_set -> $pool_found and innodb_max_dirty_pages_pct 0 -> $pct_found" \
   "put back; another server process's change forgotten, not applied"
kill "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=

# 3. The size not read: not taken for "changed since".
shrink_pool() {
        mariadb_sql "SET GLOBAL innodb_buffer_pool_size = 134217728"
        for _ in $(seq 100); do
                [[ $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size") == 134217728 ]] && return 0
                sleep 0.1
        done
        fail "the buffer pool not shrunk to 128M"
}
shrink_pool
python3 - "$(state_file)" "$MARIADB_PID" "$starttime" "$pool_found" <<'PY'
import json, sys
path, pid, st, pool_found = sys.argv[1:]
s = json.load(open(path))
s["changes"] = {"innodb_buffer_pool_size": {"pid": int(pid), "starttime": int(st), "found": int(pool_found),
                                            "set": 134217728}}
json.dump(s, open(path, "w"))
PY
{ cat "$dir/policy.ini"; printf '[sql]\nuser = memgov-nobody\n'; } >"$dir/refused.ini"
start_daemon fourth.log "$dir/refused.ini"
wait_log "innodb_buffer_pool_size left by the memgov before at 128M (it found .*): not put back yet" 30
kill "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=
grep -q '"innodb_buffer_pool_size"' "$(state_file)" || fail "the change is forgotten: $(cat "$(state_file)")"
[[ $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size") == 134217728 ]] || fail "the pool changed meanwhile"
ok "the pool's size not read (login refused): $(grep -o 'not put back yet: .*' "$log" | head -1 | cut -c1-120); kept"
start_daemon fifth.log
wait_log "buffer pool: grew" 60
[[ $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size") == "$pool_found" ]] ||
        fail "innodb_buffer_pool_size is $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size"), not $pool_found"
ok "put back 128M -> $pool_found by the next daemon that could read it"
kill "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=
echo "$name: PASS"
