#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The running memgov measures where a real mariadbd's memory is (explain.every): memgov status
# shows the parts, which add up to the sample's total; sessions that fragment the heap show as
# the allocator's free memory and an allocator-retention finding; the metrics textfile has each
# part and the finding. Then, in a dry run, the allocator is not called, and the status says so.
#   explain-daemon.sh MEMGOV
set -euo pipefail
memgov=$1
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "explain-daemon: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
fail() { echo "explain-daemon: FAIL: $*" >&2; [[ -s ${log:-} ]] && sed 's/^/  memgov: /' "$log" >&2; exit 1; }

dir=$(mktemp -d /tmp/memgov-explain-XXXXXX)
log=
daemon=
stop_daemon() {
        [[ -n $daemon ]] || return 0
        kill "$daemon" 2>/dev/null || true
        wait "$daemon" 2>/dev/null || true
        daemon=
}
trap 'stop_daemon; mariadb_unfragment; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" || exit $?
mariadb_fragment 12 40

# A budget far above the server: nothing is done; the parts are measured every 10 s.
mkdir -m 700 "$dir/state"
printf '%s\n' '[budget]' 'size = 64G' '[sampling]' 'interval = 1s' '[metrics]' "textfile = $dir/state/metrics.prom" \
        '[explain]' 'every = 10s' >"$dir/policy.ini"

start_daemon() { # ARGS...
        log=$dir/memgov.log
        "$memgov" run --pid "$MARIADB_PID" -p "$dir/policy.ini" --socket "$dir/state/memgov.sock" \
                --state-dir "$dir/state" "$@" >"$log" 2>&1 &
        daemon=$!
        for _ in $(seq 300); do
                if "$memgov" status --socket "$dir/state/memgov.sock" --json >"$dir/status.json" 2>/dev/null &&
                        python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("memory") else 1)' \
                                "$dir/status.json"; then
                        return 0
                fi
                kill -0 "$daemon" 2>/dev/null || fail "memgov exited"
                sleep 0.1
        done
        fail "no memory parts in memgov status within 30 s"
}

start_daemon
python3 - "$dir/status.json" <<'PY' || fail "memgov status: $(cat "$dir/status.json")"
import json, sys
st = json.load(open(sys.argv[1]))
m = st["memory"]
parts = m["parts"]
if sum(parts.values()) != m["total"]:
    sys.exit(f"the parts {parts} add up to {sum(parts.values())}, not {m['total']}")
if m["total_source"] == "memory.current":
    want = st["sample"]["memory"]["current"]
else:
    want = st["sample"]["process"]["rss"]
if m["total"] != want:
    sys.exit(f"the total {m['total']} is not the sample's {m['total_source']} {want}")
if m.get("allocator", {}).get("source") != "mallinfo2":
    sys.exit(f"the allocator was not asked: {m.get('not_measured')}")
if parts.get("allocator_free", 0) < 100 << 20 or parts.get("sessions", 0) < 200 << 20:
    sys.exit(f"twelve sessions holding 20M and having freed 20M each: {parts}")
if "allocator-retention" not in [f["kind"] for f in m["findings"]]:
    sys.exit(f"no allocator-retention finding: {m['findings']}")
print("explain-daemon: ok: memgov status: " + ", ".join(f"{k} {v >> 20}M" for k, v in parts.items()) +
      f" = {m['total'] >> 20}M ({m['total_source']})")
PY
text=$("$memgov" status --socket "$dir/state/memgov.sock") || fail "memgov status failed"
line=$(grep '^  parts' <<<"$text") || fail "memgov status has no parts line: $text"
[[ $line == *"sessions "*"allocator free "* ]] || fail "memgov status: $line"
grep -q '^  finding       allocator-retention: its fix gives back' <<<"$text" ||
        fail "memgov status has no allocator-retention line: $text"
echo "explain-daemon: ok: $line"
for _ in $(seq 50); do
        grep -q memgov_server_memory_bytes "$dir/state/metrics.prom" 2>/dev/null && break
        sleep 0.1
done
grep -q '^memgov_server_memory_bytes{target="[^"]*",part="allocator_free"} [1-9]' "$dir/state/metrics.prom" ||
        fail "no allocator_free part in the metrics: $(grep memgov_server_memory "$dir/state/metrics.prom" || true)"
grep -q '^memgov_memory_finding{target="[^"]*",kind="allocator-retention"} 1$' "$dir/state/metrics.prom" ||
        fail "no allocator-retention finding in the metrics: $(grep memgov_memory_finding "$dir/state/metrics.prom" || true)"
echo "explain-daemon: ok: metrics: $(grep -c '^memgov_server_memory_bytes' "$dir/state/metrics.prom") parts, the finding"
stop_daemon

# A dry run changes nothing: the allocator is not called.
start_daemon --dry-run
python3 - "$dir/status.json" <<'PY' || fail "memgov status in a dry run: $(cat "$dir/status.json")"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
if "allocator" in m or "allocator_free" in m["parts"]:
    sys.exit("the allocator was asked in a dry run")
if not any("dry run" in n for n in m["not_measured"]):
    sys.exit(f"not said: {m['not_measured']}")
if sum(m["parts"].values()) != m["total"] or m["parts"]["sessions"] < 200 << 20:
    sys.exit(f"the parts: {m['parts']}")
PY
echo "explain-daemon: ok: a dry run: the allocator not called, said; the rest measured"
