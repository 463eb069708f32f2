#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The two rungs that give memory back from a running server, side by side on the same server and
# the same workload: Debian's mariadbd with a 512M buffer pool filled by two sysbench tables (8%
# larger than the pool), sysbench oltp_read_only with 8 sessions, each also holding 72M of user
# variables. In every round, each on a fresh run of the workload (the pool at its configured size
# and read in again, the sessions connected and holding):
#   pool   memgov's pool actuator, 5 shrink steps (the default policy's step, 10% of the configured
#          size, down to its floor, 50%)
#   reset  memgov's reset actuator with the default policy's [reset] (up to 4 sessions holding 64M
#          or more, idle ones first, the largest first: KILL CONNECTION, then a trim)
# and for each: what the server gave back (RSS; memory.current of its cgroup too when a cgroup v2
# memory controller is there), how long the action took, the transactions per second in the 30 s
# after it against the 30 s before, the transactions lost from its start to 30 s after its end,
# the errors and reconnects of the client. The sides alternate in order from round to round.
# Prints each round, the medians and the ratios pool/reset. Needs root, mariadbd and sysbench.
#   bench/pool-vs-reset.sh [BUILD_DIR] [ROUNDS]
# POOL_MIB, SESSIONS, HOLD_MIB, STEPS and WINDOW (seconds) change the setup.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../tests/lib/mariadb.sh
. "$here/tests/lib/mariadb.sh"
[[ $(id -u) == 0 ]] || { echo "pool-vs-reset: needs root to run mariadbd as mysql" >&2; exit 77; }
command -v sysbench >/dev/null ||
        { echo "pool-vs-reset: sysbench is not installed (scripts/setup-deps.sh --test)" >&2; exit 77; }

pool_mib=${POOL_MIB:-512} sessions=${SESSIONS:-8} hold_mib=${HOLD_MIB:-72} steps=${STEPS:-5} window=${WINDOW:-30}
M=$((1024 * 1024))
configured=$((pool_mib * M))
step_bp=1000 floor_bp=5000 # [pool] step and floor of policies/default.ini
pool_resize=$build/tests/memgov-pool-resize
reset_step=$build/bench/bench-reset-step
lua=$here/bench/pool-vs-reset.lua

dir=$(mktemp -d /tmp/memgov-pool-vs-reset-XXXXXX)
cg=
load_pid=
stop_load() {
        if [[ -n $load_pid ]]; then
                kill "$load_pid" 2>/dev/null || true
                wait "$load_pid" 2>/dev/null || true
                load_pid=
        fi
}
cleanup() {
        stop_load
        mariadb_stop
        [[ -z $cg ]] || rmdir "$cg" 2>/dev/null || true
        rm -rf "$dir"
}
trap cleanup EXIT

# memory.current too, when the server can have a cgroup v2 memory controller of its own.
cg2=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -1 || true)
if [[ -n $cg2 ]] && grep -qw memory "$cg2/cgroup.controllers" 2>/dev/null &&
   { grep -qw memory "$cg2/cgroup.subtree_control" || echo +memory >"$cg2/cgroup.subtree_control"; } 2>/dev/null &&
   mkdir "$cg2/memgov-pool-vs-reset-$$" 2>/dev/null; then
        cg=$cg2/memgov-pool-vs-reset-$$
        export MARIADB_CGROUP=$cg
        meter="RSS and memory.current (the server alone in a cgroup of its own)"
else
        meter="RSS only (no cgroup v2 memory controller here: no memory.current)"
fi
cg_current() { if [[ -n $cg ]]; then cat "$cg/memory.current"; else echo 0; fi; }

mariadb_start "$dir" --innodb-buffer-pool-size=$configured --innodb-flush-log-at-trx-commit=0 \
        --innodb-log-file-size=256M --max-allowed-packet=16M || exit $?
size() { mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size"; }
status() { mariadb_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }

# Two tables of about 276M each for a 512M pool (230 bytes a row, the secondary index included).
rows=$((pool_mib * 2350))
sb=(--db-driver=mysql --mysql-socket="$MARIADB_SOCKET" --mysql-user=root --mysql-db=sbtest --tables=2
    "--table-size=$rows")
mariadb_sql "CREATE DATABASE sbtest"
t0=$(date +%s)
sysbench oltp_read_only "${sb[@]}" --threads=2 prepare >"$dir/prepare.log" 2>&1 ||
        { tail "$dir/prepare.log" >&2; exit 1; }
free_pages=$(status Innodb_buffer_pool_pages_free) total_pages=$(status Innodb_buffer_pool_pages_total)
echo "pool-vs-reset: $(mariadbd --version | cut -d' ' -f2-4); 2 tables of $rows rows" \
     "($(mariadb_sql "SELECT ROUND(SUM(data_length + index_length) / 1048576) FROM information_schema.TABLES
                      WHERE table_schema = 'sbtest'")M) loaded in $(( $(date +%s) - t0 )) s;" \
     "pool ${pool_mib}M, $free_pages of $total_pages pages free"
echo "pool-vs-reset: $sessions sysbench oltp_read_only sessions holding ${hold_mib}M each; $rounds rounds;" \
     "before/after windows ${window} s; measured: $meter"

# The workload, each line it prints stamped with the time; returns once every session holds.
start_load() {
        sysbench "$lua" "${sb[@]}" --threads="$sessions" --hold-mib="$hold_mib" --db-ps-mode=disable --time=0 \
                --report-interval=1 run > >(while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done >"$1") 2>&1 &
        load_pid=$!
        local i
        for i in $(seq 1200); do
                [[ $(mariadb_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST
                                  WHERE MEMORY_USED >= $((hold_mib * M))") -ge $sessions ]] && return 0
                kill -0 "$load_pid" 2>/dev/null || break
                sleep 0.1
        done
        echo "pool-vs-reset: the workload's sessions did not all start: $(tail -3 "$1")" >&2
        exit 1
}

# Each prints its "key=value" lines into $dir/act.out, the last detail into $dir/act.detail.
act_pool() {
        local i r_error='' r_freed='' r_detail='' line args=("$MARIADB_PID" shrink 0 "$configured" "$step_bp" "$floor_bp" max 60)
        [[ -z $cg ]] || args+=("$cg")
        freed=0 ended=0 took_steps=
        for i in $(seq "$steps"); do
                "$pool_resize" "${args[@]}" >"$dir/act.out"
                while IFS= read -r line; do printf -v "r_${line%%=*}" '%s' "${line#*=}"; done <"$dir/act.out"
                [[ $r_error == 0 ]] || { echo "pool-vs-reset: pool step $i: error $r_error: $r_detail" >&2; exit 1; }
                freed=$((freed + r_freed))
                took_steps+=" $(sed -n 's/.* in \([0-9.]*[mu]*s\); .*/\1/p' <<<"$r_detail")"
        done
        echo "$steps steps, the statements took$took_steps; the last: $r_detail" >"$dir/act.detail"
}
act_reset() {
        local r_error='' r_freed='' r_detail='' line
        "$reset_step" "$MARIADB_PID" >"$dir/act.out"
        while IFS= read -r line; do printf -v "r_${line%%=*}" '%s' "${line#*=}"; done <"$dir/act.out"
        [[ $r_error == 0 ]] || { echo "pool-vs-reset: reset: error $r_error: $r_detail" >&2; exit 1; }
        freed=$r_freed
        ended=$(sed -n 's/.*; \([0-9]*\) ended;.*/\1/p' <<<"$r_detail")
        echo "$r_detail" >"$dir/act.detail"
}

# One side of a round: appends "ROUND KIND rss_back cg_back rss_back_at_end cg_back_at_end took_us
# ended actuator_freed tps_before tps_after lost errors reconnects drift" to $dir/rows.
side() {
        local kind=$1 round=$2 log=$dir/load-$2-$1.log
        # The same start for both: the pool at its configured size, the tables read into it.
        [[ $(size) == "$configured" ]] || mariadb_sql "SET GLOBAL innodb_buffer_pool_size = $configured"
        sysbench oltp_read_only "${sb[@]}" --threads=2 prewarm >/dev/null
        start_load "$log"
        sleep 5
        # What the heap had free goes back now, on both sides alike: the reset's own trim then
        # counts only what the sessions it ended held.
        "$build/memgov" trim --pid "$MARIADB_PID" >/dev/null
        sleep "$window"
        local rss0 cg0 rss1 cg1 rss2 cg2 a0 a1 load
        rss0=$(mariadb_rss) cg0=$(cg_current)
        a0=$EPOCHREALTIME
        "act_$kind"
        a1=$EPOCHREALTIME
        rss1=$(mariadb_rss) cg1=$(cg_current)
        sleep "$window"
        rss2=$(mariadb_rss) cg2=$(cg_current)
        kill -0 "$load_pid" 2>/dev/null ||
                { echo "pool-vs-reset: the workload ended: $(grep -v '^[0-9.]* sb' "$log" | tail -3)" >&2; exit 1; }
        load=$(python3 "$dir/window.py" "$log" "$a0" "$a1" "$window")
        stop_load
        echo "$round $kind $((rss0 - rss1)) $((cg0 - cg1)) $((rss0 - rss2)) $((cg0 - cg2))" \
             "$(awk -v a="$a0" -v b="$a1" 'BEGIN {printf "%d", (b - a) * 1e6}') $ended $freed $load" >>"$dir/rows"
}

# The workload's lines around an action at [A0, A1]: transactions per second in the WINDOW
# seconds before A0 and after A1, transactions short of the rate before from A0 to A1 + WINDOW
# (an event whose session was ended counts as none), the errors and reconnects in that time, and
# the drift with no action (the rate in the second half of the window before over the first).
cat >"$dir/window.py" <<'EOF'
import sys
log, a0, a1, window = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
ticks, errors, reconnects = [], [], []
for line in open(log):
    f = line.split()
    if len(f) < 2:
        continue
    stamp = float(f[0])
    if f[1] == "sb" and len(f) == 9:  # each covers the INTERVAL seconds before its stamp
        ticks.append((stamp - float(f[3]) / 2, float(f[3]), int(f[4])))
    elif f[1] == "sberr":
        errors.append(stamp)
    elif f[1] == "sbreconnect":
        reconnects.append(stamp)
def events(lo, hi):
    t = [x for x in ticks if lo <= x[0] < hi]
    return sum(x[2] for x in t) - sum(1 for e in errors if lo <= e < hi), sum(x[1] for x in t)
n, s = events(a0 - window, a0)
before = n / s
# The workload's own drift with no action: the second half of the window before against the first.
n1, s1 = events(a0 - window, a0 - window / 2)
n2, s2 = events(a0 - window / 2, a0)
n, s = events(a1, a1 + window)
after = n / s
n, s = events(a0, a1 + window)
print(f"{before:.1f} {after:.1f} {before * s - n:.0f} {sum(1 for e in errors if a0 <= e < a1 + window)} "
      f"{sum(1 for e in reconnects if a0 <= e < a1 + window)} {(n2 / s2) / (n1 / s1):.4f}")
EOF

: >"$dir/rows"
for round in $(seq "$rounds"); do
        if (( round % 2 )); then order="pool reset"; else order="reset pool"; fi
        for kind in $order; do
                side "$kind" "$round"
                read -r _ _ rss_back _ _ _ took ended _ before after lost errors reconnects _ < <(tail -1 "$dir/rows")
                printf 'pool-vs-reset: round %d %-5s gave back %4d MiB (RSS) in %s s; tps %s -> %s; %s transactions lost;' \
                       "$round" "$kind" $((rss_back / M)) "$(awk -v t="$took" 'BEGIN {printf "%.2f", t / 1e6}')" \
                       "$before" "$after" "$lost"
                printf ' %s errors, %s reconnects, %s sessions ended\n' "$errors" "$reconnects" "$ended"
                echo "pool-vs-reset:   memgov: $(cat "$dir/act.detail")"
        done
done

python3 - "$dir/rows" "$steps" "$step_bp" "$window" "${cg:+1}" <<'EOF'
import statistics, sys
rows, steps, step_bp, window, have_cg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), bool(sys.argv[5])
MiB = 2**20
by = {"pool": [], "reset": []}
for line in open(rows):
    f = line.split()
    by[f[1]].append([float(x) for x in f[2:]])
names = ["rss", "cg", "rss_end", "cg_end", "took", "ended", "freed", "before", "after", "lost", "errors",
         "reconnects", "drift"]
m, kept = {}, {}
for kind, rs in by.items():
    m[kind] = {n: statistics.median(r[i] for r in rs) for i, n in enumerate(names)}
    kept[kind] = [r[8] / r[7] for r in rs]
    m[kind]["kept"] = statistics.median(kept[kind])
drifts = [r[12] for rs in by.values() for r in rs]
print(f"pool rung vs reset rung, same server and workload ({len(by['pool'])} rounds, medians)")
label = {"pool": f"pool: {steps} step{'s' if steps > 1 else ''} of {step_bp / 100:g}%", "reset": "reset: KILL + trim"}
cg_head = "  memory.current" if have_cg else ""
later = f"{window} s later"
print(f"  {'':24} {'given back':>11}{cg_head} {later:>11} {'took':>8} {'tps before':>11} {'tps after':>10} "
      f"{'kept (range)':>20} {'lost':>7} {'errors':>7} {'reconn':>7} {'ended':>6}")
for kind in ("pool", "reset"):
    x = m[kind]
    cg = f"  {x['cg'] / MiB:10.1f} MiB" if have_cg else ""
    rng = f"({min(kept[kind]) * 100:.0f}-{max(kept[kind]) * 100:.0f}%)"
    print(f"  {label[kind]:24} {x['rss'] / MiB:7.1f} MiB{cg} {x['rss_end'] / MiB:7.1f} MiB {x['took'] / 1e6:7.2f}s "
          f"{x['before']:11.1f} {x['after']:10.1f} {x['kept'] * 100:6.1f}% {rng:>12} {x['lost']:7.0f} "
          f"{x['errors']:7.0f} {x['reconnects']:7.0f} {x['ended']:6.0f}")
p, r = m["pool"], m["reset"]
ratio = lambda a, b: f"{a / b:.2f}" if b else ("-" if a == 0 else "inf")
print(f"  given back = RSS just before the action minus just after; {later} = the same at the end of the window;")
print(f"  took = the actuator's processes, start to end; kept = tps after / tps before;")
print(f"  lost = transactions short of the rate before, from the action's start to {window} s after its end")
print(f"  with no action the rate moved by {min(drifts) * 100 - 100:+.0f}% to {max(drifts) * 100 - 100:+.0f}% "
      f"(median {statistics.median(drifts) * 100 - 100:+.1f}%) from the first half of a window before to its second: "
      f"a change of throughput within that is noise")
lost_ratio = ratio(p["lost"], r["lost"]) if r["lost"] > 0 else "- (reset: no loss measured)"
print(f"  ratio pool/reset: given back {ratio(p['rss'], r['rss'])}"
      + (f" (memory.current {ratio(p['cg'], r['cg'])})" if have_cg else "")
      + f", throughput kept {ratio(p['kept'], r['kept'])}, transactions lost {lost_ratio},"
      f" errors {p['errors']:.0f}/{r['errors']:.0f}, sessions ended {p['ended']:.0f}/{r['ended']:.0f},"
      f" action time {ratio(p['took'], r['took'])}")
for kind in ("pool", "reset"):
    x = m[kind]
    mib = max(x["rss"] / MiB, 1)
    lost = (f"{x['lost'] / mib * 100:7.0f} transactions lost ({x['lost'] / mib * 100 / x['before']:.2f} s of the rate before)"
            if x["lost"] > 0 else f"{'none':>7} lost (measured {x['lost']:.0f}: above the rate before)")
    print(f"  per 100 MiB given back, {kind:5}: {lost}, "
          f"{x['ended'] / mib * 100:.2f} sessions ended, {x['errors'] / mib * 100:.2f} client errors")
EOF
