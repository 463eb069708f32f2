#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One run of bench/outcome inside the VM (systemd as PID 1): Debian's mariadb.service under a
# MemoryMax, one governor, one scenario with real clients, then what happened to the server and
# its clients, as result.env in the results directory.
#   run by bench/outcome.sh: tests/vm/run-vm.sh --systemd --disk 2G --env BENCH_SCENARIO=...
# BENCH_SCENARIO=prepare makes the data directory once (the server initialised, sysbench's
# tables written, a clean shutdown) as datadir.tar in the results directory; every run starts
# from a copy of it (BENCH_DATA).
# Environment: MEMGOV_BUILD, BENCH_SCENARIO (ramp|growth|storm|linear), BENCH_GOVERNOR
# (none|memgov|earlyoom|nohang|oomd|manual), BENCH_SEED, BENCH_SCALE (seconds per phase),
# BENCH_ALT (the unpacked Debian packages of the alternatives), BENCH_MAX (MemoryMax).
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 && ${MEMGOV_VM_MODE:-} == systemd ]] ||
        { echo "outcome-guest: runs inside the VM in systemd mode (bench/outcome.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
disk=${MEMGOV_DISK:?}
scenario=${BENCH_SCENARIO:?} governor=${BENCH_GOVERNOR:?}
seed=${BENCH_SEED:-1} scale=${BENCH_SCALE:-20} alt=${BENCH_ALT:?} max=${BENCH_MAX:-384M}
unit=mariadb.service
sock=/run/mysqld/mysqld.sock
log() { echo "outcome[$scenario/$governor]: $*"; }
die() { echo "outcome[$scenario/$governor]: FAIL: $*" >&2; exit 1; }
now() { cut -d' ' -f1 /proc/uptime; }
cg() { echo "/sys/fs/cgroup/system.slice/$unit"; }
sql() { mariadb --no-defaults --protocol=socket -S "$sock" -u root -N -B -e "$1"; }

# ---- the server: Debian's unit and configuration, its data on the test disk.
mkdir -p "$disk/mysql" /etc/mysql/mariadb.conf.d
chown mysql:mysql "$disk/mysql"
cat >/etc/mysql/mariadb.conf.d/99-outcome.cnf <<CNF
[mariadbd]
datadir = $disk/mysql
innodb_buffer_pool_size = 64M
innodb_log_file_size = 64M
skip-networking
max_connections = 400
CNF
if [[ $scenario == prepare ]]; then
        mariadb-install-db --user=mysql --datadir="$disk/mysql" --auth-root-authentication-method=socket --skip-test-db \
                >"$results/install-db.log" 2>&1 || die "mariadb-install-db: $(tail -3 "$results/install-db.log")"
else
        tar -C "$disk/mysql" -xf "${BENCH_DATA:?}" || die "cannot unpack $BENCH_DATA"
fi
mkdir -p /etc/systemd/system/$unit.d
# The same limits for every governor; Debian's unit restarts the server after a crash or a kill
# (Restart=on-abort). No swap: memory.max is the OOM point.
cat >/etc/systemd/system/$unit.d/outcome.conf <<UNIT
[Service]
MemoryAccounting=yes
MemoryMax=$max
MemorySwapMax=0
ExecStartPost=
UNIT

# ---- the governor, as each is meant to run.
case $governor in
none) ;;
memgov)
        # As installed, with the shipped default policy.
        bin=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$build/systemd/memgov@.service")
        install -D -m 0755 "$build/memgov" "$bin"
        install -m 0644 "$build/systemd/memgov@.service" /etc/systemd/system/memgov@.service
        # No /etc/memgov/mariadb.ini: the embedded default policy (policies/default.ini).
        printf '[Unit]\nWants=memgov@%%N.service\n' >/etc/systemd/system/$unit.d/memgov.conf
        ;;
earlyoom)
        # Debian's service: /usr/bin/earlyoom $EARLYOOM_ARGS from /etc/default/earlyoom.
        args=$(. "$alt/earlyoom/etc/default/earlyoom" && echo "$EARLYOOM_ARGS")
        systemd-run --unit=earlyoom --collect "$alt/earlyoom/usr/bin/earlyoom" $args >/dev/null
        ;;
nohang)
        # Debian's service: nohang --monitor --config /etc/nohang/nohang.conf, as shipped.
        systemd-run --unit=nohang --collect python3 "$alt/nohang/usr/sbin/nohang" --monitor \
                --config "$alt/nohang/etc/nohang/nohang.conf" >/dev/null
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
        ;;
manual)
        # The manual recipe: a static MemoryHigh at 90% of MemoryMax, and malloc_trim(0) through
        # gdb every 4 phases (cron's granularity, scaled).
        printf '[Service]\nMemoryHigh=%s\n' "$(( $(numfmt --from=iec "$max") * 9 / 10 ))" \
                >/etc/systemd/system/$unit.d/manual.conf
        ;;
*) die "unknown governor $governor" ;;
esac
systemctl daemon-reload
[[ $governor == oomd ]] && { systemctl start systemd-oomd.service || die "systemd-oomd did not start"; }
t_start=$(now)
systemctl start $unit || die "mariadb.service did not start: $(journalctl -b --no-pager -u $unit | tail -5)"
log "$(mariadbd --version | cut -d' ' -f2-4) ready in $(awk -v a="$t_start" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')s, MemoryMax $max"
if [[ $governor == memgov ]]; then
        for _ in $(seq 100); do systemctl is-active -q memgov@mariadb.service && break; sleep 0.2; done
        systemctl is-active -q memgov@mariadb.service || die "memgov@mariadb.service is not running"
fi

# ---- the data: sysbench's tables (4 x 20000 rows), the same for every run.
sb=(sysbench --db-driver=mysql "--mysql-socket=$sock" --mysql-user=sb --mysql-password=sb --mysql-db=sbtest
    --tables=4 --table-size=20000 --rand-seed="$seed")
if [[ $scenario == prepare ]]; then
        sql "CREATE DATABASE sbtest; CREATE USER sb@localhost IDENTIFIED BY 'sb'; GRANT ALL ON sbtest.* TO sb@localhost"
        "${sb[@]}" oltp_read_write prepare >"$results/prepare.log" 2>&1 || die "sysbench prepare: $(tail -3 "$results/prepare.log")"
        systemctl stop $unit
        tar -C "$disk/mysql" -cf "$results/datadir.tar" .
        log "data directory: $(du -sh "$disk/mysql" | cut -f1)"
        exit 0
fi

# ---- watchers: the server's answers (one probe every half second), memory, the unit.
( while :; do
        t=$(now)
        if timeout 2 mariadb --no-defaults --protocol=socket -S "$sock" -u root -N -B -e 'SELECT 1' >/dev/null 2>&1; then
                echo "$t up"
        else
                echo "$t down"
        fi
        sleep 0.5
  done ) >"$results/probe.log" &
probe=$!
( while :; do
        echo "$(now) $(cat "$(cg)/memory.current" 2>/dev/null || echo 0) $(systemctl show -P MainPID $unit)" \
             "$(awk '/MemAvailable/ {print $2}' /proc/meminfo)"
        sleep 1
  done ) >"$results/memory.log" &
watch=$!
if [[ $governor == manual ]]; then
        ( while sleep $((scale * 4)); do
                p=$(systemctl show -P MainPID $unit)
                [[ $p != 0 ]] && timeout 60 gdb -p "$p" -batch -ex 'call (int) malloc_trim(0)' >/dev/null 2>&1 &&
                        echo "$(now) trim $p"
          done ) >"$results/manual.log" 2>&1 &
        manual=$!
fi

# ---- the scenario. Every client is sysbench (Debian's) or the mariadb client; all of them
# ignore errors and reconnect, so that what they lived through is counted, not stopped at.
run_sb() { # NAME SCRIPT THREADS SECONDS [ARGS...]
        local name=$1 script=$2 threads=$3 secs=$4 end left
        shift 4
        # sysbench 1.0.20 reconnects only on the error codes it is told to ignore (not with
        # "all"), and may crash when its connections are killed under it: a client that dies
        # before its time is started again for the time left (counted), and what it did is read
        # from its report lines, one a second.
        end=$(( $(date +%s) + secs ))
        while left=$(( end - $(date +%s) )); (( left > 0 )); do
                # A server stuck at memory.max keeps queries waiting past --time: the client is
                # stopped half a minute later.
                if timeout -k 5 $((left + 30)) "${sb[@]}" --threads="$threads" --time="$left" --report-interval=1 \
                        --mysql-ignore-errors=1040,1053,1077,1152,1158,1159,1160,1161,1205,1213,1317,2002,2003,2006,2013 \
                        --histogram=on --percentile=99 "$@" "$script" run >>"$results/sb.$name.log" 2>&1; then
                        break
                fi
                echo "CLIENT RESTART" >>"$results/sb.$name.log"
                sleep 1
        done
}
# COUNT long-lived sessions, each sending STATEMENT once a second for SECONDS ({n}: the round,
# from 1; {bytes}: RATE bytes a second times the seconds since the session's last statement, so
# that rounds slowed by the load still add RATE a second), a session that fails started
# again (counted) and its "1" checked: growth.log. As sysbench's clients, an answer is waited for
# until half a minute past SECONDS; a server stuck at its limit then ends the sessions.
grow_sessions() { # COUNT SECONDS STATEMENT [RATE]
        python3 - "$sock" "$1" "$2" "$3" "${4:-0}" >"$results/growth.log" 2>&1 <<'PY'
import select, subprocess, sys, time
sock, count, secs, statement, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
def session():
    return subprocess.Popen(["mariadb", "--no-defaults", "-S", sock, "-u", "sb", "-psb", "-N", "-B", "-n", "sbtest"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
ps = [session() for _ in range(count)]
last = [time.monotonic()] * count
end, n, calls, errors, reconnects, sent = last[0] + secs, 0, 0, 0, 0, 0
class Stuck(Exception):
    pass
def answer(p):
    if not select.select([p.stdout], [], [], max(0.0, end + 30 - time.monotonic()))[0]:
        raise Stuck
    return p.stdout.readline().strip()
stuck = False
while time.monotonic() < end and not stuck:
    n += 1
    for i, p in enumerate(ps):
        now = time.monotonic()
        size = min(int(rate * (now - last[i])), 8 << 20)  # under max_allowed_packet
        last[i] = now
        try:
            p.stdin.write(statement.replace("{n}", str(n)).replace("{bytes}", str(size)) + "\n")
            p.stdin.flush()
            if answer(p) != "1":
                raise OSError
            calls += 1
            sent += size
        except Stuck:
            errors += 1
            stuck = True
            break
        except OSError:
            errors += 1
            reconnects += 1
            ps[i] = session()
            last[i] = time.monotonic()
    time.sleep(1)
for p in ps:
    p.kill()
print(f"growth calls={calls} errors={errors} reconnects={reconnects} bytes={sent}"
      f"{' stuck' if stuck else ''}", flush=True)
PY
}
case $scenario in
ramp)
        # seed 002's method: oltp_read_write ramping its users 1 -> 16 -> 64 -> 128 -> 200, twice,
        # without restarting the server (what the allocator keeps after each step).
        n=0
        for _ in 1 2; do
                for th in 1 16 64 128 200; do
                        n=$((n + 1))
                        run_sb "$(printf %02d $n)-$th" oltp_read_write "$th" "$scale"
                done
        done
        ;;
growth)
        # Per-connection growth: 24 long-lived sessions append rows to a session's MEMORY
        # temporary table through a stored procedure (freed only when the session ends), beside
        # a normal oltp_read_only load.
        mariadb --no-defaults -S "$sock" -u root sbtest <<'SQL'
DELIMITER //
CREATE PROCEDURE grow(n INT)
BEGIN
        CREATE TEMPORARY TABLE IF NOT EXISTS acc (id INT, pad CHAR(255)) ENGINE=MEMORY;
        INSERT INTO acc SELECT seq, REPEAT('g', 255) FROM seq_1_to_1000 LIMIT n;
END //
DELIMITER ;
SQL
        grow_sessions 24 $((scale * 10)) \
                "SET SESSION max_heap_table_size = 256 * 1024 * 1024; CALL grow(1000); SELECT 1;" &
        grower=$!
        run_sb normal oltp_read_only 8 $((scale * 10))
        wait "$grower" || true
        ;;
storm)
        # A connection storm: a normal oltp_read_only load, then new sessions arriving in waves
        # of 25 (six waves, one every half phase), each session with large per-session buffers
        # and a grouping query that fills them, until the storm ends; then calm.
        run_sb normal oltp_read_only 8 $((scale * 8)) &
        normal=$!
        sleep "$scale"
        waves=()
        for w in 1 2 3 4 5 6; do
                run_sb "storm-$w" "$here/bench/outcome-storm.lua" 25 $((scale * 4 - (w - 1) * scale / 2)) &
                waves+=($!)
                sleep $((scale / 2))
        done
        wait "${waves[@]}" || true
        wait "$normal" || true
        ;;
linear)
        # Slow linear growth (a server's retention, 800-900 MB/h, scaled): 4 long-lived sessions
        # add session variables at a steady rate, beside a normal oltp_read_only load. Scaled to
        # the budget: together they grow by two thirds of MemoryMax in 9 phases, so that the
        # server, which starts at about a third, meets its limit in the 12 phases of the run.
        per=$(( $(numfmt --from=iec "$max") * 2 / 3 / (9 * scale) / 4 ))
        log "linear: 4 sessions, $((per >> 10))K each a second"
        grow_sessions 4 $((scale * 12)) "SET @v{n} = REPEAT('l', {bytes}); SELECT 1;" "$per" &
        grower=$!
        run_sb normal oltp_read_only 8 $((scale * 12))
        wait "$grower" || true
        ;;
*) die "unknown scenario $scenario" ;;
esac
sleep 3
# The workload is over; what it set off may not be (a restart under way, a crash recovery): the
# run ends once the server answers 5 probes in a row, or after 2 minutes, so that its time down
# is counted whole.
for i in $(seq 240); do
        [[ $(tail -5 "$results/probe.log" | grep -c ' up$') == 5 ]] && break
        sleep 0.5
done
kill "$probe" "$watch" ${manual:+"$manual"} 2>/dev/null || true
wait 2>/dev/null || true
t_end=$(now)

# ---- what happened. The journals with the guest's monotonic clock (as probe.log and memory.log):
# one timeline.
journalctl -b --no-pager -o short-monotonic -u $unit >"$results/mariadb.journal"
journalctl -b --no-pager -o short-monotonic -k >"$results/kernel.log"
case $governor in
memgov) journalctl -b --no-pager -o short-monotonic -u memgov@mariadb.service >"$results/governor.log" ;;
earlyoom | nohang) journalctl -b --no-pager -o short-monotonic -u $governor >"$results/governor.log" ;;
oomd) journalctl -b --no-pager -o short-monotonic -u systemd-oomd >"$results/governor.log" ;;
manual) cp "$results/manual.log" "$results/governor.log" ;;
none) : >"$results/governor.log" ;;
esac
oom_kills=$(grep -c 'oom-kill:' "$results/kernel.log" || true)
# The server's deaths by signal, as systemd saw them (a kill by the kernel, a governor or anyone).
sigkills=$(grep -c "Main process exited, code=killed, status=9/KILL" "$results/mariadb.journal" || true)
sigterms=$(grep -c "Main process exited, code=killed, status=15/TERM" "$results/mariadb.journal" || true)
starts=$(grep -c 'ready for connections' "$results/mariadb.journal" || true)
# A start after systemd saw the server killed is a crash recovery (InnoDB and Aria recover it;
# InnoDB says "crash recovery" only when its redo log has something to apply).
recoveries=$(awk '/Main process exited, code=(killed|dumped)/ { k = 1 } /ready for connections/ && k { n++; k = 0 }
        END { print n + 0 }' "$results/mariadb.journal")
graceful=$(grep -c 'graceful restart done' "$results/governor.log" || true)
down=$(awk -f "$here/bench/outcome-down.awk" "$results/probe.log")
peak=$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }' "$results/memory.log")
avail_min=$(awk 'BEGIN { m = -1 } m < 0 || $4 < m { m = $4 } END { print m * 1024 }' "$results/memory.log")
# sysbench: transactions (or queries, for the storm's custom script), errors, reconnects, and
# p50/p99 latency from the histograms of every client run together.
python3 - "$results" >"$results/clients.env" <<'PY'
import glob, re, sys
tx = storm = errors = reconnects = restarts = 0
hist, lat99 = {}, []
report = re.compile(r"^\[ *\d+s \] thds: \d+ tps: ([\d.]+) qps: ([\d.]+) .*lat \(ms,99%\): ([\d.]+) err/s: ([\d.]+) reconn/s: ([\d.]+)")
for f in sorted(glob.glob(sys.argv[1] + "/sb.*.log")):
    text = open(f, errors="replace").read()
    restarts += text.count("CLIENT RESTART")
    errors += len(re.findall(r"^FATAL: .*returned error", text, re.M))
    for line in text.splitlines():
        m = report.match(line)
        if m:
            # The normal load's transactions (and latency); the storm's own queries apart (its
            # script sends one query an event, outside a transaction: sysbench counts it in qps).
            if "/sb.storm-" in f:
                storm += float(m.group(2))
            else:
                tx += float(m.group(1))
                lat99.append(float(m.group(3)))
            errors += float(m.group(4))
            reconnects += float(m.group(5))
            continue
        m = re.match(r"\s+([\d.]+)\s+\|\*+\s+(\d+)$", line)
        if m and "/sb.storm-" not in f:
            hist[float(m.group(1))] = hist.get(float(m.group(1)), 0) + int(m.group(2))
for f in glob.glob(sys.argv[1] + "/growth.log"):
    m = re.search(r"errors=(\d+) reconnects=(\d+)", open(f).read())
    if m:
        errors += int(m.group(1))
        reconnects += int(m.group(2))
def pct(p):
    total = sum(hist.values())
    seen = 0
    for v in sorted(hist):
        seen += hist[v]
        if seen >= total * p:
            return v
    return 0
# The histograms of the clients that ran to their end; the report lines' 99th percentile for a
# client that crashed before printing its histogram.
p99 = max(pct(0.99), sorted(lat99)[int(len(lat99) * 0.99)] if lat99 else 0)
print(f"transactions={tx:.0f}\nstorm_queries={storm:.0f}\nclient_errors={errors:.0f}\nreconnects={reconnects:.0f}\nclient_restarts={restarts}\n"
      f"p50_ms={pct(0.5)}\np99_ms={p99}")
PY
case $governor in
memgov) acted=$(grep -cE 'memgov\[[0-9]+\]: (trim|set memory\.high|set memory\.max|set max_connections|reset|restart|resize pool) ' \
                "$results/governor.log" || true) ;;
# Its kills only: the settings line it prints at start also says "sending SIGTERM when ...".
earlyoom) acted=$(grep -cE 'sending SIG[A-Z]+ to process' "$results/governor.log" || true) ;;
nohang) acted=$(grep -ciE 'corrective action|implement' "$results/governor.log" || true) ;;
oomd) acted=$(grep -ciE 'killed' "$results/governor.log" || true) ;;
manual) acted=$(wc -l <"$results/manual.log") ;;
none) acted=0 ;;
esac
{
        echo "scenario=$scenario"
        echo "governor=$governor"
        echo "seed=$seed"
        echo "seconds=$(awk -v a="$t_start" -v b="$t_end" 'BEGIN { printf "%.0f", b - a }')"
        echo "oom_kills=$oom_kills"
        echo "sigkills=$sigkills"
        echo "sigterms=$sigterms"
        echo "starts=$starts"
        echo "crash_recoveries=$recoveries"
        echo "graceful_restarts=$graceful"
        echo "down_seconds=$down"
        echo "peak_bytes=$peak"
        echo "mem_available_min=$avail_min"
        echo "governor_actions=$acted"
        cat "$results/clients.env"
} >"$results/result.env"
cat "$results/result.env"
