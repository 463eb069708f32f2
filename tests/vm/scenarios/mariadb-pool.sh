#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The buffer-pool rung on a real MariaDB server (Debian's package): a 320M buffer pool, filled
# with a table's pages, is most of the server's memory; memory.max is set so that the server sits
# at 86% of it, and anonymous memory grows in the same cgroup that no session holds
# (memgov-memhog), while a client keeps reading the table. Trim and memory.high cannot stop that
# growth; at reset.at the reset rung finds no session holding reset.min-memory (nothing to end),
# and memgov shrinks the buffer pool one step at a time instead (never below its floor): no
# session is ended, the server is not restarted and the kernel kills nothing. Once the growth is
# gone (the workload and the client exit), the pool grows back to its configured size, one step at a time. A
# dry run first: the same load, the pool step logged as "would", the pool left as it was.
#
# The policy is the shipped default with its clock run faster (tests/vm/policies/pool.ini):
# trim.eta, throttle.eta, reset.eta, restart.eta, restart.emergency-eta, pool.cooldown,
# pool.backoff and pool.grow-after are the defaults divided by 30, throttle.cooldown is divided
# by 5 (5s -> 1s); everything else is the default.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/mariadb-pool.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "mariadb-pool: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
export MEMGOV_UDF=$build/memgov_udf.so
# shellcheck source=../../lib/mariadb.sh
. "$here/lib/mariadb.sh"
fail() { echo "mariadb-pool: FAIL: $*" >&2; exit 1; }
policy=$here/vm/policies/pool.ini
sessions=$here/workloads/sessions.py
hog=$build/tests/memgov-memhog

M=$((1 << 20))
CONFIGURED=$((320 * M))
STEP=$((CONFIGURED / 10))  # pool.step 10% (the default)
FLOOR=$((CONFIGURED / 2))  # pool.floor 50% (the default)
ROWS=44000                 # two rows of 7000 bytes a page: some 340M, more than the 320M pool
HOG_RATE=${MEMGOV_POOL_HOG_RATE:-0.6}
# The dry run's growth, faster: nothing is done, so nothing needs to keep pace with it, and it
# only has to reach the pool's step.
DRY_RATE=${MEMGOV_POOL_DRY_RATE:-1.5}

cg=${MEMGOV_CGROUP:?}/db
mkdir "$cg"
echo 640M >"$cg/memory.max" # while the table is written; set from what the server holds below
echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
uptime_s() { cut -d' ' -f1 /proc/uptime; }
t0=$(uptime_s)
# (No doublewrite buffer and a redo log larger than the table: only to write the table faster.)
MARIADB_CGROUP=$cg mariadb_start "${MEMGOV_DISK:?run with --disk}/mariadb" --innodb-buffer-pool-size=$CONFIGURED \
        --innodb-doublewrite=0 --innodb-log-file-size=512M
pid=$MARIADB_PID
size() { mariadb_sql "SELECT @@GLOBAL.innodb_buffer_pool_size"; }
status() { mariadb_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
mib() { echo "$(( $1 / M ))M"; }

# The table, written once and larger than the pool: every frame of the pool holds a page, or
# held one (InnoDB keeps innodb_lru_scan_depth frames free), as in a server that has run a while.
# Its rows are copies of a small table's (copying is faster than making them), and never of its
# own: that would go through a temporary table.
mariadb_sql "CREATE DATABASE pool; USE pool;
             CREATE TABLE a (id INT PRIMARY KEY, pad VARCHAR(7000)) ENGINE=InnoDB;
             INSERT INTO a SELECT seq, REPEAT('p', 7000) FROM seq_1_to_1000;
             CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(7000)) ENGINE=InnoDB;
             INSERT INTO t SELECT s.seq * 1000 + a.id, a.pad FROM seq_0_to_$((ROWS / 1000 - 1)) s, a;
             DROP TABLE a;
             CREATE USER app@localhost IDENTIFIED BY 'app'; GRANT SELECT ON pool.* TO app@localhost;"
[[ $(mariadb_sql "SELECT COUNT(*) FROM pool.t") == "$ROWS" ]] || fail "the table was not filled"
free_pages=$(status Innodb_buffer_pool_pages_free) total_pages=$(status Innodb_buffer_pool_pages_total)
(( free_pages * 8 < total_pages )) || fail "the pool did not fill: $free_pages of $total_pages pages free"
# The server at 86% of memory.max (the page cache of the table's writing dropped first): 6% of
# it from reset.at 92%, 10% from restart.at 96%.
sync
echo 1 >/proc/sys/vm/drop_caches
held=$(cat "$cg/memory.current")
MAX=$(( (held * 100 / 86 + M - 1) / M * M ))
echo "$MAX" >"$cg/memory.max"
# The growth: up to reset.at, then two and a half pool steps more; the dry run's, a little past
# reset.at.
to_reset=$(( (MAX * 92 / 100 - held) / M ))
HOG_MB=${MEMGOV_POOL_HOG_MB:-$(( to_reset + 5 * STEP / 2 / M ))}
DRY_MB=${MEMGOV_POOL_DRY_MB:-$(( to_reset + 20 ))}
echo "mariadb-pool: $(mariadbd --version | cut -d' ' -f2-4); pool $(mib "$(size)"), $((total_pages - free_pages))" \
     "of $total_pages pages in use; memory.current $(mib "$held"), memory.max $(mib "$MAX");" \
     "growth ${HOG_MB}M at ${HOG_RATE}M/s (dry run ${DRY_MB}M at ${DRY_RATE}M/s);" \
     "ready after $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.0f", b - a }')s"

# Every second: the pool's size and memory.current, as the client and the kernel see them.
watch_sample() { echo "$(uptime_s) $(size 2>/dev/null || echo -) $(cat "$cg/memory.current")"; }
watch_start() { # FILE
        watch_log=$1
        ( while :; do
                watch_sample
                sleep 1
          done ) >"$watch_log" &
        watcher=$!
}
# The last sample is taken after the watcher is gone: under TCG one round of the watcher takes
# about 2 s, and a step made just before the stop would otherwise miss the log.
watch_stop() {
        kill "$watcher"
        wait "$watcher" 2>/dev/null || true
        watch_sample >>"$watch_log"
}
# The sizes the pool went through, in order, each once.
sizes_seen() { awk '$2 != "-" && $2 != last { print $2; last = $2 }' "$1"; }
peak_current() { awk 'BEGIN { m = 0 } $3 > m { m = $3 } END { print m }' "$1"; }

hog_start() { # MB LOG [RATE]
        ( echo "$BASHPID" >"$cg/cgroup.procs"; exec "$hog" grow "${3:-$HOG_RATE}" "$1" ) >"$2" 2>&1 &
        hog_pid=$!
}
hog_stop() { kill "$hog_pid" 2>/dev/null || true; wait "$hog_pid" 2>/dev/null || true; }
# Until the workload holds all it was to grow, the kernel killed something, or SECONDS.
hog_wait() { # LOG SECONDS
        for _ in $(seq $(($2 * 5))); do
                grep -q 'grow done' "$1" && return 0
                grep -q '^oom_kill [1-9]' "$cg/memory.events" && return 1
                kill -0 "$hog_pid" 2>/dev/null || return 1
                kill -0 "$pid" 2>/dev/null || return 1
                sleep 0.2
        done
        return 1
}

governor_start() { # NAME [FLAGS...]
        local name=$1
        shift
        mkdir -p "$results/$name.state"
        "$build/memgov" run "$@" --cgroup /db --policy "$policy" --record "$results/$name.trace.csv" \
                --socket "/run/memgov/$name.sock" --state-dir "$results/$name.state" 2>"$results/$name.memgov.log" &
        governor=$!
}
governor_stop() { # NAME
        "$build/memgov" status --socket "/run/memgov/$1.sock" >"$results/$1.status.txt" || true
        kill "$governor"
        wait "$governor" || true
}

reader_start() { # LOG
        python3 "$sessions" "$MARIADB_SOCKET" reader app app 900 pool.t "$ROWS" >"$1" &
        reader=$!
}
reader_stop() { kill -TERM "$reader"; wait "$reader" || true; }

# ---- the dry run: the same growth, until the pool step is decided; nothing is done.
governor_start dry --dry-run
reader_start "$results/dry.reader.log"
watch_start "$results/dry.sizes.log"
sleep 2
hog_start "$DRY_MB" "$results/dry.hog.log" "$DRY_RATE"
for _ in $(seq 1500); do
        grep -q -- '-> would shrink' "$results/dry.memgov.log" && break
        grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
        kill -0 "$hog_pid" 2>/dev/null || break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
done
sleep 1
hog_stop
watch_stop
reader_stop
governor_stop dry
echo "== dry run"
grep -E 'memgov: (would |-> would shrink|level|effect)' "$results/dry.memgov.log" | grep -v 'would set memory.high' | cut -c1-240 || true
cat "$results/dry.reader.log"
grep -q 'memgov: would resize pool .*shrink the buffer pool' "$results/dry.memgov.log" || fail "dry run: no pool step was decided"
grep -q -- '-> would shrink innodb_buffer_pool_size 320M -> 288M' "$results/dry.memgov.log" ||
        fail "dry run: the actuator did not say what it would do"
[[ $(sizes_seen "$results/dry.sizes.log") == "$CONFIGURED" ]] ||
        fail "dry run: the pool changed: $(sizes_seen "$results/dry.sizes.log" | tr '\n' ' ')"
grep -qE 'memgov: (trim|set memory|resize pool|reset|restart) ' "$results/dry.memgov.log" && fail "dry run: something was done"
grep -q 'counted as failed\|-> pool failed' "$results/dry.memgov.log" && fail "dry run: the pool step failed"
grep -qE 'memgov: would restart ' "$results/dry.memgov.log" && fail "dry run: a restart was decided"
grep -q '^oom_kill 0' "$cg/memory.events" || fail "dry run: the kernel killed a process"
echo "mariadb-pool: ok: dry run: the pool step was logged as 'would', the pool stayed at $(mib "$CONFIGURED")"

# ---- live: the growth goes on until the workload holds HOG_MB, then it exits.
governor_start live
reader_start "$results/live.reader.log"
watch_start "$results/live.sizes.log"
sleep 2
hog_start "$HOG_MB" "$results/live.hog.log"
grown=0
hog_wait "$results/live.hog.log" 420 && grown=1
sleep 3
hog_stop
hog_gone=$(uptime_s)
# The client goes with the workload. (With it still reading, each step back up refills the pool:
# the server, at 86% of memory.max with its pool full, passes trim.at with trim spent, and the
# rising working set takes the ladder to throttle, which holds the next step back until the
# refill is over: seen once stuck at 288M for five minutes.)
reader_stop
# The pool grows back once calm for pool.grow-after, one step each time.
for _ in $(seq 600); do
        [[ $(size) == "$CONFIGURED" ]] && grep -q -- '-> grew' "$results/live.memgov.log" && break
        grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
done
back=$(uptime_s)
sleep 2
watch_stop
governor_stop live

echo "== live"
grep -E 'memgov: (trim|resize pool|reset|restart|level|effect|warning)|-> (shrank|grew|pool|reset)' "$results/live.memgov.log" | cut -c1-260 || true
echo "memory.events: $(tr '\n' ' ' <"$cg/memory.events")"
tail -2 "$results/live.hog.log"
cat "$results/live.reader.log"
echo "pool sizes, in order: $(for s in $(sizes_seen "$results/live.sizes.log"); do echo -n "$(mib "$s") "; done)"
echo "pool size over time (guest uptime, size, memory.current):"
awk '$2 != "-" && $2 != last { printf "  %8.1fs %5dM %5dM\n", $1, $2 / 1048576, $3 / 1048576; last = $2 }' \
        "$results/live.sizes.log"
echo "peak memory.current $(mib "$(peak_current "$results/live.sizes.log")") of $(mib "$MAX") (sampled each second;" \
     "memory.peak since the cgroup was made: $(mib "$(cat "$cg/memory.peak" 2>/dev/null || echo 0)"));" \
     "the pool back at $(mib "$CONFIGURED") $(awk -v a="$hog_gone" -v b="$back" 'BEGIN { printf "%.0f", b - a }')s after the workload exited"

grep -q '^oom_kill 0' "$cg/memory.events" || fail "the kernel OOM-killed a process"
(( grown )) || fail "the workload did not grow its ${HOG_MB}M"
kill -0 "$pid" 2>/dev/null || fail "the server process is gone"
[[ $(cat "$MARIADB_DIR/run/mysqld.pid") == "$pid" ]] || fail "the server was restarted"
[[ $(grep -c 'ready for connections' "$MARIADB_DIR/error.log") == 1 ]] || fail "the server started more than once"
grep -qE 'memgov: (would )?restart ' "$results/live.memgov.log" && fail "a restart was decided"
# reset came first, found no session worth ending (none holds reset.min-memory), ended none.
grep -qE 'memgov: reset ' "$results/live.memgov.log" || fail "no reset was tried before the pool"
grep -qE -- '-> reset failed: reset: none of the [0-9]+ sessions holds 64M or more and may be reset \(the largest that may: [0-9.]+[BKMGT]\)' \
        "$results/live.memgov.log" || fail "the reset did not fail for want of a session holding reset.min-memory, saying the largest"
grep -q -- '-> reset [0-9]* of' "$results/live.memgov.log" && fail "sessions were reset"
grep -q 'errors=0 reconnects=0' "$results/live.reader.log" || fail "the client saw errors or lost its session"
grep -q 'counted as failed\|-> pool failed\|effect *pool failed' "$results/live.memgov.log" && fail "a pool step failed"
# memgov's own steps are its own: none counted as the server's (its own shrinking is off here:
# innodb_buffer_pool_size_auto_min at its default), and the watch said so once.
grep -q 'pool: the buffer pool shrank without memgov' "$results/live.memgov.log" &&
        fail "memgov's own step was counted as the server's: $(grep -m1 'shrank without memgov' "$results/live.memgov.log")"
grep -q "pool: buffer pool 320M; the server's own shrinking on memory pressure is off" "$results/live.memgov.log" ||
        fail "the pool watch did not say whether the server shrinks its pool by itself"

# Down in steps of one pool.step, never below the floor, then back up in steps to the configured
# size, and only once the workload was gone.
python3 - "$CONFIGURED" "$STEP" "$FLOOR" "$hog_gone" "$results/live.sizes.log" <<'PY' ||
import sys
configured, step, floor = map(int, sys.argv[1:4])
gone = float(sys.argv[4])
seen = []  # (guest uptime, size), each change once
for line in open(sys.argv[5]):
    t, size, _ = line.split()
    if size != "-" and (not seen or int(size) != seen[-1][1]):
        seen.append((float(t), int(size)))
sizes = [s for _, s in seen]
low = sizes.index(min(sizes))
down, up = sizes[:low + 1], sizes[low:]
first_up = seen[low + 1][0] if len(seen) > low + 1 else None
checks = [
    (sizes[0] == configured, f"starts at the configured {configured >> 20}M"),
    (len(down) >= 3, f"{len(down) - 1} step(s) down (at least 2)"),
    (all(a - b == step for a, b in zip(down, down[1:])), "each step down is one pool.step"),
    (min(sizes) >= floor, f"never below the floor {floor >> 20}M (lowest {min(sizes) >> 20}M)"),
    (first_up is not None and first_up > gone,
     f"the first step up {first_up - gone if first_up else 0:.0f}s after the workload exited, not before"),
    (all(b - a == step for a, b in zip(up, up[1:])), "each step up is one pool.step"),
    (up[-1] == configured, f"back at the configured size ({up[-1] >> 20}M at the end)"),
]
for ok, m in checks:
    print(("ok: " if ok else "FAIL: ") + m)
sys.exit(0 if all(ok for ok, _ in checks) else 1)
PY
        fail "the pool did not go down and back up in steps"
# What each step gave back, as memgov measured it.
grep -q -- '-> shrank innodb_buffer_pool_size .*given back' "$results/live.memgov.log" || fail "no shrink was measured"
grep -o -- '-> shrank innodb_buffer_pool_size [^ ]* -> [^ ]*\|memory.current [^ ]* -> [^,]*, [^ ]* given back' \
        "$results/live.memgov.log" | paste - - | sed 's/^-> shrank //'
grep -o -- '-> grew innodb_buffer_pool_size [^ ]* -> [^ ]*' "$results/live.memgov.log" | sed 's/^-> //'
[[ $(mariadb_sql "SELECT COUNT(*) FROM pool.t") == "$ROWS" ]] || fail "the server does not answer"
echo "mariadb-pool: ok: live: reset found no session to end; the pool shrank in steps and grew back, no" \
     "session ended, no restart, no OOM kill"
mariadb_stop
