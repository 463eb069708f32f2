# SPDX-License-Identifier: GPL-2.0-or-later
# A private MariaDB server for the tests, from Debian's packages: its own data directory,
# socket and plugin directory (holding memgov's loadable function), started and stopped by the
# test. Source it, then:
#   mariadb_start DIR [mariadbd options...]   (sets MARIADB_SOCKET, MARIADB_PID, MARIADB_DIR)
#   mariadb_sql "SQL"                         (runs as root over the socket, prints rows)
#   mariadb_stop
# With MARIADB_CGROUP set to a cgroup directory, the server starts inside it (all its memory is
# charged there). With MARIADB_SUPERVISE=1, a loop starts the server again whenever it exits
# (as systemd or a kubelet would); MARIADB_PID then follows the pid file. With MARIADB_WRAP (an
# array), the server runs under that command, e.g. tests/lib/container.sh for a container
# whose run directory is private: the socket is then reached through /proc/PID/root.
# Needs root (the server runs as the mysql user).

mariadb_client_socket() {
        if (( ${#MARIADB_WRAP[@]} )); then
                echo "/proc/$MARIADB_PID/root$MARIADB_SOCKET"
        else
                echo "$MARIADB_SOCKET"
        fi
}

mariadb_sql() {
        mariadb --no-defaults --protocol=socket -S "$(mariadb_client_socket)" -u root -N -B -e "$1"
}

MARIADB_WRAP=()

mariadb_start() {
        MARIADB_DIR=$1
        shift
        local udf=${MEMGOV_UDF:-}
        command -v mariadbd >/dev/null || { echo "mariadb: mariadbd is not installed (scripts/setup-deps.sh --test)" >&2; return 77; }
        mkdir -p "$MARIADB_DIR/data" "$MARIADB_DIR/plugin" "$MARIADB_DIR/run"
        [[ -n $udf ]] && cp "$udf" "$MARIADB_DIR/plugin/"
        chown -R mysql:mysql "$MARIADB_DIR"
        MARIADB_SOCKET=$MARIADB_DIR/run/mysqld.sock
        if [[ ! -d $MARIADB_DIR/data/mysql ]]; then
                mariadb-install-db --no-defaults --user=mysql --datadir="$MARIADB_DIR/data" \
                        --auth-root-authentication-method=socket --skip-test-db >"$MARIADB_DIR/install.log" 2>&1 ||
                        { cat "$MARIADB_DIR/install.log" >&2; return 1; }
        fi
        rm -f "$MARIADB_DIR/run/mysqld.pid" "$MARIADB_DIR/run/stop"
        local args=(--no-defaults --user=mysql --datadir="$MARIADB_DIR/data" --socket="$MARIADB_SOCKET"
                    --pid-file="$MARIADB_DIR/run/mysqld.pid" --plugin-dir="$MARIADB_DIR/plugin" --skip-networking
                    --log-error="$MARIADB_DIR/error.log" --innodb-buffer-pool-size=16M --max-connections=200 "$@")
        if [[ ${MARIADB_SUPERVISE:-0} == 1 ]]; then
                # The supervisor stays outside the cgroup, as systemd or a kubelet does: only the
                # server is in it.
                ( while [[ ! -e $MARIADB_DIR/run/stop ]]; do
                        ( [[ -n ${MARIADB_CGROUP:-} ]] && echo "$BASHPID" >"$MARIADB_CGROUP/cgroup.procs"
                          exec mariadbd "${args[@]}" )
                  done ) &
                MARIADB_SUPERVISOR=$!
        else
                ( [[ -n ${MARIADB_CGROUP:-} ]] && echo "$BASHPID" >"$MARIADB_CGROUP/cgroup.procs"
                  exec "${MARIADB_WRAP[@]}" mariadbd "${args[@]}" ) &
                MARIADB_PID=$!
        fi
        local i
        for i in $(seq 300); do
                [[ ${MARIADB_SUPERVISE:-0} == 1 && -s $MARIADB_DIR/run/mysqld.pid ]] && MARIADB_PID=$(cat "$MARIADB_DIR/run/mysqld.pid")
                if mariadb_sql "SELECT 1" >/dev/null 2>&1; then
                        # Supervised: the server answers; its pid file may lag a moment behind.
                        while [[ ${MARIADB_SUPERVISE:-0} == 1 && ! -s $MARIADB_DIR/run/mysqld.pid ]]; do sleep 0.1; done
                        [[ ${MARIADB_SUPERVISE:-0} == 1 ]] && MARIADB_PID=$(cat "$MARIADB_DIR/run/mysqld.pid")
                        return 0
                fi
                [[ -z ${MARIADB_PID:-} ]] || kill -0 "$MARIADB_PID" 2>/dev/null || [[ ${MARIADB_SUPERVISE:-0} == 1 ]] || break
                sleep 0.1
        done
        echo "mariadb: the server did not start" >&2
        tail -20 "$MARIADB_DIR/error.log" >&2
        return 1
}

mariadb_stop() {
        [[ -n ${MARIADB_DIR:-} ]] && touch "$MARIADB_DIR/run/stop"
        [[ -s ${MARIADB_DIR:-}/run/mysqld.pid ]] && MARIADB_PID=$(cat "$MARIADB_DIR/run/mysqld.pid")
        [[ -n ${MARIADB_PID:-} ]] || return 0
        kill -TERM "$MARIADB_PID" 2>/dev/null || true
        local i
        for i in $(seq 600); do kill -0 "$MARIADB_PID" 2>/dev/null || break; sleep 0.1; done
        wait "${MARIADB_SUPERVISOR:-$MARIADB_PID}" 2>/dev/null || true
        MARIADB_PID=
}

# Waits for a new server process (after a restart) and for it to answer; sets MARIADB_PID.
mariadb_wait_restart() {
        local old=$1 i
        for i in $(seq 1200); do
                if [[ -s $MARIADB_DIR/run/mysqld.pid && $(cat "$MARIADB_DIR/run/mysqld.pid") != "$old" ]] &&
                   mariadb_sql "SELECT 1" >/dev/null 2>&1; then
                        MARIADB_PID=$(cat "$MARIADB_DIR/run/mysqld.pid")
                        return 0
                fi
                sleep 0.1
        done
        return 1
}

# Fragments the server's heap: N sessions in parallel each set SIZE_MB one-megabyte user
# variables (allocated in their connection threads' malloc arenas), free every other one and
# stay connected, holding the rest: the freed half are holes only a trim gives back. Returns
# once all sessions hold; mariadb_unfragment ends them.
mariadb_fragment() {
        local sessions=$1 size=$2 i j set="" unset=""
        for j in $(seq "$size"); do
                set+="SET @v$j = REPEAT('m', 1000000 + $j);"
                (( j % 2 == 0 )) && unset+="SET @v$j = NULL;"
        done
        MARIADB_FRAG_PIDS=()
        for i in $(seq "$sessions"); do
                mariadb_sql "$set $unset SELECT SLEEP(600);" >/dev/null 2>&1 &
                MARIADB_FRAG_PIDS+=($!)
        done
        for i in $(seq 600); do
                [[ $(mariadb_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'") -ge $sessions ]] && return 0
                sleep 0.1
        done
        echo "mariadb: the fragmenting sessions did not all start" >&2
        return 1
}

MARIADB_FRAG_PIDS=()

mariadb_unfragment() {
        mariadb_sql "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'" |
                while read -r id; do mariadb_sql "KILL $id" || true; done
        # Never a bare wait: it would wait for the server too. A client whose session did not end
        # within 30 s is ended, so that a test never hangs here.
        local i p
        for i in $(seq 300); do
                for p in "${MARIADB_FRAG_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && break; p=; done
                [[ -z ${p:-} ]] && break
                sleep 0.1
        done
        if (( ${#MARIADB_FRAG_PIDS[@]} )); then
                kill "${MARIADB_FRAG_PIDS[@]}" 2>/dev/null || true
                wait "${MARIADB_FRAG_PIDS[@]}" 2>/dev/null || true
        fi
        MARIADB_FRAG_PIDS=()
}

mariadb_rss() {
        awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$MARIADB_PID/status"
}
