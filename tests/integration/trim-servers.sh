#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A real server of another flavour than the host's MariaDB, from its Debian chroot
# (scripts/provision-servers.sh builds it, or reuses the cached one): Oracle MySQL 9.7, whose
# mysqld links tcmalloc, or MariaDB 11.8, on glibc's malloc. It runs chrooted in a mount
# namespace of its own, as a server in another container does: memgov reaches its files and its
# socket through /proc/PID/root.
# - memgov sees the allocator the maps show, and names the call it will make;
# - sessions fragment the heap and go away; memgov trim, with no more capabilities than
#   memgov@.service has, makes that allocator's own call (tcmalloc's
#   MallocExtension_ReleaseFreeMemory, glibc's malloc_trim) and the RSS falls; the server answers;
# - without memgov's loadable function, the sql method says that it is not installed; with it
#   (CREATE FUNCTION ... SONAME on the server's UDF interface), the sql method trims through it:
#   the function makes the same allocator's call in the server's own thread;
# - a restart that systemd refuses pre-flushes over the server's socket, found through its root,
#   and puts innodb_max_dirty_pages_pct back;
# - the server shuts down by its own shutdown (SQL SHUTDOWN), completely.
#   trim-servers.sh FLAVOUR MEMGOV RESTART_REFUSED UDF
set -euo pipefail
flavour=$1
memgov=$2
restart_refused=$3
export SERVER_UDF=$4
here=$(cd "$(dirname "$0")/.." && pwd)
name=trim-$flavour
# shellcheck source=../lib/servers.sh
. "$here/lib/servers.sh"
[[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root (chroot, mount namespaces, debootstrap)" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
mib() { echo "$(( $1 >> 20 ))M"; }

case $flavour in
mysql-9.7) comm=mysqld version=9.7. allocator=tcmalloc function=MallocExtension_ReleaseFreeMemory ;;
mariadb-11.8) comm=mariadbd version=11.8. allocator=glibc function=malloc_trim ;;
*) fail "unknown flavour $flavour" ;;
esac

# memgov@.service's capabilities, and no others.
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$here/../systemd/memgov@.service.in")
[[ -n $caps ]] || fail "no CapabilityBoundingSet in systemd/memgov@.service.in"
bounding=-all
for c in $caps; do
        c=${c#CAP_}
        bounding+=",+${c,,}"
done
as_unit() { setpriv --bounding-set="$bounding" --inh-caps=-all -- "$@"; }

server_provision "$flavour"
dir=$(mktemp -d /tmp/memgov-servers-XXXXXX)
trap 'server_unfragment; server_stop; rm -rf "$dir"' EXIT
start=$(date +%s%N)
server_start "$dir" || exit $?
got=$(server_sql "SELECT VERSION()")
echo "$name: $comm $got ready in $(( ($(date +%s%N) - start) / 1000000 )) ms, pid $SERVER_PID," \
     "root $(readlink "/proc/$SERVER_PID/root"), socket $(server_host_socket)"
[[ $got == "$version"* ]] || fail "the server is $got, not $version*"
[[ $(cat "/proc/$SERVER_PID/comm") == "$comm" ]] || fail "the server's process is $(cat "/proc/$SERVER_PID/comm"), not $comm"

# What the maps show, read here, against what memgov reads in them.
maps=$(awk '$6 ~ /\/lib(tc|je)malloc[^\/]*\.so/ {print $6}' "/proc/$SERVER_PID/maps" | sort -u)
case $allocator in
tcmalloc) [[ $maps == */libtcmalloc.so.4* ]] || fail "mysqld maps no libtcmalloc.so.4: ${maps:-no allocator library}" ;;
glibc) [[ -z $maps ]] || fail "mariadbd maps $maps" ;;
esac
plan=$(as_unit "$memgov" trim --pid "$SERVER_PID" --method ptrace --dry-run --json) ||
        fail "dry run with memgov@.service's capabilities: $(tr -d '\n' <<<"$plan")"
read -r a f < <(python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["allocator"], r["function"])' <<<"$plan")
[[ $a == "$allocator" && $f == "$function" ]] || fail "memgov sees allocator $a and would call $f (expected $allocator $function)"
echo "$name: ok: allocator $a (maps: ${maps:-glibc only}), memgov would call $f"

status=$("$memgov" status --pid "$SERVER_PID" --json 2>/dev/null) || fail "memgov status --pid $SERVER_PID failed"
desc=$(python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["target"]["description"], d["sample"]["process"]["rss"])' <<<"$status")
[[ $desc == "$comm pid $SERVER_PID "* ]] || fail "memgov status sees: $desc"
echo "$name: ok: memgov status: ${desc% *}, RSS $(mib "${desc##* }")"

idle=$(server_rss)
server_fragment 12 40
# memgov explain, with the unit's capabilities: the parts add up to the resident set (no cgroup
# v2 here), the sessions' part is what the server says its sessions hold, and what it says a
# trim gives back is within 20% of what the trim below gives back.
case $flavour in
mysql-9.7) own="SELECT SUM(TOTAL_MEMORY) FROM performance_schema.threads WHERE PROCESSLIST_ID IS NOT NULL" ;;
*) own="SELECT SUM(MEMORY_USED) FROM information_schema.PROCESSLIST" ;;
esac
server_own=$(server_sql "$own")
explained=$(as_unit "$memgov" explain --pid "$SERVER_PID" --json) || fail "explain: $(tr -d '\n' <<<"$explained")"
predicted=$("$here/integration/explain-check.py" "$name" "$allocator" "$server_own" <<<"$explained") || exit 1
before=$(server_rss)
report=$(as_unit "$memgov" trim --pid "$SERVER_PID" --method ptrace --json) || fail "trim: $(tr -d '\n' <<<"$report")"
after=$(server_rss)
python3 -c '
import json, sys
r = json.load(sys.stdin)
print("{name}: {allocator} {function} in thread {thread} ({syscall}): in {took_us} us (finding the function "
      "{planning_us} us, {threads_tried} thread(s) tried), held {held_us} us, call {ms:.1f} ms, "
      "RSS {b}M -> {a}M, gave back {f}M".format(name=sys.argv[1], ms=r["call_us"] / 1000, b=r["rss_before"] >> 20,
                                                a=r["rss_after"] >> 20, f=r["freed"] >> 20, **r))
if not r["completed"] or r["held_us"] <= 0 or r["allocator"] != sys.argv[2] or r["function"] != sys.argv[3]:
    sys.exit(f"{sys.argv[1]}: FAIL: the call did not complete as planned: {r}")
# The whole trim: its planning, the thread held and the call within it.
if r["threads_tried"] < 1 or not 0 < r["planning_us"] < r["took_us"] or r["took_us"] < r["held_us"] + r["call_us"]:
    sys.exit(f"{sys.argv[1]}: FAIL: the timings of the trim do not add up: {r}")' "$name" "$allocator" "$function" <<<"$report" ||
        exit 1
(( after < before )) || fail "RSS did not fall ($before -> $after)"
(( before - after > 32 * 1024 * 1024 )) || fail "RSS fell by only $(mib $((before - after)))"
gave=$((before - after))
(( predicted * 10 >= gave * 8 && predicted * 10 <= gave * 12 )) ||
        fail "explain said a trim gives back $(mib "$predicted"), the trim gave back $(mib "$gave")"
echo "$name: ok: explain said a trim gives back $(mib "$predicted"), it gave back $(mib "$gave")"
[[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer after the trim"
server_unfragment
echo "$name: ok: RSS idle $(mib "$idle"), fragmented $(mib "$before"), trimmed $(mib "$after"):" \
     "$(mib $((before - after))) given back, the server answers"

# Without the loadable function, the sql method says so (MySQL answers a call of a function it
# does not know with "No database selected").
if out=$("$memgov" trim --pid "$SERVER_PID" --method sql 2>&1); then
        fail "trim --method sql without memgov_trim() succeeded: $out"
fi
[[ $out == *"memgov_trim() is not installed in the server"* ]] || fail "trim --method sql without the function: $out"
echo "$name: ok: without the function: ${out#*: }"

# With it: the same fragmentation, trimmed by the function in the session's own thread.
server_sql "CREATE FUNCTION memgov_trim RETURNS INTEGER SONAME 'memgov_udf.so'"
server_fragment 12 40
before=$(server_rss)
out=$("$memgov" trim --pid "$SERVER_PID" --method sql 2>&1) || fail "trim --method sql with memgov_trim(): $out"
after=$(server_rss)
echo "$name: the loadable function: ${out#memgov: }"
[[ $out == *"memgov_trim() over SQL"*freed* ]] || fail "trim --method sql: $out"
(( before - after > 32 * 1024 * 1024 )) || fail "the function gave back only $(mib $((before - after))) (RSS $(mib "$before") -> $(mib "$after"))"
[[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer after the function's trim"
server_unfragment
echo "$name: ok: memgov_trim() over SQL: RSS $(mib "$before") -> $(mib "$after")"

pct=$(server_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
detail=$("$restart_refused" "$SERVER_PID") || fail "restart: $detail"
echo "$name: refused restart: $detail"
[[ $detail == *"put back to"* ]] || fail "the pre-flush did not reach the server over its socket: $detail"
[[ $(server_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct") == "$pct" ]] ||
        fail "a refused restart left innodb_max_dirty_pages_pct at $(server_sql "SELECT @@GLOBAL.innodb_max_dirty_pages_pct") (was $pct)"
echo "$name: ok: the pre-flush found the socket through /proc/$SERVER_PID/root; innodb_max_dirty_pages_pct back to $pct"

start=$(date +%s%N)
server_stop
took=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $SERVER_STOPPED_BY == shutdown ]] || fail "the server did not stop by its own shutdown ($SERVER_STOPPED_BY)"
grep -q 'Shutdown complete' "$dir/error.log" || fail "no 'Shutdown complete' in the server's log: $(tail -3 "$dir/error.log")"
echo "$name: ok: SQL SHUTDOWN, complete in $took ms"
