#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A real mariadbd (Debian's package), started by the test: sessions fragment its heap and go
# away; memgov trim (ptrace, then sql with the loadable function) gives memory back, and the
# server keeps answering.
#   trim-mariadbd.sh MEMGOV MEMGOV_UDF
set -euo pipefail
memgov=$1
export MEMGOV_UDF=$2
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "trim-mariadbd: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
# The SQL function's connection thread runs in its own arena: sessions holding their heaps
# keep the holes the trim can give back.
fail() { echo "trim-mariadbd: FAIL: $*" >&2; exit 1; }

dir=$(mktemp -d /tmp/memgov-mariadb-XXXXXX)
trap 'mariadb_unfragment; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" || exit $?

for method in ptrace sql; do
        mariadb_fragment 12 40
        before=$(mariadb_rss)
        if [[ $method == sql ]]; then
                mariadb_sql "CREATE FUNCTION IF NOT EXISTS memgov_trim RETURNS INTEGER SONAME 'memgov_udf.so'"
        fi
        report=$("$memgov" trim --pid "$MARIADB_PID" --method "$method" --json) || fail "$method: $report"
        after=$(mariadb_rss)
        echo "$report" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("trim-mariadbd: {method}: {allocator} {function}, thread {thread} ({syscall}), held {held_us} us, "
      "call {ms:.1f} ms, RSS {b}M -> {a}M".format(ms=r["call_us"] / 1000, b=r["rss_before"] >> 20,
                                                  a=r["rss_after"] >> 20, **r))'
        (( after < before )) || fail "$method: RSS did not fall ($before -> $after)"
        (( before - after > 32 * 1024 * 1024 )) || fail "$method: RSS fell by only $(( (before - after) >> 20 ))M"
        [[ $(mariadb_sql "SELECT 6 * 7") == 42 ]] || fail "$method: the server does not answer after the trim"
        mariadb_unfragment
        echo "trim-mariadbd: ok: $method: RSS $(( before >> 20 ))M -> $(( after >> 20 ))M, the server answers"
done
