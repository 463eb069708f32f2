#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A real MariaDB server (Debian's package) under memory.max, three sessions piling up user
# variables while a normal client keeps querying. First with a dry-run governor: it logs the
# resets it would make, changes nothing, and the kernel OOM-kills the server. Then with a live
# governor: the growing sessions are reset, the normal client never notices, no OOM kill.
#   tests/vm/run-vm.sh --disk 2G --env MEMGOV_BUILD=build tests/vm/scenarios/mariadb-sessions.sh
set -euo pipefail
[[ ${MEMGOV_VM:-} == 1 ]] || { echo "mariadb-sessions: SKIP: runs inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEMGOV_BUILD:?}
results=${MEMGOV_RESULTS:?}
export MEMGOV_UDF=$build/memgov_udf.so
# shellcheck source=../../lib/mariadb.sh
. "$here/lib/mariadb.sh"
fail() { echo "mariadb-sessions: FAIL: $*" >&2; exit 1; }
policy=$here/vm/policies/sessions.ini
sessions=$here/workloads/sessions.py
dir=${MEMGOV_DISK:?run with --disk}/mariadb

run_phase() { # NAME MODE(dry-run|live)
        local name=$1 mode=$2 cg=${MEMGOV_CGROUP:?}/$1
        mkdir "$cg"
        echo 360M >"$cg/memory.max"
        echo 0 >"$cg/memory.swap.max" 2>/dev/null || true
        MARIADB_CGROUP=$cg mariadb_start "$dir"
        mariadb_sql "CREATE USER IF NOT EXISTS leaky@localhost IDENTIFIED BY 'leaky';
                     CREATE USER IF NOT EXISTS app@localhost IDENTIFIED BY 'app';"
        local flags=()
        [[ $mode == dry-run ]] && flags=(--dry-run)
        "$build/memgov" run "${flags[@]}" --cgroup "/$name" --policy "$policy" --record "$results/$name.trace.csv" \
                --socket "/run/memgov/$name.sock" --state-dir "$results" 2>"$results/$name.memgov.log" &
        local governor=$!
        sleep 1
        python3 "$sessions" "$MARIADB_SOCKET" normal app app 70 >"$results/$name.normal.log" &
        local normal=$!
        python3 "$sessions" "$MARIADB_SOCKET" leaky leaky leaky 3 2 70 >"$results/$name.leaky.log" &
        local leaky=$!
        # Until the OOM kill (dry run) or the end of the growing sessions (live), 80 s at most.
        for _ in $(seq 400); do
                grep -q '^oom_kill [1-9]' "$cg/memory.events" && break
                [[ $mode == live ]] && grep -q "leaky done" "$results/$name.leaky.log" && break
                kill -0 "$leaky" 2>/dev/null || break
                sleep 0.2
        done
        kill "$leaky" 2>/dev/null || true
        # The normal client 5 s more after the resets (live), then ended rather than left to its
        # 70 s.
        [[ $mode == live ]] && sleep 5
        kill -TERM "$normal" 2>/dev/null || true
        wait "$normal" || true
        "$build/memgov" status --socket "/run/memgov/$name.sock" >"$results/$name.status.txt" || true
        kill "$governor"
        wait "$governor" || true
        echo "== $name"; cat "$cg/memory.events"; cat "$results/$name.normal.log" "$results/$name.leaky.log"
        if [[ $mode == dry-run ]]; then
                grep -q '^oom_kill [1-9]' "$cg/memory.events" || fail "$name: the server was not OOM-killed without memgov"
                grep -q 'would reset' "$results/$name.memgov.log" || fail "$name: no reset was decided"
                grep -q -- '-> would reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$results/$name.memgov.log" ||
                        fail "$name: the growing sessions were not the ones chosen"
                grep -- '-> would reset' "$results/$name.memgov.log" | grep -q 'app@localhost' &&
                        fail "$name: the normal client's session was chosen"
                mariadb_stop || true
        else
                grep -q '^oom_kill 0' "$cg/memory.events" || fail "$name: the server was OOM-killed with memgov"
                grep -q -- '-> reset [0-9]* of [0-9]* session(s):.*leaky@localhost' "$results/$name.memgov.log" ||
                        fail "$name: no growing session was reset"
                grep -- '-> reset' "$results/$name.memgov.log" | grep -q 'app@localhost' &&
                        fail "$name: the normal client's session was reset"
                grep -q 'errors=0' "$results/$name.normal.log" || fail "$name: the normal client saw errors"
                [[ $(mariadb_sql "SELECT 6 * 7") == 42 ]] || fail "$name: the server does not answer"
                mariadb_stop
        fi
        cat "$results/$name.status.txt" || true
}

run_phase dbdry dry-run
echo "mariadb-sessions: ok: dry run: the resets were logged, nothing was done, the kernel OOM-killed the server"
run_phase dblive live
echo "mariadb-sessions: ok: live: the growing sessions were reset, the normal client went on, no OOM kill"
grep -h -- '-> would reset\|-> reset' "$results"/db*.memgov.log | head -4
