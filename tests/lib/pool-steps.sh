# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The buffer-pool rung's steps against a real server, shared by pool-mariadbd.sh (the host's
# MariaDB) and pool-servers.sh (the chroots' servers). The sourcing script sets:
#   name, dir, M, CONFIGURED, STEP_BP, FLOOR_BP, POOL_RESIZE (memgov-pool-resize), POOL_PID,
#   and defines pool_sql "SQL" (as root), pool_rss and fail MESSAGE.
# Then: pool_fill (a table of about 280M read once: every frame of a 256M pool holds a page),
# pool_load_start / pool_load_stop (queries all along, each checked), pool_dry_run,
# pool_steps_down (to the floor, where the step fails with its sentence), pool_steps_up (back to
# the configured size and no further). pool_run ACTION DRY CONFIGURED GROW_MAX is one step, its
# result in r_<key>; it waits POOL_RESIZE_TIMEOUT seconds (60, as resize-timeout's default) for
# the server to finish a resize.

pool_size() { pool_sql "SELECT @@GLOBAL.innodb_buffer_pool_size"; }
pool_status() { pool_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
mib() { echo "$(( $1 / M ))M"; }

r_error='' r_explained='' r_value='' r_value_before='' r_has_freed='' r_freed='' r_detail=''
pool_run() {
        local out line
        out=$("$POOL_RESIZE" "$POOL_PID" "$1" "$2" "$3" "$STEP_BP" "$FLOOR_BP" "$4" "${POOL_RESIZE_TIMEOUT:-60}") ||
                fail "$1: the driver failed: $out"
        while IFS= read -r line; do
                printf -v "r_${line%%=*}" '%s' "${line#*=}"
        done <<<"$out"
}

# ROWS_QUERY: a query giving 1,000,000 rows (id, pad).
pool_fill() {
        pool_sql "CREATE DATABASE memgov_pool; USE memgov_pool;
                  CREATE TABLE t (id INT PRIMARY KEY, pad CHAR(255)) ENGINE=InnoDB;
                  ${POOL_FILL_SETUP:-}
                  INSERT INTO t $1;
                  SELECT COUNT(*) FROM t WHERE pad LIKE 'q%'" >/dev/null
        local free total
        free=$(pool_status Innodb_buffer_pool_pages_free) total=$(pool_status Innodb_buffer_pool_pages_total)
        echo "$name: pool $(mib "$(pool_size)"), $((total - free)) of $total pages in use, RSS $(mib "$(pool_rss)")"
        (( free * 4 < total )) || fail "the pool did not fill: $free of $total pages free"
}

pool_load_pid=
pool_load_start() {
        : >"$dir/load.log"
        ( n=0
          while [[ ! -e $dir/load.stop ]]; do
                from=$((RANDOM * 30))
                got=$(pool_sql "SELECT COUNT(*) FROM memgov_pool.t WHERE id > $from AND id <= $from + 1000" 2>&1) || true
                if [[ $got == 1000 ]]; then n=$((n + 1)); else echo "fail: $got" >>"$dir/load.log"; fi
          done
          echo "ok $n" >>"$dir/load.log" ) &
        pool_load_pid=$!
}
# For an exit trap: the queries stopped, nothing checked.
pool_load_end() {
        [[ -n $pool_load_pid ]] || return 0
        touch "$dir/load.stop"
        wait "$pool_load_pid" 2>/dev/null || true
        pool_load_pid=
}
pool_load_stop() {
        [[ -n $pool_load_pid ]] || return 0
        touch "$dir/load.stop"
        wait "$pool_load_pid" 2>/dev/null || true
        pool_load_pid=
        if grep -q '^fail' "$dir/load.log"; then
                fail "queries failed during the resizes: $(grep '^fail' "$dir/load.log" | head -3)"
        fi
        echo "$name: ok: the server answered all $(sed -n 's/^ok //p' "$dir/load.log") queries made during the resizes"
}

# A dry run: everything but the SET.
pool_dry_run() {
        pool_run shrink 1 "$CONFIGURED" max
        [[ $r_error == 0 && $r_detail == "would shrink "* ]] || fail "dry run: error $r_error: $r_detail"
        [[ $(pool_size) == "$CONFIGURED" && $r_value == "$CONFIGURED" && $r_value_before == "$CONFIGURED" ]] ||
                fail "dry run: the pool is $(pool_size) (reported $r_value_before -> $r_value)"
        echo "$name: ok: dry run: $r_detail"
}

# Shrink one step at a time to the floor, each measured, the server answering after each; then
# the step at the floor fails, with its sentence, and changes nothing. Leaves pool_at.
# Whether the pool reaches SIZE within SECONDS, its resize no longer running (waited: the seconds).
pool_finished() { # SIZE SECONDS
        local code
        for ((waited = 0; waited < $2; waited++)); do
                code=$(pool_status Innodb_buffer_pool_resize_status_code)
                [[ $(pool_size) == "$1" && ( -z $code || $code == 0 ) ]] && return 0
                sleep 1
        done
        return 1
}

pool_steps_down() {
        local freed_total=0 measured=0 rss_before rss_after
        pool_at=$CONFIGURED rss_before=$(pool_rss)
        while (( pool_at > CONFIGURED * FLOOR_BP / 10000 )); do
                pool_at=$((pool_at - CONFIGURED * STEP_BP / 10000))
                pool_run shrink 0 "$CONFIGURED" max
                if [[ $r_error == -110 && $r_detail == *"still at it in the background"* ]]; then
                        # The server's own pace: a resize may outlast resize-timeout (MySQL once
                        # withdrew 2042 of 2048 blocks in its minute, on a busy machine). memgov
                        # says so; the server must then finish it by itself.
                        pool_finished "$pool_at" 120 ||
                                fail "shrink to $(mib $pool_at): the server did not finish it in the background: $r_detail"
                        echo "$name: ok: shrink: past resize-timeout, said so ($r_detail), finished by the server ${waited}s later"
                        continue
                fi
                [[ $r_error == 0 ]] || fail "shrink to $(mib $pool_at): error $r_error: $r_detail"
                [[ $r_value == "$pool_at" && $(pool_size) == "$pool_at" ]] ||
                        fail "shrink: the pool is $(pool_size), reported $r_value, expected $pool_at: $r_detail"
                [[ $r_has_freed == 1 ]] || fail "shrink: nothing measured: $r_detail"
                # One step's RSS is a noisy measure: the pool's free frames (13M on MariaDB
                # 10.11) may never have been touched, and the load's queries allocate meanwhile
                # (one step of 32M once measured 11.3M). Each step must give something back; the
                # steps together must give back half of what they took, checked below.
                (( r_freed > 0 )) || fail "shrink to $(mib $pool_at) gave nothing back: $r_detail"
                freed_total=$((freed_total + r_freed)) measured=$((measured + CONFIGURED * STEP_BP / 10000))
                [[ $(pool_sql "SELECT 6 * 7") == 42 ]] || fail "the server does not answer after the shrink to $(mib $pool_at)"
                echo "$name: ok: shrink: $r_detail"
        done
        rss_after=$(pool_rss)
        echo "$name: shrunk $(mib "$CONFIGURED") -> $(mib "$(pool_size)"): $(mib $freed_total) given back (measured per step)," \
             "RSS $(mib "$rss_before") -> $(mib "$rss_after")"
        (( measured > 0 )) || fail "no shrink step finished within its time: none measured"
        (( freed_total >= measured / 2 )) ||
                fail "only $(mib $freed_total) given back for $(mib $measured) of steps measured"
        pool_run shrink 0 "$CONFIGURED" max
        [[ $r_error == -34 && $r_explained == 1 && $r_detail == *"floor"* ]] ||
                fail "the step at the floor: error $r_error: $r_detail"
        [[ $(pool_size) == "$pool_at" ]] || fail "the step at the floor changed the pool to $(pool_size)"
        echo "$name: ok: at the floor: $r_detail"
}

# Grow back one step at a time to the configured size, and no further.
pool_steps_up() {
        while (( pool_at < CONFIGURED )); do
                pool_at=$((pool_at + CONFIGURED * STEP_BP / 10000))
                pool_run grow 0 "$CONFIGURED" max
                [[ $r_error == 0 && $r_value == "$pool_at" && $(pool_size) == "$pool_at" ]] ||
                        fail "grow to $(mib $pool_at): error $r_error, the pool is $(pool_size): $r_detail"
                echo "$name: ok: grow: $r_detail"
        done
        pool_run grow 0 "$CONFIGURED" max
        [[ $r_error == 0 && $r_value == "$CONFIGURED" && $(pool_size) == "$CONFIGURED" && $r_detail == *"nothing to grow"* ]] ||
                fail "a grow at the configured size: error $r_error, the pool is $(pool_size): $r_detail"
        echo "$name: ok: at the configured size: $r_detail"
}

# More sessions than max_connections + 1 (a storm in before admission's lowering took effect):
# the server turns every new connection away, root's too. The driver keeps its session first, as
# the action thread does. Where the statement only asks for the resize (MySQL), the step goes on
# that session; where it resizes itself (MariaDB with innodb_buffer_pool_size_max) it needs a
# connection of its own, from which a KILL QUERY can stop it, and fails saying why. The pool is
# at CONFIGURED and the load stopped; both are so after.
pool_no_new_connection() {
        local max_before synchronous sleepers=() driver line
        max_before=$(pool_sql "SELECT @@GLOBAL.max_connections")
        synchronous=$(pool_sql "SHOW GLOBAL VARIABLES LIKE 'innodb_buffer_pool_size_max'" | grep -c . || true)
        # Twelve sessions and the driver's over max_connections 10 (MariaDB's least) + 1.
        for _ in $(seq 12); do
                pool_sql "SELECT SLEEP(15)" >/dev/null 2>&1 &
                sleepers+=($!)
        done
        for _ in $(seq 50); do
                (( $(pool_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP%'") >= 12 )) &&
                        break
                sleep 0.1
        done
        rm -f "$dir/kept" "$dir/go"
        MEMGOV_TEST_KEPT_SIGNAL=$dir "$POOL_RESIZE" "$POOL_PID" shrink 0 "$CONFIGURED" "$STEP_BP" "$FLOOR_BP" max 60 \
                >"$dir/no-new.out" 2>"$dir/no-new.err" &
        driver=$!
        for _ in $(seq 100); do [[ -e $dir/kept ]] && break; sleep 0.1; done
        [[ -e $dir/kept ]] || fail "no new connection: the driver kept no session: $(cat "$dir/no-new.err")"
        pool_sql "SET GLOBAL max_connections = 10"
        ! pool_sql "SELECT 1" >/dev/null 2>&1 || fail "no new connection: a new root session still got in"
        touch "$dir/go"
        wait "$driver" || fail "no new connection: the driver failed: $(cat "$dir/no-new.err")"
        while IFS= read -r line; do
                printf -v "r_${line%%=*}" '%s' "${line#*=}"
        done <"$dir/no-new.out"
        wait "${sleepers[@]}" 2>/dev/null || true # their sessions end with their sleep
        for _ in $(seq 100); do pool_sql "SELECT 1" >/dev/null 2>&1 && break; sleep 0.1; done
        pool_sql "SET GLOBAL max_connections = $max_before"
        if ((synchronous)); then
                [[ $r_error == -87 && $r_detail == *"needs a connection of its own: "*"Too many connections"* &&
                   $(pool_size) == "$CONFIGURED" ]] ||
                        fail "no new connection, a statement that resizes: error $r_error, the pool is $(pool_size): $r_detail"
                echo "$name: ok: no new connection taken, and a statement that resizes needs one: $r_detail"
        else
                [[ $r_error == 0 && $(pool_size) == $((CONFIGURED - CONFIGURED * STEP_BP / 10000)) &&
                   $r_detail == *"on memgov's session: the server takes no new connection"* ]] ||
                        fail "no new connection: error $r_error, the pool is $(pool_size): $r_detail"
                echo "$name: ok: no new connection taken: $r_detail"
                pool_run grow 0 "$CONFIGURED" max
                [[ $(pool_size) == "$CONFIGURED" ]] || fail "the pool did not come back to $(mib "$CONFIGURED"): $(pool_size)"
        fi
}
