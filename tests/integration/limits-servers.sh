#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The servers' own memory limits, measured against KILL on the reset's workload, on a real
# server from its Debian chroot: MySQL 9.7 (connection_memory_limit, global_connection_memory_limit
# with global_connection_memory_tracking) or MariaDB 11.8 (max_session_mem_used). What a reset
# method that armed them would get, and why memgov's reset ends sessions with KILL CONNECTION:
#  1. Three sessions hold 40M each in user variables (as the reset tests' growing sessions do)
#     beside a normal client. The limits are armed far under what each holds (4M a session;
#     MySQL's global limit at what all sessions hold now plus 4M), and the three grow 20M more: the
#     server ends none of them, no client sees an error, and the memory stays. A session takes a
#     limit's value when it connects, and what the sessions hold is not what the limits count
#     (on MySQL the "controlled" memory the limits count is a few kilobytes of the 40M).
#     KILL CONNECTION of the same three, and a trim, gives their memory back.
#  2. What the limits are for: a session that connects once they are armed and runs a statement
#     whose memory is over them (a sort of 300000 rows in a 64M sort buffer). MySQL closes its
#     connection (error 4082); MariaDB refuses the statement (error 1290) and keeps the session.
#     The normal client goes on without an error.
#  3. The limits put back as they were found.
#   limits-servers.sh FLAVOUR MEMGOV
set -euo pipefail
flavour=$1
memgov=$2
here=$(cd "$(dirname "$0")/.." && pwd)
name=limits-$flavour
# shellcheck source=../lib/servers.sh
. "$here/lib/servers.sh"
[[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root (chroot, mount namespaces, debootstrap)" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }
mib() { echo "$(( $1 >> 20 ))M"; }
M=$((1 << 20))
LIMIT=$((4 * M)) # MySQL's least connection_memory_limit is 2M

server_provision "$flavour"
dir=$(mktemp -d /tmp/memgov-limits-XXXXXX)
clients=()
trap 'for p in "${clients[@]}"; do kill "$p" 2>/dev/null || true; done; server_stop; rm -rf "$dir"' EXIT
server_start "$dir" || exit $?
server_sql "CREATE USER leaky@localhost IDENTIFIED BY 'leaky-password';
            CREATE USER app@localhost IDENTIFIED BY 'app-password'"

# A session of the chroot's own client, fed statements through a FIFO: session NAME USER PASSWORD.
# say NAME SQL runs SQL in it and waits for its answer: the lines it printed are in $said.
declare -A fd_of lines_of
session() {
        mkfifo "$dir/$1.in"
        nsenter -t "$SERVER_PID" -m -r -w -- "$SERVER_CLIENT" --no-defaults --protocol=socket -S "$SERVER_SOCKET" \
                -u "$2" -p"$3" -N -B -n --force <"$dir/$1.in" >"$dir/$1.out" 2>&1 &
        clients+=($!)
        local fd
        exec {fd}>"$dir/$1.in"
        fd_of[$1]=$fd
        lines_of[$1]=0
}
mark=0
said=
say() {
        mark=$((mark + 1))
        echo "$2; SELECT 'end-$mark';" >&"${fd_of[$1]}"
        local i
        for i in $(seq 600); do
                grep -q -e "^end-$mark\$" -e "^ERROR" <(tail -n +$((lines_of[$1] + 1)) "$dir/$1.out") && break
                sleep 0.05
        done
        (( i < 600 )) || fail "$1: no answer to: ${2:0:80}"
        sleep 0.1 # the rest of an error's lines
        said=$(tail -n +$((lines_of[$1] + 1)) "$dir/$1.out" | grep -v -e "^end-$mark\$" -e "Using a password")
        lines_of[$1]=$(wc -l <"$dir/$1.out")
}
hold() { # MB FROM: user variables of a megabyte each, @vFROM on
        local j set=""
        for j in $(seq "$2" $(($2 + $1 - 1))); do set+="SET @v$j = REPEAT('m', 1000000 + $j);"; done
        echo "$set SELECT 'held'"
}
errors() { grep -c '^ERROR' "$dir/$1.out" || true; }
ids() { server_sql "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '$1' ORDER BY ID" | tr '\n' ' '; }

# The limits as found, to put back.
if [[ $flavour == mysql-* ]]; then
        vars="connection_memory_limit global_connection_memory_limit global_connection_memory_tracking"
else
        vars="max_session_mem_used"
fi
declare -A found
for v in $vars; do found[$v]=$(server_sql "SELECT @@GLOBAL.$v"); done

# ---- 1. the reset's workload: sessions that already hold their memory.
for s in leaky1 leaky2 leaky3; do
        session "$s" leaky leaky-password
        say "$s" "$(hold 40 1)"
        [[ $said == held ]] || fail "$s: $said"
done
session app app app-password
say app "SELECT 6 * 7"
leaky_ids=$(ids leaky)
held=$(server_rss)
if [[ $flavour == mysql-* ]]; then
        counted=$(server_sql "SELECT CONCAT(FORMAT_BYTES(SUM(CONTROLLED_MEMORY)), ' controlled of ', FORMAT_BYTES(SUM(TOTAL_MEMORY)))
                              FROM performance_schema.threads WHERE PROCESSLIST_USER = 'leaky'")
        server_sql "SET GLOBAL global_connection_memory_tracking = ON"
        sleep 1
        all=$(server_sql "SHOW GLOBAL STATUS LIKE 'Global_connection_memory'" | cut -f2)
        global=$((all + LIMIT))
        server_sql "SET GLOBAL connection_memory_limit = $LIMIT; SET GLOBAL global_connection_memory_limit = $global"
        armed="connection_memory_limit $(mib $LIMIT), global_connection_memory_limit $(mib $global)"
        armed+=" (Global_connection_memory $(mib "$all") + $(mib $LIMIT)), global_connection_memory_tracking ON"
else
        counted=$(server_sql "SELECT CONCAT(ROUND(SUM(MEMORY_USED) / 1048576, 1), 'M in MEMORY_USED')
                              FROM information_schema.PROCESSLIST WHERE USER = 'leaky'")
        server_sql "SET GLOBAL max_session_mem_used = $LIMIT"
        armed="max_session_mem_used $(mib $LIMIT)"
fi
echo "$name: three sessions holding 40M each ($counted), RSS $(mib "$held"); armed: $armed"
for s in leaky1 leaky2 leaky3; do
        say "$s" "$(hold 20 41)"
        [[ $said == held ]] || fail "$s: growing 20M more under the limits: $said"
done
say app "SELECT 6 * 7"
[[ $said == 42 ]] || fail "app: $said"
grown=$(server_rss)
[[ $(ids leaky) == "$leaky_ids" ]] || fail "sessions ended under the limits: $leaky_ids -> $(ids leaky)"
(( $(errors leaky1) + $(errors leaky2) + $(errors leaky3) + $(errors app) == 0 )) || fail "errors under the limits"
(( grown > held )) || fail "RSS fell under the limits: $(mib "$held") -> $(mib "$grown")"
echo "$name: ok: the limits: 0 sessions ended, 0 errors, RSS $(mib "$held") -> $(mib "$grown")" \
     "(the three grew 20M each under a $(mib $LIMIT) limit)"
for id in $leaky_ids; do server_sql "KILL CONNECTION $id"; done
for _ in $(seq 100); do [[ -z $(ids leaky) ]] && break; sleep 0.1; done
[[ -z $(ids leaky) ]] || fail "KILL: sessions still there: $(ids leaky)"
trim=$("$memgov" trim --pid "$SERVER_PID" --method ptrace 2>&1) || fail "trim: $trim"
killed=$(server_rss)
say app "SELECT 6 * 7"
[[ $said == 42 && $(errors app) == 0 ]] || fail "app after KILL: $said"
# (At least half of the 180M the three held: the allocator keeps some of what they freed.)
(( grown - killed >= 90 * M )) || fail "KILL and trim gave back only $(mib $((grown - killed)))"
echo "$name: ok: KILL CONNECTION: 3 sessions ended, RSS $(mib "$grown") -> $(mib "$killed")" \
     "($(mib $((grown - killed))) back), the normal client without an error"

# ---- 2. a new session's statement over the limit.
session big leaky leaky-password
if [[ $flavour == mysql-* ]]; then
        recursion="SET SESSION cte_max_recursion_depth = 1000000"
else
        recursion="SET SESSION max_recursive_iterations = 1000000"
fi
sort="$recursion; SET SESSION sort_buffer_size = 67108864;
      WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 300000)
      SELECT COUNT(*) FROM (SELECT n, REPEAT('z', 100) AS p FROM r ORDER BY p, n DESC) d"
say big "$sort"
big_said=$said
say big "SELECT 'still connected'"
after=$said
echo "$name: a statement over the limit: $(head -1 <<<"$big_said"); then: $(head -1 <<<"$after")"
if [[ $flavour == mysql-* ]]; then
        [[ $big_said == *"ERROR 4082"*"Connection memory limit $LIMIT bytes exceeded"* ]] ||
                fail "the statement over connection_memory_limit: $big_said"
        [[ $after == *"ERROR 2013"* || $after == *"ERROR 2006"* ]] || fail "the connection was not closed: $after"
else
        [[ $big_said == *"ERROR 1290"*"max-session-mem-used=$LIMIT"* ]] ||
                fail "the statement over max_session_mem_used: $big_said"
        [[ $after == "still connected" ]] || fail "the session did not stay: $after"
fi
say app "SELECT 6 * 7"
[[ $said == 42 && $(errors app) == 0 ]] || fail "app beside the statement over the limit: $said"
echo "$name: ok: the statement over the limit ended by the server$([[ $flavour == mysql-* ]] && echo ", with its connection" || echo ", the session kept"); the normal client without an error"

# ---- 3. put back.
for v in $vars; do server_sql "SET GLOBAL $v = ${found[$v]}"; done
for v in $vars; do
        now=$(server_sql "SELECT @@GLOBAL.$v")
        [[ $now == "${found[$v]}" ]] || fail "$v: $now, found ${found[$v]}"
done
echo "$name: ok: $vars put back as found"
