#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# memgov@.service, as installed, governing a systemd-managed server of another flavour that runs
# from its Debian chroot (RootDirectory=): mysql.service for Oracle MySQL 9.7, mariadb-11.8.service
# for MariaDB 11.8, under systemd as PID 1. The server's drop-in (the shipped example) pulls the
# governor in; it finds the server's socket in the server's root (/proc/PID/root), trims it with
# the server's own allocator's call (tcmalloc's release in mysqld, glibc's trim in mariadbd),
# lowers memory.high through SetUnitProperties, ends a session over SQL, and stops growth only a
# restart stops with a graceful restart through RestartUnit before the OOM point; memory.max is
# put back. One flavour after the other, in one boot of the VM.
#   tests/vm/run-vm.sh --systemd --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/systemd-servers.sh FLAVOUR...
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 && ${MEMGOV_VM_MODE:-} == systemd ]] ||
        { echo "systemd-servers: SKIP: runs inside the VM in systemd mode (tests/vm/run-vm.sh --systemd)" >&2; exit 77; }
(( $# )) || { echo "usage: systemd-servers.sh FLAVOUR..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/../.." && pwd)
src=$(cd "$here/.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
disk=${MEMGOV_DISK:?run with --disk}
# shellcheck source=../../lib/servers.sh
. "$here/lib/servers.sh"
M=$((1 << 20))

# The governor, as meson installs it (the guest's root file system is a throwaway overlay).
bin=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$build/systemd/memgov@.service")
install -D -m 0755 "$build/memgov" "$bin"
install -m 0644 "$build/systemd/memgov@.service" /etc/systemd/system/memgov@.service
mkdir -p /etc/memgov

run_flavour() { # FLAVOUR
        local flavour=$1 unit gov args max out=$results/$1 dir=$disk/$1
        case $flavour in
        mysql-9.7) unit=mysql.service max=$((1000 * M)) ;;     # idle mysqld: some 490M here
        mariadb-11.8) unit=mariadb-11.8.service max=$((400 * M)) ;; # idle mariadbd: some 100M
        *) echo "systemd-servers: unknown flavour $flavour" >&2; exit 2 ;;
        esac
        gov=memgov@${unit%.service}.service
        local name=systemd-servers-$flavour
        fail() {
                echo "$name: FAIL: $*" >&2
                journalctl -b --no-pager -u "$gov" | tail -40 >&2 || true
                journalctl -b --no-pager -u "$unit" | tail -20 >&2 || true
                exit 1
        }
        ok() { echo "$name: ok: $*"; }
        mkdir -p "$out"
        server_provision "$flavour"
        # The data directory on the test disk, from the chroot's template; the server sees it at
        # /srv/memgov, its socket at /srv/memgov/run/mysqld.sock.
        mkdir -p "$dir/run"
        cp -a "$SERVER_ROOT$SERVER_TEMPLATE" "$dir/data"
        chown -R "$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$SERVER_ROOT/etc/passwd")" "$dir"
        args="--no-defaults --user=mysql --datadir=/srv/memgov/data --socket=/srv/memgov/run/mysqld.sock"
        args+=" --pid-file=/srv/memgov/run/mysqld.pid --skip-networking --log-error=/srv/memgov/error.log"
        args+=" --innodb-buffer-pool-size=16M --max-connections=200"
        [[ $flavour == mysql-* ]] && args+=" --mysqlx=OFF --secure-file-priv=NULL"
        # The server's unit: its own root, the data directory bound into it; the server drops to
        # the chroot's mysql account itself (--user), as it does when started as root.
        cat >"/etc/systemd/system/$unit" <<UNIT
[Unit]
Description=$flavour from its chroot
[Service]
Type=exec
RootDirectory=$SERVER_ROOT
MountAPIVFS=yes
PrivateTmp=yes
BindPaths=$dir:/srv/memgov
ExecStart=$SERVER_BIN $args
TimeoutStopSec=120
UNIT
        mkdir -p "/etc/systemd/system/$unit.d"
        sed "s/^MemoryMax=.*/MemoryMax=$max/" "$src/systemd/server-memory.conf" >"/etc/systemd/system/$unit.d/memgov.conf"
        install -m 0644 "$here/vm/policies/systemd.ini" "/etc/memgov/${unit%.service}.ini"
        sed -i '/^\[metrics\]/,$d' "/etc/memgov/${unit%.service}.ini" # no port shared by two
        "$build/memgov" check "/etc/memgov/${unit%.service}.ini" || fail "the policy does not check"
        systemctl daemon-reload

        local t0 t1
        t0=$(date +%s)
        systemctl start "$unit" || fail "$unit did not start"
        SERVER_PID=$(systemctl show -P MainPID "$unit")
        SERVER_SOCKET=/srv/memgov/run/mysqld.sock
        # memgov starts beside it (After= the server, pulled in by Wants=) and sees it start: a
        # steep rise while it listens on nothing yet, which memgov leaves alone.
        for _ in $(seq 900); do
                server_sql "SELECT 1" >/dev/null 2>&1 && break
                [[ $(systemctl show -P MainPID "$unit") == "$SERVER_PID" ]] ||
                        fail "the server was restarted while it was starting (MainPID $SERVER_PID -> $(systemctl show -P MainPID "$unit"))"
                sleep 0.2
        done
        server_sql "SELECT 1" >/dev/null || fail "the server does not answer"
        t1=$(date +%s)
        # (Type=notify: active once memgov is up, some seconds of the emulated CPU beside another VM)
        for _ in $(seq 300); do systemctl is-active -q "$gov" && break; sleep 0.2; done
        systemctl is-active -q "$gov" ||
                fail "$gov was not pulled in by Wants=memgov@%N.service (it is $(systemctl show -P ActiveState "$gov"))"
        ok "$unit ($(server_sql "SELECT VERSION()"), RootDirectory=$SERVER_ROOT) answered $((t1 - t0))s after start and pulled in $gov"
        local status
        for _ in $(seq 100); do
                status=$(systemctl show -P StatusText "$gov")
                [[ $status == *"level "* ]] && break
                sleep 0.2
        done
        [[ $status == *"level "* ]] || fail "StatusText is '$status'"
        local ready=""
        for _ in $(seq 150); do
                ready=$(journalctl -b --no-pager -u "$gov" | grep -o 'the server accepts clients now.*' | head -1) || true
                [[ -n $ready ]] && break
                sleep 0.2
        done
        [[ -n $ready ]] || fail "memgov did not see the server start (no 'the server accepts clients now')"
        # Until then: the ladder at normal (memory.high only at its calm value), nothing done.
        journalctl -b --no-pager -u "$gov" | sed '/the server accepts clients now/q' |
                grep -E -- 'level .* -> |-> (tcmalloc|glibc|trim|reset|restarted|shrank|lowered)' &&
                fail "memgov acted while the server was starting"
        ok "memgov saw the server start and let it: $ready"

        # Growth only a restart stops (the exempt user's sessions), and one session of another
        # user that the reset ends.
        server_sql "CREATE USER leaky@localhost IDENTIFIED BY 'leaky-password';
                    CREATE USER hog@localhost IDENTIFIED BY 'hog-password'"
        local first first_start cg
        first=$SERVER_PID
        first_start=$(systemctl show -P ExecMainStartTimestampMonotonic "$unit")
        cg=/sys/fs/cgroup/system.slice/$unit
        export SESSIONS_CLIENT="nsenter -t $SERVER_PID -m -r -w -- $SERVER_CLIENT"
        # hog's session first, so that it holds more than reset.min-memory by the time the exempt
        # growth brings the reset's ETA: a reset that comes early finds it (not one still under).
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" leaky hog hog-password 1 4 150 >"$out/hog.log" &
        local hog=$!
        sleep 6
        python3 "$here/workloads/sessions.py" "$SERVER_SOCKET" leaky leaky leaky-password 3 2 150 >"$out/leaky.log" &
        local leaky=$! high_seen="" h
        for _ in $(seq 1200); do
                h=$(systemctl show -P MemoryHigh "$unit")
                [[ $h != infinity && -z $high_seen ]] && high_seen=$h
                journalctl -b --no-pager -u "$gov" | grep -q -- "-> restarted $unit through systemd" && break
                grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
                sleep 0.2
        done
        kill "$leaky" "$hog" 2>/dev/null || true
        wait "$leaky" "$hog" 2>/dev/null || true
        journalctl -b --no-pager -u "$gov" >"$out/memgov.journal"
        journalctl -b --no-pager -u "$unit" >"$out/server.journal"
        grep -E -- '-> (trim|reset|restart)|set memory' "$out/memgov.journal" | sed 's/^.*memgov\[[0-9]*\]: //' | cut -c1-220
        echo "memory.events: $(tr '\n' ' ' <"$cg/memory.events")"

        grep -q '^oom_kill 0' "$cg/memory.events" || fail "the server was OOM-killed"
        grep -q -- '-> trim failed' "$out/memgov.journal" && fail "a trim failed under the unit"
        local call
        [[ $flavour == mysql-* ]] && call="tcmalloc MallocExtension_ReleaseFreeMemory" || call="glibc malloc_trim"
        grep -q -- "-> $call in thread [0-9]* of" "$out/memgov.journal" || fail "no $call under the unit"
        ok "trim through ptrace into the chroot's server: $(grep -o -- "-> $call in thread.*" "$out/memgov.journal" | head -1 | cut -c1-160)"
        grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*hog@localhost' "$out/memgov.journal" ||
                fail "the reset did not end hog's session"
        grep -- '-> reset' "$out/memgov.journal" | grep -q 'leaky@localhost' && fail "an exempt user's session was reset"
        ok "reset over SQL through the server's root: $(grep -o -- '-> reset [0-9]* of [0-9]* session(s)' "$out/memgov.journal" | head -1), hog's"
        [[ -n $high_seen ]] || fail "MemoryHigh never changed in systemctl show"
        ok "memory.high set through SetUnitProperties: MemoryHigh $high_seen"
        grep -q 'graceful restart done' "$out/memgov.journal" || sleep 5
        journalctl -b --no-pager -u "$gov" >"$out/memgov.journal"
        grep -q 'graceful restart done' "$out/memgov.journal" || fail "no restart completed"
        grep -q -- "-> restarted $unit through systemd" "$out/memgov.journal" || fail "the restart did not go through systemd"
        local second
        second=$(systemctl show -P MainPID "$unit")
        [[ $second != "$first" && $second != 0 ]] || fail "MainPID is $second (was $first)"
        [[ $(systemctl show -P ExecMainStartTimestampMonotonic "$unit") != "$first_start" ]] || fail "the unit did not start again"
        grep -qi 'Shutdown complete' "$dir/error.log" || fail "no clean shutdown in the server's error log"
        grep -qi 'crash recovery' "$dir/error.log" && fail "the server went through crash recovery"
        SERVER_PID=$second
        for _ in $(seq 900); do server_sql "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
        [[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "the restarted server does not answer"
        ok "restarted through RestartUnit before the OOM point: MainPID $first -> $second, clean shutdown, oom_kill 0"
        sleep 3
        [[ $(systemctl show -P MemoryMax "$unit") == "$max" ]] || fail "MemoryMax is $(systemctl show -P MemoryMax "$unit"), not put back"
        ok "MemoryMax put back: $(( max / M ))M"
        systemctl stop "$unit" "$gov"
        SERVER_PID=
}

for f in "$@"; do
        run_flavour "$f"
done
echo "systemd-servers: PASS"
