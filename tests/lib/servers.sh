# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# A private server of another flavour than the host's MariaDB, run from its Debian chroot
# (scripts/provision-servers.sh): mysql-9.7 (Oracle MySQL from Debian unstable) or mariadb-11.8
# (Debian 13). Each runs in a mount namespace of its own, chrooted: the test's directory is
# mounted at /srv/memgov inside (data directory, socket, logs), with the chroot's /proc and a
# private /tmp; nothing is ever mounted on the host. memgov sees such a server as it sees one in
# another container: its socket and libraries are in its own root, reached through
# /proc/PID/root (its maps name the libraries from the host's root: ROOT/usr/lib/...). Source
# it, then:
#   server_provision FLAVOUR          (builds or reuses the chroot; sets SERVER_FLAVOUR, SERVER_ROOT)
#   server_start DIR [options...]     (sets SERVER_PID, SERVER_SOCKET, SERVER_DIR)
#   server_sql "SQL"                  (runs as root over the socket, with the chroot's own client)
#   server_stop                       (the server's own shutdown: SQL SHUTDOWN; SERVER_STOPPED_BY)
#   server_fragment N SIZE_MB, server_unfragment, server_rss (as mariadb_fragment ...)
# MySQL's data directory is made by mysqld --initialize-insecure, its root authenticated by
# auth_socket (the operating system's account over the socket);
# MariaDB's by mariadb-install-db with --auth-root-authentication-method=socket (unix_socket).
# With SERVER_CGROUP set to a cgroup directory, the server starts inside it. With SERVER_SUPERVISE=1
# a supervisor starts it again whenever it exits (server_wait_restart OLD_PID SECONDS follows it)
# until server_stop. With SERVER_UDF set
# to memgov's loadable function (memgov_udf.so), the server's plugin directory is DIR/plugin: the
# chroot's own plugins (links to them) and a copy of the function, for CREATE FUNCTION ... SONAME.
# Needs root (mount namespaces, chroot; the server runs as the chroot's mysql account).

SERVER_MOUNT=/srv/memgov

server_provision() {
        local flavour=$1 lib root
        lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
        root=$("$lib/../../scripts/provision-servers.sh" --root "$flavour") || {
                echo "servers: provisioning $flavour failed" >&2
                return 1
        }
        server_use "$flavour" "$root"
}

# The flavour's chroot at ROOT, provisioned already (provision-servers.sh calls this itself).
server_use() { # FLAVOUR ROOT
        local flavour=$1
        SERVER_FLAVOUR=$flavour
        SERVER_ROOT=$2
        case $flavour in
        mysql-9.7) SERVER_BIN=/usr/sbin/mysqld SERVER_CLIENT=/usr/bin/mysql ;;
        mariadb-11.8) SERVER_BIN=/usr/sbin/mariadbd SERVER_CLIENT=/usr/bin/mariadb ;;
        *) echo "servers: unknown flavour $flavour" >&2; return 1 ;;
        esac
        # shellcheck disable=SC2016 # expanded by the inner shell
        # (With SERVER_CGROUPFS=1, the cgroup file system the server's mount namespace starts with
        # is bound into its root too, as a container runtime gives a container its own.)
        SERVER_IN_ROOT=(unshare --mount --propagation private -- sh -c '
                mount -t proc proc "$0/proc" && mount -t tmpfs -o mode=1777,size=256m tmpfs "$0/tmp" &&
                { [ "${SERVER_CGROUPFS:-0}" != 1 ] || { mkdir -p "$0/sys/fs/cgroup" &&
                  mount --rbind /sys/fs/cgroup "$0/sys/fs/cgroup"; }; } &&
                mount --bind "$1" "$0'"$SERVER_MOUNT"'" && shift && exec chroot "$0" "$@"' "$SERVER_ROOT")
}

# Runs a command in the chroot, with DIR at /srv/memgov: "${SERVER_IN_ROOT[@]}" DIR COMMAND...,
# in a mount namespace of its own, which ends with the command. Each step execs the next: the
# pid is the command's.
SERVER_IN_ROOT=()

# The socket as memgov and the host see it: through the server's root.
server_host_socket() {
        echo "/proc/$SERVER_PID/root$SERVER_SOCKET"
}

# The chroot's own client, in the server's mount namespace and root.
server_sql() {
        nsenter -t "$SERVER_PID" -m -r -w -- "$SERVER_CLIENT" --no-defaults --protocol=socket -S "$SERVER_SOCKET" \
                -u root -N -B -e "$1"
}

SERVER_PID='' SERVER_STOPPED_BY='' SERVER_SUPERVISOR=''
SERVER_WRAP=() # a command the server is started through, e.g. tests/lib/container.sh --
SERVER_CGROUPFS=0

# A new data directory, as each flavour makes one, in DIR/data (DIR as server_start's).
# MySQL's by mysqld --initialize-insecure, root@localhost authenticated by its operating system
# account over the socket (auth_socket); MariaDB's by mariadb-install-db, root by unix_socket.
server_install_datadir() { # DIR
        local dir=$1 in=$SERVER_MOUNT install ids
        ids=$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$SERVER_ROOT/etc/passwd")
        if [[ $SERVER_FLAVOUR == mysql-* ]]; then
                printf '%s\n' "INSTALL PLUGIN auth_socket SONAME 'auth_socket.so';" \
                        "ALTER USER 'root'@'localhost' IDENTIFIED WITH auth_socket;" >"$dir/init.sql"
                install=("$SERVER_BIN" --no-defaults --initialize-insecure --user=mysql --datadir="$in/data"
                         --init-file="$in/init.sql" --log-error="$in/install.log")
        else
                install=(mariadb-install-db --no-defaults --user=mysql --datadir="$in/data"
                         --auth-root-authentication-method=socket --skip-test-db)
        fi
        chown -R "$ids" "$dir"
        if ! "${SERVER_IN_ROOT[@]}" "$dir" "${install[@]}" >"$dir/install.out" 2>&1; then
                echo "servers: $SERVER_FLAVOUR: ${install[0]} failed:" >&2
                tail -20 "$dir/install.out" "$dir/install.log" >&2 2>/dev/null
                return 1
        fi
}

# A fresh data directory, made once in the chroot (at SERVER_TEMPLATE inside it) and copied for
# each instance: initializing is slow (MySQL's takes a minute in the test VM's emulated CPU, 5 s
# on the host). A rebuilt chroot has none until server_template makes it again.
SERVER_TEMPLATE=/var/lib/memgov-datadir
server_template() {
        [[ -d $SERVER_ROOT$SERVER_TEMPLATE ]] && return 0
        local tmp
        tmp=$(mktemp -d "$SERVER_ROOT/var/lib/memgov-datadir.new.XXXXXX")
        chmod 755 "$tmp"
        server_install_datadir "$tmp" || { rm -rf "$tmp"; return 1; }
        mv -T "$tmp/data" "$SERVER_ROOT$SERVER_TEMPLATE"
        rm -rf "$tmp"
}

server_start() {
        SERVER_DIR=$1
        shift
        [[ -n ${SERVER_ROOT:-} ]] || { echo "servers: server_provision first" >&2; return 1; }
        local in=$SERVER_MOUNT ids
        ids=$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$SERVER_ROOT/etc/passwd")
        [[ -n $ids ]] || { echo "servers: $SERVER_ROOT has no mysql account" >&2; return 1; }
        mkdir -p "$SERVER_DIR/run"
        SERVER_SOCKET=$in/run/mysqld.sock
        local args=(--no-defaults --user=mysql --datadir="$in/data" --socket="$SERVER_SOCKET"
                    --pid-file="$in/run/mysqld.pid" --skip-networking --log-error="$in/error.log"
                    --innodb-buffer-pool-size=16M --max-connections=200)
        if [[ $SERVER_FLAVOUR == mysql-* ]]; then
                # No X Protocol listener; no directory for LOAD DATA and SELECT ... INTO OUTFILE.
                args+=(--mysqlx=OFF --secure-file-priv=NULL)
        fi
        if [[ -n ${SERVER_UDF:-} ]]; then
                local p
                rm -rf "$SERVER_DIR/plugin"
                mkdir "$SERVER_DIR/plugin"
                for p in "$SERVER_ROOT"/usr/lib/mysql/plugin/*; do
                        [[ -e $p ]] && ln -s "${p#"$SERVER_ROOT"}" "$SERVER_DIR/plugin/"
                done
                cp "$SERVER_UDF" "$SERVER_DIR/plugin/"
                args+=(--plugin-dir="$in/plugin")
        fi
        if [[ ! -d $SERVER_DIR/data ]]; then
                if [[ -d $SERVER_ROOT$SERVER_TEMPLATE ]]; then
                        cp -a "$SERVER_ROOT$SERVER_TEMPLATE" "$SERVER_DIR/data"
                else
                        server_install_datadir "$SERVER_DIR" || return 1
                fi
        fi
        chown -R "$ids" "$SERVER_DIR"
        rm -f "$SERVER_DIR/run/mysqld.pid"
        # A shared lock on the chroot for the server's lifetime: provisioning does not build it
        # again under a running server.
        exec {SERVER_LOCK}<"${SERVER_ROOT%/root}.lock"
        flock -s "$SERVER_LOCK"
        rm -f "$SERVER_DIR/run/stop"
        if [[ ${SERVER_SUPERVISE:-0} == 1 ]]; then
                # Started again whenever it exits, until server_stop: a supervisor outside the
                # cgroup, as systemd or a kubelet is; only the server is in it.
                ( while [[ ! -e $SERVER_DIR/run/stop ]]; do ( server_exec "${args[@]}" "$@" ); done ) &
                SERVER_SUPERVISOR=$!
                SERVER_PID=
        else
                server_exec "${args[@]}" "$@" &
                SERVER_PID=$!
        fi
        for _ in $(seq 600); do
                [[ -n $SERVER_SUPERVISOR && -s $SERVER_DIR/run/mysqld.pid ]] && SERVER_PID=$(cat "$SERVER_DIR/run/mysqld.pid")
                if [[ -n $SERVER_PID && -S $SERVER_DIR/run/mysqld.sock ]] && server_sql "SELECT 1" >/dev/null 2>&1; then
                        return 0
                fi
                [[ -n $SERVER_SUPERVISOR ]] || kill -0 "$SERVER_PID" 2>/dev/null || break
                sleep 0.1
        done
        echo "servers: $SERVER_FLAVOUR: the server did not start" >&2
        tail -20 "$SERVER_DIR/error.log" >&2
        server_stop
        return 1
}

# The server process itself, with server_start's options: in SERVER_CGROUP (when set), through
# SERVER_WRAP, in its root. It execs: run it in a subshell (or in the background), whose pid
# becomes the server's.
server_exec() {
        [[ -n ${SERVER_CGROUP:-} ]] && echo "$BASHPID" >"$SERVER_CGROUP/cgroup.procs"
        export SERVER_CGROUPFS
        exec "${SERVER_WRAP[@]}" "${SERVER_IN_ROOT[@]}" "$SERVER_DIR" "$SERVER_BIN" "$@"
}

# The server's own shutdown (SQL SHUTDOWN, as mysqladmin shutdown sends it); a server that does
# not answer gets SIGTERM (both shut down gracefully on it too), one still there a minute later
# SIGKILL. SERVER_STOPPED_BY says which: shutdown, sigterm, sigkill (or exited: it was gone).
server_stop() {
        [[ -n ${SERVER_DIR:-} && -d $SERVER_DIR/run ]] && touch "$SERVER_DIR/run/stop" # no more starts
        [[ -n ${SERVER_PID:-} ]] || { server_stop_supervisor; return 0; }
        SERVER_STOPPED_BY=shutdown
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                SERVER_STOPPED_BY=exited
        elif ! server_sql "SHUTDOWN" >/dev/null 2>&1; then
                SERVER_STOPPED_BY=sigterm
                kill -TERM "$SERVER_PID" 2>/dev/null || true
        fi
        for _ in $(seq 600); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$SERVER_PID" 2>/dev/null && [[ $SERVER_STOPPED_BY == shutdown ]]; then
                echo "servers: $SERVER_FLAVOUR: the server did not shut down within 60 s: SIGTERM" >&2
                SERVER_STOPPED_BY=sigterm
                kill -TERM "$SERVER_PID" 2>/dev/null || true
                for _ in $(seq 600); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        fi
        if kill -0 "$SERVER_PID" 2>/dev/null; then
                echo "servers: $SERVER_FLAVOUR: the server is still there after SIGTERM: SIGKILL" >&2
                SERVER_STOPPED_BY=sigkill
                kill -KILL "$SERVER_PID" 2>/dev/null || true
        fi
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=
        server_stop_supervisor
        if [[ -n ${SERVER_LOCK:-} ]]; then
                exec {SERVER_LOCK}<&-
                SERVER_LOCK=
        fi
}

# A supervised server's supervisor, which has no server left to start again (server_stop).
server_stop_supervisor() {
        [[ -n ${SERVER_SUPERVISOR:-} ]] || return 0
        for _ in $(seq 100); do kill -0 "$SERVER_SUPERVISOR" 2>/dev/null || break; sleep 0.1; done
        kill "$SERVER_SUPERVISOR" 2>/dev/null || true
        wait "$SERVER_SUPERVISOR" 2>/dev/null || true
        SERVER_SUPERVISOR=
}

# A supervised server started again after OLD_PID exited: SERVER_PID the new one, once it answers.
server_wait_restart() { # OLD_PID SECONDS
        local pid
        for _ in $(seq $(($2 * 10))); do
                pid=$(cat "$SERVER_DIR/run/mysqld.pid" 2>/dev/null || true)
                if [[ -n $pid && $pid != "$1" ]] && kill -0 "$pid" 2>/dev/null; then
                        SERVER_PID=$pid
                        server_sql "SELECT 1" >/dev/null 2>&1 && return 0
                fi
                sleep 0.1
        done
        return 1
}

# Fragments the server's heap as mariadb_fragment does: N sessions in parallel each set SIZE_MB
# one-megabyte user variables, free every other one and stay connected, holding the rest.
server_fragment() {
        local sessions=$1 size=$2 j set="" unset=""
        for j in $(seq "$size"); do
                set+="SET @v$j = REPEAT('m', 1000000 + $j);"
                (( j % 2 == 0 )) && unset+="SET @v$j = NULL;"
        done
        SERVER_FRAG_PIDS=()
        for _ in $(seq "$sessions"); do
                server_sql "$set $unset SELECT SLEEP(600);" >/dev/null 2>&1 &
                SERVER_FRAG_PIDS+=($!)
        done
        for _ in $(seq 600); do
                [[ $(server_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'") -ge $sessions ]] && return 0
                sleep 0.1
        done
        echo "servers: the fragmenting sessions did not all start" >&2
        return 1
}

SERVER_FRAG_PIDS=()

server_unfragment() {
        [[ -n ${SERVER_PID:-} ]] || return 0
        server_sql "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(600)%'" |
                while read -r id; do server_sql "KILL $id" || true; done
        local p
        for _ in $(seq 300); do
                for p in "${SERVER_FRAG_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && break; p=; done
                [[ -z ${p:-} ]] && break
                sleep 0.1
        done
        if (( ${#SERVER_FRAG_PIDS[@]} )); then
                kill "${SERVER_FRAG_PIDS[@]}" 2>/dev/null || true
                wait "${SERVER_FRAG_PIDS[@]}" 2>/dev/null || true
        fi
        SERVER_FRAG_PIDS=()
}

server_rss() {
        awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$SERVER_PID/status"
}
