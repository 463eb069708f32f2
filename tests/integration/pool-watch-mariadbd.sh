#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The buffer pool as the server keeps it between memgov's own steps, on a real mariadbd
# (Debian's package) started with its own shrinking on memory pressure on
# (innodb_buffer_pool_size_auto_min under the pool's size): the daemon, through the session it
# keeps open, says that the server shrinks its pool by itself and down to what; a shrink it did
# not make (here an administrator's SET GLOBAL, which is what the server's own looks like from
# outside) is logged with what it gave back and counted in memgov status; a growth back is said
# too, and not counted. Its pages in use and free pages, read on the same session for the ETA,
# are in the samples memgov records, as the server counts them.
#   pool-watch-mariadbd.sh MEMGOV
set -euo pipefail
memgov=$1
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "pool-watch-mariadbd: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
fail() { echo "pool-watch-mariadbd: FAIL: $*" >&2; [[ -s ${log:-} ]] && sed 's/^/  memgov: /' "$log" >&2; exit 1; }
M=$((1 << 20))

dir=$(mktemp -d /tmp/memgov-poolwatch-XXXXXX)
log=
daemon=
trap '[[ -n $daemon ]] && { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; }; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" --innodb-buffer-pool-size=64M --innodb-buffer-pool-size-auto-min=32M || exit $?
[[ $(mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size_auto_min") == $((32 * M)) ]] ||
        fail "this server has no innodb_buffer_pool_size_auto_min"

# A budget far above the server: nothing is done; the kept session watches.
cat >"$dir/policy.ini" <<EOF
[budget]
size = 64G
[sampling]
interval = 1s
[trim]
method = sql
EOF
mkdir -m 700 "$dir/state"
log=$dir/memgov.log
"$memgov" run --pid "$MARIADB_PID" -p "$dir/policy.ini" --socket "$dir/state/memgov.sock" --state-dir "$dir/state" \
        --record "$dir/trace.csv" >"$log" 2>&1 &
daemon=$!
wait_log() { # PATTERN SECONDS
        for _ in $(seq $(($2 * 10))); do
                grep -q -- "$1" "$log" && return 0
                kill -0 "$daemon" 2>/dev/null || fail "memgov exited"
                sleep 0.1
        done
        return 1
}
wait_log "pool: buffer pool 64M; the server shrinks it by itself on memory pressure, down to 32M" 30 ||
        fail "the server's own shrinking was not said"
echo "pool-watch-mariadbd: $(grep -m1 -o 'pool: buffer pool 64M;.*' "$log")"

# The pool's fill in the samples: the last recorded reading against the server's own count, the
# server idle (no page is read in between).
sleep 3
status_pages() { mariadb_sql "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '$1'"; }
page=$(mariadb_sql "SELECT @@GLOBAL.innodb_page_size")
want_in_use=$((($(status_pages INNODB_BUFFER_POOL_PAGES_TOTAL) - $(status_pages INNODB_BUFFER_POOL_PAGES_FREE)) * page))
want_room=$(($(status_pages INNODB_BUFFER_POOL_PAGES_FREE) * page))
python3 - "$dir/trace.csv" "$want_in_use" "$want_room" <<'PY' || fail "the pool's fill in the trace"
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")) if r.get("pool_read_us")]
if not rows:
    sys.exit("no sample carries the pool's fill")
last = rows[-1]
got = (int(last["pool_in_use"]), int(last["pool_room"]))
if got != (int(sys.argv[2]), int(sys.argv[3])):
    sys.exit(f"pool_in_use, pool_room {got}, the server says {sys.argv[2]}, {sys.argv[3]}")
print(f"pool-watch-mariadbd: the samples carry the pool's fill: {got[0]} in use, {got[1]} free, as the server counts")
PY

mariadb_sql "SET GLOBAL innodb_buffer_pool_size = $((48 * M))"
wait_log "pool: the buffer pool shrank without memgov: 64M -> 48M, 16M given back" 30 ||
        fail "the shrink memgov did not make was not seen within 30 s"
echo "pool-watch-mariadbd: $(grep -m1 -o 'pool: the buffer pool shrank without memgov.*' "$log")"
"$memgov" status --socket "$dir/state/memgov.sock" --json >"$dir/status.json" || fail "memgov status failed"
python3 - "$dir/status.json" <<'PY' || fail "memgov status: $(cat "$dir/status.json")"
import json, sys
b = json.load(open(sys.argv[1]))["server"]["buffer_pool"]
M = 1 << 20
want = {"size": 48 * M, "found": 64 * M, "server_shrinks_on_pressure": True, "auto_min": 32 * M,
        "shrunk_by_server": 16 * M, "shrinks_by_server": 1}
bad = {k: b.get(k) for k, v in want.items() if b.get(k) != v}
if bad:
    sys.exit(f"buffer_pool: {bad}, expected {want}")
# Its pages in use and free, as last read (the 64M pool's, or the 48M one's).
if not (b.get("in_use", 0) > 0 and b.get("free", 0) > 0 and b["in_use"] + b["free"] <= 64 * M):
    sys.exit(f"buffer_pool: in_use {b.get('in_use')}, free {b.get('free')}")
PY
line=$("$memgov" status --socket "$dir/state/memgov.sock" | grep '^  buffer pool') || fail "memgov status has no buffer pool line"
[[ $line == *"48M (64M when first read), pages "*" in use, "*" free; the server shrinks it on memory pressure, down to 32M; shrunk without memgov 1 time(s), 16M" ]] ||
        fail "memgov status: $line"
echo "pool-watch-mariadbd: memgov status: $line"

mariadb_sql "SET GLOBAL innodb_buffer_pool_size = $((64 * M))"
wait_log "pool: the buffer pool grew without memgov: 48M -> 64M" 30 || fail "the growth back was not seen within 30 s"
"$memgov" status --socket "$dir/state/memgov.sock" --json >"$dir/status.json" || fail "memgov status failed"
python3 -c 'import json, sys
b = json.load(open(sys.argv[1]))["server"]["buffer_pool"]
sys.exit(0 if b["size"] == 64 << 20 and b["shrunk_by_server"] == 16 << 20 else f"buffer_pool: {b}")' "$dir/status.json" ||
        fail "after the growth back"
echo "pool-watch-mariadbd: ok: the pool's fill in the samples, the server's own shrinking said, a shrink memgov did not make counted (16M), the growth back said"
