#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A real mariadbd (Debian's package), started by the test: sessions fragment its heap and go
# away; memgov explain says how much a trim would give back, within 20% of what memgov trim
# (ptrace, then sql with the loadable function) then gives back, and the server keeps answering.
# Then any account calling the function in a loop: the server trims once per interval, not on
# every call. Last, a restart with a pre-flush that systemd refuses: the server keeps running,
# and keeps its innodb_max_dirty_pages_pct.
# With ALLOCATOR jemalloc, the server runs on Debian's libjemalloc2, preloaded (as Percona Server
# ships it; Percona's packages are not in Debian's repositories, so this stands in for them):
# memgov must find jemalloc in the server's maps and purge its arenas (mallctl), by both methods;
# the rest does not depend on the allocator and runs once, with glibc's.
#   trim-mariadbd.sh MEMGOV MEMGOV_UDF RESTART_REFUSED [glibc|jemalloc]
set -euo pipefail
memgov=$1
export MEMGOV_UDF=$2
restart_refused=$3
allocator=${4:-glibc}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "trim-mariadbd: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
# The SQL function's connection thread runs in its own arena: sessions holding their heaps
# keep the holes the trim can give back.
fail() { echo "trim-mariadbd: FAIL: $*" >&2; exit 1; }

dir=$(mktemp -d /tmp/memgov-mariadb-XXXXXX)
trap 'mariadb_unfragment; mariadb_stop; rm -rf "$dir"' EXIT
case $allocator in
glibc) want_function=malloc_trim ;;
jemalloc)
        jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
        [[ -e $jemalloc ]] || fail "$jemalloc is missing (libjemalloc2: scripts/setup-deps.sh --test)"
        MARIADB_WRAP=(env "LD_PRELOAD=$jemalloc")
        want_function=mallctl ;;
*) fail "unknown allocator $allocator (glibc or jemalloc)" ;;
esac
mariadb_start "$dir" || exit $?

for method in ptrace sql; do
        mariadb_fragment 12 40
        before=$(mariadb_rss)
        function=$want_function
        if [[ $method == sql ]]; then
                mariadb_sql "CREATE FUNCTION IF NOT EXISTS memgov_trim RETURNS INTEGER SONAME 'memgov_udf.so'"
                function="memgov_trim()" # which calls the allocator's trim it finds in the server
        fi
        if [[ $method == ptrace ]]; then
                # memgov explain first: what it says a trim gives back, within 20% of what it does.
                own=$(mariadb_sql "SELECT SUM(MEMORY_USED) FROM information_schema.PROCESSLIST")
                explained=$("$memgov" explain --pid "$MARIADB_PID" --json) || fail "explain: $explained"
                predicted=$("$here/integration/explain-check.py" trim-mariadbd "$allocator" "$own" <<<"$explained") ||
                        exit 1
        fi
        report=$("$memgov" trim --pid "$MARIADB_PID" --method "$method" --json) || fail "$method: $report"
        after=$(mariadb_rss)
        if [[ $method == ptrace ]]; then
                gave=$((before - after))
                (( predicted * 10 >= gave * 8 && predicted * 10 <= gave * 12 )) ||
                        fail "explain said a trim gives back $((predicted >> 20))M, the trim gave back $((gave >> 20))M"
                echo "trim-mariadbd: ok: explain said a trim gives back $((predicted >> 20))M, it gave back $((gave >> 20))M"
        fi
        echo "$report" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("trim-mariadbd: {method}: {allocator} {function}, thread {thread} ({syscall}), held {held_us} us, "
      "call {ms:.1f} ms, RSS {b}M -> {a}M".format(ms=r["call_us"] / 1000, b=r["rss_before"] >> 20,
                                                  a=r["rss_after"] >> 20, **r))
if (r["allocator"], r["function"]) != (sys.argv[1], sys.argv[2]):
    sys.exit("allocator %s, function %s: expected %s, %s" % (r["allocator"], r["function"], sys.argv[1], sys.argv[2]))
' "$allocator" "$function" || fail "$method: the allocator's trim was not called: $report"
        (( after < before )) || fail "$method: RSS did not fall ($before -> $after)"
        (( before - after > 32 * 1024 * 1024 )) || fail "$method: RSS fell by only $(( (before - after) >> 20 ))M"
        [[ $(mariadb_sql "SELECT 6 * 7") == 42 ]] || fail "$method: the server does not answer after the trim"
        mariadb_unfragment
        echo "trim-mariadbd: ok: $method: $allocator: RSS $(( before >> 20 ))M -> $(( after >> 20 ))M, the server answers"
done
[[ $allocator == glibc ]] || exit 0

# Any account may call the function: BENCHMARK(100000, ...) must not take every arena lock
# 100000 times. COUNT() counts the calls that trimmed (the others return NULL): the sql trim
# above ran a moment ago, so none or one of these does.
# (The rows come from the sequence engine, which needs a database; the account may only read it.)
mariadb_sql "CREATE DATABASE IF NOT EXISTS memgov_rows; CREATE USER IF NOT EXISTS 'anyone'@'localhost';
             GRANT SELECT ON memgov_rows.* TO 'anyone'@'localhost'"
start=$(date +%s%N)
trims=$(mariadb --no-defaults --protocol=socket -S "$(mariadb_client_socket)" -u anyone -D memgov_rows -N -B \
        -e "SELECT COUNT(memgov_trim()) FROM seq_1_to_100000") || fail "an account cannot call memgov_trim()"
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "trim-mariadbd: 100000 calls from an unprivileged account: $trims trims, $took_ms ms"
(( trims <= 1 )) || fail "100000 calls of memgov_trim() trimmed $trims times"
(( took_ms < 10000 )) || fail "100000 calls of memgov_trim() took $took_ms ms"
mariadb_sql "SELECT BENCHMARK(100000, memgov_trim())" >/dev/null || fail "BENCHMARK(100000, memgov_trim()) failed"
echo "trim-mariadbd: ok: memgov_trim() trims at most once per interval"
# The account's call just now: memgov's own sql trim within the interval trims nothing, and says
# so (not_done), rather than count a trim that freed nothing (which would mark the rung spent).
mariadb --no-defaults --protocol=socket -S "$(mariadb_client_socket)" -u anyone -N -B -e "SELECT memgov_trim()" >/dev/null
report=$("$memgov" trim --pid "$MARIADB_PID" --method sql --json) || fail "sql trim after an account's: $report"
echo "$report" | python3 -c 'import json, sys; r = json.load(sys.stdin); sys.exit(0 if r["ok"] and r["not_done"] and r["freed"] == 0 else 1)' ||
        fail "a sql trim within the interval of an account's was not said to be not done: $report"
line=$("$memgov" trim --pid "$MARIADB_PID" --method sql) || fail "sql trim (text): $line"
[[ $line == *"trimmed nothing: another trim ran in the server within its last 10 s"* ]] || fail "the text says: $line"
echo "trim-mariadbd: ok: a sql trim within 10 s of an account's: not done, not counted ($line)"

pct=$(mariadb_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
detail=$("$restart_refused" "$MARIADB_PID") || fail "restart: $detail"
echo "trim-mariadbd: refused restart: $detail"
after=$(mariadb_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
[[ $after == "$pct" ]] || fail "a refused restart left innodb_max_dirty_pages_pct at $after (was $pct)"
[[ $(mariadb_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer after the refused restart"
echo "trim-mariadbd: ok: a refused restart put innodb_max_dirty_pages_pct back to $pct"
