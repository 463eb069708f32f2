#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The server's side of one run of bench/outcome2 inside the VM (systemd as PID 1): the server
# alone in the guest, listening on port 3306 (forwarded to the host, where the clients are), one
# governor, one setting; then what happened to the server, as server.env in the results
# directory. The clients' side is bench/outcome2-clients.sh, on the host.
#   run by bench/outcome2.sh: tests/vm/run-vm.sh --systemd --disk 4G --forward PORT:3306 ...
#
# The handshake, through the results directory: this script writes `ready` (the guest's uptime)
# once the server answers and the governor runs; the host writes `done` once its clients are
# over (or `abort`); this script then waits for the server to answer again and collects.
# BENCH_SCENARIO=prepare makes the data directory once (the server initialised, the accounts,
# sysbench's tables, a clean shutdown) as datadir.tar in the results directory; every run starts
# from a copy of it (BENCH_DATA).
#
# Environment: MEMGOV_BUILD, BENCH_SERVER (mariadb-10.11: Debian's mariadb.service; mysql-9.7,
# mariadb-11.8: the chroot at BENCH_SERVER_ROOT under a unit of its own), BENCH_SETTING
# (container: MemoryMax=BENCH_MAX binds; host: no MemoryMax, the guest's RAM binds),
# BENCH_GOVERNOR (none|control|memgov|memgov-eq|earlyoom|nohang|oomd|manual), BENCH_SCALE,
# BENCH_ALT (the unpacked Debian packages of the alternatives), BENCH_DATA, BENCH_TABLES,
# BENCH_ROWS, BENCH_WAIT (seconds to wait for `done`).
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 && ${MEMGOV_VM_MODE:-} == systemd ]] ||
        { echo "outcome2-guest: runs inside the VM in systemd mode (bench/outcome2.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
disk=${MEMGOV_DISK:?}
server=${BENCH_SERVER:?} setting=${BENCH_SETTING:-container} governor=${BENCH_GOVERNOR:?}
scenario=${BENCH_SCENARIO:?} scale=${BENCH_SCALE:-20} alt=${BENCH_ALT:-} max=${BENCH_MAX:?}
tables=${BENCH_TABLES:-8} rows=${BENCH_ROWS:-50000} wait_done=${BENCH_WAIT:-3600}
log() { echo "outcome2[$server/$setting/$scenario/$governor]: $*"; }
die() { echo "outcome2[$server/$setting/$scenario/$governor]: FAIL: $*" >&2; exit 1; }
now() { cut -d' ' -f1 /proc/uptime; }
max_bytes=$(numfmt --from=iec "$max")

# ---- the server: its unit, its configuration, its data on the test disk.
# The same for every flavour: a 128M buffer pool over a data set twice its size, a redo log
# large enough that dirty pages pile up between checkpoints (a kill costs a real recovery), the
# server listening on the guest's network, 400 connections allowed, no reverse lookup of the
# clients' address (the guest has no name server: a lookup waits out its timeout).
common_cnf="innodb_buffer_pool_size = 128M
max_connections = 400
bind_address = 0.0.0.0
port = 3306
skip_name_resolve = ON
innodb_max_dirty_pages_pct = 90
innodb_max_dirty_pages_pct_lwm = 0"
case $server in
mariadb-10.11)
        unit=mariadb.service sock=/run/mysqld/mysqld.sock data=$disk/mysql
        client=(mariadb --no-defaults --protocol=socket -S "$sock" -u root -N -B)
        mkdir -p "$data" /etc/mysql/mariadb.conf.d
        chown mysql:mysql "$data"
        cat >/etc/mysql/mariadb.conf.d/99-outcome.cnf <<CNF
[mariadbd]
datadir = $data
innodb_log_file_size = 256M
$common_cnf
CNF
        ;;
mysql-9.7 | mariadb-11.8)
        root=${BENCH_SERVER_ROOT:?}
        dir=$disk/server data=$disk/server/data sock=$disk/server/run/mysqld.sock
        if [[ $server == mysql-9.7 ]]; then
                unit=mysql.service bin=/usr/sbin/mysqld cbin=/usr/bin/mysql
                flavour_cnf="innodb_redo_log_capacity = 256M
mysqlx = OFF
secure_file_priv = NULL
performance_schema = ON"
        else
                unit=mariadb-11.8.service bin=/usr/sbin/mariadbd cbin=/usr/bin/mariadb
                flavour_cnf="innodb_log_file_size = 256M"
        fi
        mkdir -p "$dir/run" "$data"
        ids=$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$root/etc/passwd")
        cat >"$dir/my.cnf" <<CNF
[mysqld]
user = mysql
datadir = /srv/memgov/data
socket = /srv/memgov/run/mysqld.sock
pid_file = /srv/memgov/run/mysqld.pid
$common_cnf
$flavour_cnf
CNF
        chown -R "$ids" "$dir"
        # The server's unit: its own root, the data directory bound into it; its error log on
        # standard error, in the journal (the guest's monotonic clock, as the other logs).
        # Restart=on-abnormal after 5 s, as Debian's mariadb.service: a kill (the kernel's OOM
        # kill included) is followed by a start and its crash recovery.
        cat >"/etc/systemd/system/$unit" <<UNIT
[Unit]
Description=$server from its chroot
[Service]
Type=exec
RootDirectory=$root
MountAPIVFS=yes
PrivateTmp=yes
BindPaths=$dir:/srv/memgov
ExecStart=$bin --defaults-file=/srv/memgov/my.cnf
Restart=on-abnormal
RestartSec=5s
TimeoutStopSec=900
LimitNOFILE=32768
UNIT
        ;;
*) die "unknown server $server" ;;
esac
sql() { # the root account, over the socket (a chroot's through the server's own root); with
         # SQL_TIMEOUT set, given that long
        local to=()
        [[ -n ${SQL_TIMEOUT:-} ]] && to=(timeout "$SQL_TIMEOUT")
        if [[ $server == mariadb-10.11 ]]; then
                "${to[@]}" "${client[@]}" -e "$1"
        else
                local p
                p=$(systemctl show -P MainPID $unit)
                "${to[@]}" nsenter -t "$p" -m -r -w -- "$cbin" --no-defaults --protocol=socket \
                        -S /srv/memgov/run/mysqld.sock -u root -N -B -e "$1"
        fi
}

if [[ $scenario == prepare ]]; then
        if [[ $server == mariadb-10.11 ]]; then
                mariadb-install-db --user=mysql --datadir="$data" --auth-root-authentication-method=socket --skip-test-db \
                        >"$results/install-db.log" 2>&1 || die "mariadb-install-db: $(tail -3 "$results/install-db.log")"
        else
                cp -a "$root/var/lib/memgov-datadir/." "$data/" 2>/dev/null ||
                        die "no data directory template in $root (run the server tests once: server_template)"
                chown -R "$ids" "$dir"
        fi
else
        tar -C "$data" -xf "${BENCH_DATA:?}" || die "cannot unpack $BENCH_DATA"
fi

mkdir -p /etc/systemd/system/$unit.d
# No swap in the guest: the limit is the OOM point. Container: memory.max binds; host: the
# guest's RAM (sized from the same figure by outcome2.sh) binds, the server's cgroup has no limit.
{
        echo "[Service]"
        echo "MemoryAccounting=yes"
        if [[ $setting == container ]]; then
                echo "MemoryMax=$max"
                echo "MemorySwapMax=0"
        fi
        [[ $server == mariadb-10.11 ]] && echo "ExecStartPost="
} >/etc/systemd/system/$unit.d/outcome.conf

# ---- the governor, as each is meant to run.
gunit=
case $governor in
none | control) ;;
memgov | memgov-eq)
        # As installed, with the shipped default policy; memgov-eq with memory.max never raised
        # (admission's and the restart's raises at 0%): the same limit as every other governor.
        bin_memgov=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$build/systemd/memgov@.service")
        install -D -m 0755 "$build/memgov" "$bin_memgov"
        install -m 0644 "$build/systemd/memgov@.service" /etc/systemd/system/memgov@.service
        gunit=memgov@${unit%.service}.service
        if [[ $governor == memgov-eq ]]; then
                mkdir -p /etc/memgov
                printf '[admit]\nmax-raise = 0%%\n\n[restart]\nmax-raise = 0%%\nmax-raise-total = 0%%\n' \
                        >"/etc/memgov/${unit%.service}.ini"
                "$build/memgov" check "/etc/memgov/${unit%.service}.ini" >/dev/null ||
                        die "the raises-off policy does not check"
        fi
        printf '[Unit]\nWants=memgov@%%N.service\n' >/etc/systemd/system/$unit.d/memgov.conf
        # Its samples recorded as well, a trace that memgov replay runs again offline: what it saw,
        # for a decision to be read (or a change tried) against the run.
        mkdir -p "/etc/systemd/system/$gunit.d"
        printf '[Service]\nExecStart=\nExecStart=%s run --unit %%i.service --record /var/lib/memgov/trace.csv\n' \
                "$bin_memgov" >"/etc/systemd/system/$gunit.d/record.conf"
        ;;
earlyoom)
        # Debian's service: /usr/bin/earlyoom $EARLYOOM_ARGS from /etc/default/earlyoom.
        args=$(. "$alt/earlyoom/etc/default/earlyoom" && echo "$EARLYOOM_ARGS")
        # shellcheck disable=SC2086 # the arguments as Debian's unit splits them
        systemd-run --unit=earlyoom --collect "$alt/earlyoom/usr/bin/earlyoom" $args >/dev/null
        gunit=earlyoom.service
        ;;
nohang)
        # Debian's service: nohang --monitor --config /etc/nohang/nohang.conf, as shipped.
        systemd-run --unit=nohang --collect python3 "$alt/nohang/usr/sbin/nohang" --monitor \
                --config "$alt/nohang/etc/nohang/nohang.conf" >/dev/null
        gunit=nohang.service
        ;;
oomd)
        # systemd-oomd with Debian's defaults, the server's unit with ManagedOOMMemoryPressure=kill.
        o=$alt/systemd-oomd
        install -m 0755 "$o/lib/systemd/systemd-oomd" /lib/systemd/systemd-oomd
        install -m 0644 "$o/lib/systemd/system/systemd-oomd.service" "$o/lib/systemd/system/systemd-oomd.socket" \
                /etc/systemd/system/
        install -m 0644 "$o/etc/systemd/oomd.conf" /etc/systemd/oomd.conf
        mkdir -p /usr/lib/systemd/oomd.conf.d /usr/lib/systemd/system/-.slice.d /usr/share/dbus-1/system.d
        install -m 0644 "$o/usr/lib/systemd/oomd.conf.d/10-oomd-defaults.conf" /usr/lib/systemd/oomd.conf.d/
        install -m 0644 "$o/usr/lib/systemd/system/-.slice.d/10-oomd-root-slice-defaults.conf" \
                /usr/lib/systemd/system/-.slice.d/
        install -m 0644 "$o/usr/share/dbus-1/system.d/org.freedesktop.oom1.conf" /usr/share/dbus-1/system.d/
        systemd-sysusers "$o/usr/lib/sysusers.d/systemd-oom.conf"
        systemctl reload dbus.service 2>/dev/null || true
        printf '[Service]\nManagedOOMMemoryPressure=kill\n' >/etc/systemd/system/$unit.d/oomd.conf
        gunit=systemd-oomd.service
        ;;
manual)
        # The manual recipe, what a DBA configures first: the server's own limits (a session's
        # memory capped at a sixteenth of the budget; MySQL: all connections' memory at half of
        # it), a static MemoryHigh at 90% of the budget, and the allocator's release through gdb
        # every 4 phases (cron's granularity, scaled).
        printf '[Service]\nMemoryHigh=%s\n' $((max_bytes * 9 / 10)) >/etc/systemd/system/$unit.d/manual.conf
        if [[ $server == mysql-9.7 ]]; then
                printf 'global_connection_memory_tracking = ON\nconnection_memory_limit = %s\nglobal_connection_memory_limit = %s\n' \
                        $((max_bytes / 16)) $((max_bytes / 2)) >>"$dir/my.cnf"
        elif [[ $server == mariadb-11.8 ]]; then
                printf 'max_session_mem_used = %s\n' $((max_bytes / 16)) >>"$dir/my.cnf"
        else
                printf 'max_session_mem_used = %s\n' $((max_bytes / 16)) >>/etc/mysql/mariadb.conf.d/99-outcome.cnf
        fi
        ;;
*) die "unknown governor $governor" ;;
esac
systemctl daemon-reload
[[ $governor == oomd ]] && { systemctl start systemd-oomd.service || die "systemd-oomd did not start"; }
t_start=$(now)
systemctl start $unit || die "$unit did not start: $(journalctl -b --no-pager -u $unit | tail -5)"
for _ in $(seq 600); do sql "SELECT 1" >/dev/null 2>&1 && break; sleep 0.5; done
sql "SELECT 1" >/dev/null || die "the server does not answer: $(journalctl -b --no-pager -u $unit | tail -5)"
log "$(sql "SELECT VERSION()") ready in $(awk -v a="$t_start" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')s"

if [[ $scenario == prepare ]]; then
        # The accounts: sb (the application), probe (the probe's ordinary account, no reserved
        # slot), from the host (10.0.2.2 on QEMU's user network) and over the socket.
        for host in localhost %; do
                sql "CREATE USER IF NOT EXISTS 'sb'@'$host' IDENTIFIED BY 'sb';
                     GRANT ALL ON sbtest.* TO 'sb'@'$host';
                     CREATE USER IF NOT EXISTS 'probe'@'$host' IDENTIFIED BY 'probe';"
        done
        sql "CREATE DATABASE sbtest"
        tsock=$sock
        [[ $server == mariadb-10.11 ]] || tsock=/proc/$(systemctl show -P MainPID $unit)/root/srv/memgov/run/mysqld.sock
        sysbench --db-driver=mysql --mysql-socket="$tsock" --mysql-user=sb --mysql-password=sb --mysql-db=sbtest \
                --tables="$tables" --table-size="$rows" --threads=2 --rand-seed=1 oltp_read_write prepare \
                >"$results/prepare.log" 2>&1 || die "sysbench prepare: $(tail -3 "$results/prepare.log")"
        systemctl stop $unit
        tar -C "$data" -cf "$results/datadir.tar" .
        log "data directory: $(du -sh "$data" | cut -f1)"
        exit 0
fi

# ---- dirty pages, as a server in production has: half the data set updated (4 tables of the 8,
# in their primary key order), not flushed (no low-water mark, 90% allowed), so that a kill costs
# the recovery of that redo and a clean shutdown the flush of those pages.
t_dirty=$(now)
for i in 1 2 3 4; do sql "UPDATE sbtest.sbtest$i SET k = k + 1" || die "the update of sbtest$i failed"; done
dirty=$(sql "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'" | awk '{print $2}')
log "dirty pages: $dirty after updating 4 tables in $(awk -v a="$t_dirty" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')s"

# ---- watchers: memory (uptime, memory.current, main pid, MemAvailable in KiB) every second.
pid_of() { systemctl show -P MainPID $unit; }
( while :; do
        echo "$(now) $(cat "/sys/fs/cgroup/system.slice/$unit/memory.current" 2>/dev/null || echo 0) $(pid_of)" \
             "$(awk '/MemAvailable/ {print $2}' /proc/meminfo)"
        sleep 1
  done ) >"$results/memory.log" &
watch=$!
if [[ $governor == manual ]]; then
        # malloc_trim(0) in a glibc server; tcmalloc's release in mysqld. gdb reads the server's
        # libraries through its root.
        if [[ $server == mysql-9.7 ]]; then
                call='call (void) MallocExtension_ReleaseFreeMemory()'
        else
                call='call (int) malloc_trim(0)'
        fi
        ( while sleep $((scale * 4)); do
                p=$(pid_of)
                [[ $p != 0 ]] && timeout 60 gdb -p "$p" -batch -ex "set sysroot /proc/$p/root" -ex "$call" >/dev/null 2>&1 &&
                        echo "$(now) trim $p"
          done ) >"$results/manual.log" 2>&1 &
        manual=$!
fi
if [[ -n $gunit ]]; then
        for _ in $(seq 300); do systemctl is-active -q "$gunit" && break; sleep 0.2; done
        systemctl is-active -q "$gunit" || die "$gunit is not running"
fi
# Before the clients: the server's memory at rest.
{
        echo "rest_bytes=$(cat "/sys/fs/cgroup/system.slice/$unit/memory.current")"
        echo "dirty_pages=$dirty"
} >"$results/rest.env"
now >"$results/ready.new"
mv "$results/ready.new" "$results/ready"
log "ready; waiting for the clients"
for _ in $(seq $((wait_done * 2))); do
        [[ -e $results/done || -e $results/abort ]] && break
        sleep 0.5
done
[[ -e $results/done ]] || die "the clients did not finish ($([[ -e $results/abort ]] && echo aborted || echo timeout))"

# The clients waited for the server to answer again (up to 2 minutes); a server that did not is
# stuck, and is given some 30 s more here before what happened is collected.
for _ in $(seq 10); do SQL_TIMEOUT=2 sql "SELECT 1" >/dev/null 2>&1 && break; sleep 1; done
sleep 2
kill "$watch" ${manual:+"$manual"} 2>/dev/null || true
wait 2>/dev/null || true

# ---- what happened, on the guest's monotonic clock.
journalctl -b --no-pager -o short-monotonic -u $unit >"$results/server.journal"
journalctl -b --no-pager -o short-monotonic -k >"$results/kernel.log"
if [[ -n $gunit ]]; then
        journalctl -b --no-pager -o short-monotonic -u "$gunit" >"$results/governor.log"
        if [[ -f /var/lib/memgov/trace.csv ]]; then
                cp /var/lib/memgov/trace.csv "$results/trace.csv"
                cp /etc/memgov/*.ini "$results/" 2>/dev/null || true
        fi
elif [[ $governor == manual ]]; then
        cp "$results/manual.log" "$results/governor.log"
else
        : >"$results/governor.log"
fi
[[ $server == mariadb-10.11 ]] || cp "$dir/my.cnf" "$results/my.cnf"
python3 "$here/bench/outcome2-server.py" "$results" "$governor" "$max_bytes" "$setting" >"$results/server.env" ||
        die "outcome2-server.py failed"
cat "$results/server.env"
