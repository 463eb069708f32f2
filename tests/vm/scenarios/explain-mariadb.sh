#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# memgov explain closes the loop on Debian's mariadb.service under systemd as PID 1, on glibc:
# sessions fragment the heap (each holds 20 variables of 1 MB and has freed 20); explain splits
# memory.current into parts that add up to it, finds allocator retention and prints a drop-in;
# the test applies the drop-in exactly as printed, restarts the server and fragments its heap the
# same way: on jemalloc the retention is gone (the allocator's free memory a fifth or less of
# glibc's), and memory.current is lower by at least 70% of what explain said the fix gives back.
#   tests/vm/run-vm.sh --systemd --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/explain-mariadb.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 && ${MEMGOV_VM_MODE:-} == systemd ]] ||
        { echo "explain-mariadb: SKIP: runs inside the VM in systemd mode (tests/vm/run-vm.sh --systemd)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
disk=${MEMGOV_DISK:?run with --disk}
unit=mariadb.service
cg=/sys/fs/cgroup/system.slice/$unit
fail() {
        echo "explain-mariadb: FAIL: $*" >&2
        journalctl -b --no-pager -u $unit | tail -20 >&2 || true
        exit 1
}
ok() { echo "explain-mariadb: ok: $*"; }
sql() { mariadb --no-defaults -S /run/mysqld/mysqld.sock -u root -N -B -e "$1"; }

mkdir -p "$disk/mysql" /etc/mysql/mariadb.conf.d
chown mysql:mysql "$disk/mysql"
printf '%s\n' '[mariadbd]' "datadir = $disk/mysql" 'innodb_buffer_pool_size = 16M' 'innodb_log_file_size = 16M' \
        'skip-networking' >/etc/mysql/mariadb.conf.d/99-memgov-test.cnf
mariadb-install-db --user=mysql --datadir="$disk/mysql" --auth-root-authentication-method=socket --skip-test-db \
        >"$results/install-db.log" 2>&1 || fail "mariadb-install-db: $(tail -3 "$results/install-db.log")"
mkdir -p /etc/systemd/system/$unit.d
# A limit, and without Debian's post-start script (table checks that only cost time here).
printf '[Service]\nMemoryMax=640M\nExecStartPost=\n' >/etc/systemd/system/$unit.d/test.conf
systemctl daemon-reload
systemctl start $unit || fail "mariadb.service did not start"

frag_pids=()
fragment() {
        local set="" unset="" j
        for j in $(seq 40); do
                set+="SET @v$j = REPEAT('m', 1000000 + $j);"
                (( j % 2 == 0 )) && unset+="SET @v$j = NULL;"
        done
        frag_pids=()
        for _ in $(seq 10); do
                sql "$set $unset SELECT SLEEP(600);" >/dev/null 2>&1 &
                frag_pids+=($!)
        done
        for _ in $(seq 600); do
                [[ $(sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'") -ge 10 ]] &&
                        return 0
                sleep 0.2
        done
        fail "the fragmenting sessions did not all start"
}
unfragment() {
        sql "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'" |
                while read -r id; do sql "KILL $id" || true; done
        wait "${frag_pids[@]}" 2>/dev/null || true
}

# explain --json on stdin: the parts add up; prints "allocator free unaccounted overcounted total".
check_parts() {
        python3 -c '
import json, sys
e = json.load(sys.stdin)
p = e["parts"]
if e["total_source"] != "memory.current" or sum(p.values()) != e["total"]:
    sys.exit(f"the parts {p} do not add up to memory.current {e}")
t = e["total"]
print(e.get("allocator", {}).get("allocator", "none"), p.get("allocator_free", 0), p["unaccounted"],
      e["overcounted"], t)
print("explain-mariadb: " + ", ".join(f"{k} {v >> 20}M" for k, v in p.items()) + f" = {t >> 20}M", file=sys.stderr)'
}

fragment
"$build/memgov" explain --unit $unit --json >"$results/before.json" || fail "explain: $(cat "$results/before.json")"
read -r allocator free unacc over total < <(check_parts <"$results/before.json") || fail "explain before the fix"
current=$(cat "$cg/memory.current")
[[ $allocator == glibc ]] || fail "the server's allocator is $allocator"
# The measure itself: what no part claims, and what the parts claimed beyond what is there.
(( (unacc + over) * 100 <= total * 5 )) ||
        fail "$(( unacc >> 20 ))M unaccounted and $(( over >> 20 ))M overcounted of $(( total >> 20 ))M: more than 5%"
ok "glibc: the parts add up to memory.current $(( total >> 20 ))M (now $(( current >> 20 ))M);" \
   "$(( unacc >> 20 ))M unaccounted, $(( over >> 20 ))M overcounted; allocator free $(( free >> 20 ))M"

# The finding and its drop-in, applied exactly as printed.
python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))
found = [f for f in e["findings"] if f["kind"] == "allocator-retention"]
if not found:
    sys.exit("no allocator-retention finding: " + json.dumps(e["findings"]))
fix = "\n".join(found[0]["fix"])
print(found[0]["gives_back"])
lines = [l.strip() for l in fix.splitlines() if l.strip() == "[Service]" or l.strip().startswith("Environment=")]
if "systemctl edit mariadb.service" not in fix or not lines or lines[0] != "[Service]" or len(lines) < 2:
    sys.exit("no drop-in for mariadb.service in " + repr(fix))
open(sys.argv[2], "w").write("\n".join(lines) + "\n")' "$results/before.json" /etc/systemd/system/$unit.d/memgov-explain.conf \
        >"$results/predicted" || fail "the fix"
predicted=$(cat "$results/predicted")
cp /etc/systemd/system/$unit.d/memgov-explain.conf "$results/"
ok "allocator-retention, gives back $(( predicted >> 20 ))M; drop-in: $(tr '\n' ' ' </etc/systemd/system/$unit.d/memgov-explain.conf)"
unfragment
systemctl daemon-reload
systemctl restart $unit || fail "mariadb.service did not restart with the drop-in"
grep -q libjemalloc "/proc/$(systemctl show -P MainPID $unit)/maps" || fail "the server does not map jemalloc after the fix"

fragment
# jemalloc's background thread purges what stayed dirty for dirty_decay_ms (5 s), then muzzy.
sleep 15
"$build/memgov" explain --unit $unit --json >"$results/after.json" || fail "explain after: $(cat "$results/after.json")"
read -r allocator2 free2 _ _ total2 < <(check_parts <"$results/after.json") || fail "explain after the fix"
unfragment
[[ $allocator2 == jemalloc ]] || fail "the allocator after the fix is $allocator2"
(( free2 * 5 <= free )) || fail "jemalloc holds $(( free2 >> 20 ))M free, glibc held $(( free >> 20 ))M"
# jemalloc's own overhead (its metadata, its size classes) takes part of what glibc held free.
# Seen: 478M -> 314M, 163M of the 200M predicted (82%), the rest in jemalloc's overhead.
(( total - total2 >= predicted * 7 / 10 )) ||
        fail "memory.current $(( total >> 20 ))M -> $(( total2 >> 20 ))M: less than 70% of the $(( predicted >> 20 ))M predicted"
ok "after the fix, the same sessions: memory.current $(( total >> 20 ))M -> $(( total2 >> 20 ))M" \
   "($(( (total - total2) >> 20 ))M, predicted $(( predicted >> 20 ))M); allocator free $(( free >> 20 ))M -> $(( free2 >> 20 ))M"
systemctl stop $unit
