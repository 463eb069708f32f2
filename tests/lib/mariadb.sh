# SPDX-License-Identifier: GPL-2.0-or-later
# A private MariaDB server for the tests, from Debian's packages: its own data directory,
# socket and plugin directory (holding memgov's loadable function), started and stopped by the
# test. Source it, then:
#   mariadb_start DIR [mariadbd options...]   (sets MARIADB_SOCKET, MARIADB_PID, MARIADB_DIR)
#   mariadb_sql "SQL"                         (runs as root over the socket, prints rows)
#   mariadb_stop
# Needs root (the server runs as the mysql user).

mariadb_sql() {
        mariadb --no-defaults --protocol=socket -S "$MARIADB_SOCKET" -u root -N -B -e "$1"
}

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
        mariadbd --no-defaults --user=mysql --datadir="$MARIADB_DIR/data" --socket="$MARIADB_SOCKET" \
                --pid-file="$MARIADB_DIR/run/mysqld.pid" --plugin-dir="$MARIADB_DIR/plugin" --skip-networking \
                --log-error="$MARIADB_DIR/error.log" --innodb-buffer-pool-size=16M --max-connections=200 "$@" &
        MARIADB_PID=$!
        local i
        for i in $(seq 300); do
                mariadb_sql "SELECT 1" >/dev/null 2>&1 && return 0
                kill -0 "$MARIADB_PID" 2>/dev/null || break
                sleep 0.1
        done
        echo "mariadb: the server did not start" >&2
        tail -20 "$MARIADB_DIR/error.log" >&2
        return 1
}

mariadb_stop() {
        [[ -n ${MARIADB_PID:-} ]] || return 0
        kill -TERM "$MARIADB_PID" 2>/dev/null || true
        wait "$MARIADB_PID" 2>/dev/null || true
        MARIADB_PID=
}

# Fragments the server's heap: N sessions in parallel each set SIZE_MB one-megabyte user
# variables (allocated in their connection threads' malloc arenas), then disconnect.
mariadb_fragment() {
        local sessions=$1 size=$2 i j sql=""
        for j in $(seq "$size"); do sql+="SET @v$j = REPEAT('m', 1000000 + $j);"; done
        for i in $(seq "$sessions"); do
                mariadb_sql "$sql SELECT SLEEP(0.5);" >/dev/null &
        done
        wait $(jobs -p | grep -v "^$MARIADB_PID\$") 2>/dev/null || true
}

mariadb_rss() {
        awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$MARIADB_PID/status"
}
