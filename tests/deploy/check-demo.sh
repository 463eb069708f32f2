#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# memgov demo, as the README runs it: it must end with a summary that shows trims and a reset
# that gave memory back, no OOM kill, where the memory was with the heap fragmented (memgov
# explain: the sessions and the allocator's free memory among the parts), and a chart (a PNG of the expected size). With SERVER, the
# same with memgov demo --server SERVER (mysql, mariadb-11.8), and the summary must name it.
#   check-demo.sh MEMGOV [SERVER]
set -euo pipefail
memgov=${1:?}
server=${2:-}
[[ $(id -u) == 0 ]] || { echo "check-demo: SKIP: memgov demo needs root" >&2; exit 77; }
out=$(mktemp -d /var/tmp/memgov-demo-test.XXXXXX)
# Removed when the test passes; a demo that fails or is stopped by the test's timeout leaves its
# logs there.
echo "check-demo: the demo's logs in $out"
fail() {
        echo "check-demo: FAIL: $*" >&2
        cat "$out/summary.txt" >&2 || true
        # What memgov decided and what its actions said; the rest stays in the directory.
        grep -E '^memgov: (level|trim|reset|restart|effect|warning|error)|-> ' "$out/demo/memgov.log" >&2 || true
        exit 1
}

NO_COLOR=1 "$memgov" demo -o "$out/demo" ${server:+--server "$server"} >"$out/summary.txt" 2>&1 ||
        fail "memgov demo${server:+ --server $server} failed"
cat "$out/summary.txt"
case $server in
mysql) want="MySQL 9.7" ;;
mariadb-11.8) want="MariaDB 11.8" ;;
*) want="MariaDB 10.11" ;;
esac
grep -q "^memgov demo: $want" "$out/summary.txt" || fail "the summary does not name $want"
grep -Eq '^  trim +[1-9][0-9]* done.*[0-9.]+[KMG] given back' "$out/summary.txt" || fail "no trim gave memory back"
grep -Eq '^  reset +[1-9][0-9]* done.*[0-9.]+[KMG] given back' "$out/summary.txt" || fail "no reset gave memory back"
grep -Eq '^  OOM kills +0$' "$out/summary.txt" || fail "OOM kills"
grep -Eq '^  memory +of [0-9.]+[KMG]:.* sessions [0-9.]+[KMG].* allocator free [0-9.]+[KMG]' "$out/summary.txt" ||
        fail "no memgov explain parts with the heap fragmented"
python3 - "$out/demo/memgov-demo.png" <<'PY' || fail "the chart is not a 1280x800 PNG"
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1280, 800), (w, h)
PY
echo "check-demo: ok: $want: trims and a reset gave memory back, no OOM kill, explain's parts, a chart"
rm -rf "$out"
