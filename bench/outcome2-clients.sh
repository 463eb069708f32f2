#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The clients' side of one run of bench/outcome2, on the host: the probe and the scenario's
# clients, all over TCP to the server in the VM (QEMU's port forwarded on 127.0.0.1), as an
# application reaches a database server on another machine. What they lived through: clients.env
# (and the logs) in RESULTS.
#
#   bench/outcome2-clients.sh RESULTS PORT SERVER SCENARIO SCALE SEED MAX TABLES ROWS DATA
#
# The probe opens a new connection every half second as an ordinary account (probe: no reserved
# slot) and asks SELECT 1: "up", "refused" (1040, too many connections) or "down" (no answer
# within 2 s, or another error: its first words follow), each line with the host's uptime. Every client ignores errors and
# reconnects, so that what it lived through is counted, not stopped at.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
results=${1:?} port=${2:?} server=${3:?} scenario=${4:?} scale=${5:?} seed=${6:?} max=${7:?}
tables=${8:?} rows=${9:?} data=${10:?}
now() { cut -d' ' -f1 /proc/uptime; }
flavour=mariadb
[[ $server == mysql-* ]] && flavour=mysql
# MySQL's accounts use caching_sha2_password: its first login after a server start needs a
# secure channel. The clients use TLS with the certificates MySQL made in its data directory
# (sysbench reads cacert.pem, client-cert.pem and client-key.pem from its working directory).
ssl_sb=() ssl_cli=()
tls=$results/tls
mkdir -p "$tls"
if [[ $flavour == mysql ]]; then
        ssl_sb=(--mysql-ssl=on) ssl_cli=(--ssl)
        tar -C "$tls" -xf "$data" ./ca.pem ./client-cert.pem ./client-key.pem
        mv "$tls/ca.pem" "$tls/cacert.pem"
fi
sb=(sysbench --db-driver=mysql --mysql-host=127.0.0.1 "--mysql-port=$port" --mysql-user=sb --mysql-password=sb
    --mysql-db=sbtest "${ssl_sb[@]}" --tables="$tables" --table-size="$rows" --rand-seed="$seed")
cli() { # USER PASSWORD [ARGS...]
        local u=$1 p=$2
        shift 2
        mariadb --no-defaults "${ssl_cli[@]}" --protocol=tcp -h 127.0.0.1 -P "$port" -u "$u" "-p$p" "$@"
}

( while :; do
        t=$(now)
        if e=$(timeout 2 mariadb --no-defaults "${ssl_cli[@]}" --protocol=tcp -h 127.0.0.1 -P "$port" \
                        --connect-timeout=2 -u probe -pprobe -N -B -e 'SELECT 1' 2>&1 >/dev/null); then
                echo "$t up"
        elif [[ $e == *"ERROR 1040"* ]]; then
                echo "$t refused"
        else
                echo "$t down $(head -1 <<<"$e" | tr -s ' \t' _ | cut -c1-80)"
        fi
        sleep 0.5
  done ) >"$results/probe.log" &
probe=$!
trap 'kill $probe 2>/dev/null || true' EXIT

run_sb() { # NAME SCRIPT THREADS SECONDS [ARGS...]
        local name=$1 script=$2 threads=$3 secs=$4 end left
        shift 4
        # sysbench 1.0.20 reconnects only on the error codes it is told to ignore (not with
        # "all"), and may crash when its connections are killed under it: a client that dies
        # before its time is started again for the time left (counted), and what it did is read
        # from its report lines, one a second.
        end=$(( $(date +%s) + secs ))
        while left=$(( end - $(date +%s) )); (( left > 0 )); do
                # A server stuck at its limit keeps queries waiting past --time: the client is
                # stopped half a minute later.
                if (cd "$tls" && exec timeout -k 5 $((left + 30)) "${sb[@]}" --threads="$threads" --time="$left" --report-interval=1 \
                        --mysql-ignore-errors=1040,1053,1077,1152,1158,1159,1160,1161,1205,1213,1317,2002,2003,2006,2013,2026,4031 \
                        --histogram=on --percentile=99 "$@" "$script" run) >>"$results/sb.$name.log" 2>&1; then
                        break
                fi
                echo "CLIENT RESTART" >>"$results/sb.$name.log"
                sleep 1
        done
}
# COUNT long-lived sessions, each sending STATEMENT once a second for SECONDS ({n}: the round,
# from 1; {bytes}: RATE bytes a second times the seconds since the session's last statement), a
# session that fails started again (counted) and its "1" checked: growth.log. An answer is
# waited for until half a minute past SECONDS; a server stuck at its limit then ends the sessions.
grow_sessions() { # COUNT SECONDS STATEMENT [RATE]
        python3 - "$port" "$1" "$2" "$3" "${4:-0}" "${ssl_cli[*]}" >"$results/growth.log" 2>&1 <<'PY'
import select, subprocess, sys, time
port, count, secs, statement, rate, ssl = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6]
def session():
    return subprocess.Popen(["mariadb", "--no-defaults"] + ssl.split() + ["--protocol=tcp", "-h", "127.0.0.1", "-P", port,
                             "-u", "sb", "-psb", "-N", "-B", "-n", "sbtest"],
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
# Session variables growing at RATE bytes a second in each of 4 sessions, for PHASES phases,
# beside the normal load.
linear() { # PHASES RATE
        echo "linear: 4 sessions, $(($2 >> 10))K each a second, $1 phases" >"$results/scenario.log"
        grow_sessions 4 $((scale * $1)) "SET @v{n} = REPEAT('l', {bytes}); SELECT 1;" "$2" &
        local grower=$!
        run_sb normal oltp_read_write 8 $((scale * $1))
        wait "$grower" || true
}

t0=$(now)
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
retention)
        # The fragmentation study's loops: oltp_read_write over ranges of 2,000 rows ramping its
        # users 1 -> 16 -> 64 -> 128, three times, without a restart: what the allocator keeps
        # grows loop by loop (bench/allocators.sh measures the same on the host).
        n=0
        for _ in 1 2 3; do
                for th in 1 16 64 128; do
                        n=$((n + 1))
                        run_sb "$(printf %02d $n)-$th" oltp_read_write "$th" "$scale" --range_size=2000
                done
        done
        ;;
growth)
        # Per-connection growth: 24 long-lived sessions append rows to a session's MEMORY
        # temporary table (freed only when the session ends), beside a normal read-write load.
        grow_sessions 24 $((scale * 10)) \
                "SET SESSION max_heap_table_size = 256 * 1024 * 1024; CREATE TEMPORARY TABLE IF NOT EXISTS acc (id INT, pad CHAR(255)) ENGINE=MEMORY; INSERT INTO acc SELECT id, REPEAT('g', 255) FROM sbtest1 LIMIT 1000; SELECT 1;" &
        grower=$!
        run_sb normal oltp_read_write 8 $((scale * 10))
        wait "$grower" || true
        ;;
storm)
        # A connection storm: a normal read-write load, then new sessions arriving in waves of 25
        # (six waves, one every half phase), each with large per-session buffers and a grouping
        # query that fills them, until the storm ends; then calm.
        run_sb normal oltp_read_write 8 $((scale * 8)) &
        normal=$!
        sleep "$scale"
        waves=()
        for w in 1 2 3 4 5 6; do
                run_sb "storm-$w" "$here/bench/outcome2-storm.lua" 25 $((scale * 4 - (w - 1) * scale / 2)) \
                        --flavour=$flavour &
                waves+=($!)
                sleep $((scale / 2))
        done
        wait "${waves[@]}" || true
        wait "$normal" || true
        ;;
linear)
        # Linear growth, fast: two thirds of the limit in 9 phases (the server, which starts at
        # about a third, meets it within the 12 phases of the run).
        linear 12 $(( $(numfmt --from=iec "$max") * 2 / 3 / (9 * scale) / 4 ))
        ;;
slow)
        # Linear growth, slow: the same two thirds of the limit in 36 phases, a quarter of the
        # rate, over 40 phases: the trend's estimate of the time left settles before any
        # threshold of the budget is reached.
        linear 40 $(( $(numfmt --from=iec "$max") * 2 / 3 / (36 * scale) / 4 ))
        ;;
*) echo "outcome2-clients: unknown scenario $scenario" >&2; exit 2 ;;
esac
t1=$(now)
# The workload is over; the probe goes on until the server answers 5 probes in a row (a restart
# or a crash recovery it set off is counted whole), or 2 minutes: a server still not answering
# then is stuck (at its limit, no kill) and its time not answering is a lower bound.
answering=0
for _ in $(seq 240); do
        [[ $(tail -5 "$results/probe.log" | grep -c ' up$') == 5 ]] && { answering=1; break; }
        sleep 0.5
done
kill $probe 2>/dev/null || true
wait $probe 2>/dev/null || true
{
        echo "clients_seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')"
        echo "stuck_at_end=$((1 - answering))"
} >"$results/clients.env"
python3 "$here/bench/outcome2-report.py" --clients "$results" >>"$results/clients.env"
