#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The admission rung against a real mariadbd (Debian's package), started by the test with
# max_connections 200 and a storm of 150 sessions of an account without privileges held open:
# the server's socket descriptors (the sampler's connection count) follow its sessions; a dry
# run changes nothing; the lowering sets max_connections to the clients connected plus the
# headroom; the headroom's connections get in, the next one is refused with error 1040 while every
# session already there still answers and memgov's own session (a SUPER account) still connects;
# the restore puts back exactly the value found; a value someone else set meanwhile is left as it
# is; nothing to lower and an account without the privilege are explained refusals; a lowering
# carried to a new server process ends the clients over it, the longest in one statement first, then the
# newest, and an administrator still logs in beside memgov's kept session.
#   admit-mariadbd.sh MEMGOV_ADMIT_RUN MEMGOV_CONN_STORM MEMGOV
set -euo pipefail
admit_run=$1
conn_storm=$2
memgov=$3
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../lib/mariadb.sh
. "$here/lib/mariadb.sh"
# shellcheck source=../lib/admit-steps.sh
. "$here/lib/admit-steps.sh"
[[ $(id -u) == 0 ]] || { echo "admit-mariadbd: SKIP: needs root to run mariadbd as mysql" >&2; exit 77; }
fail() { echo "admit-mariadbd: FAIL: $*" >&2; exit 1; }

CONFIGURED=200
N_STORM=150
HEADROOM=10
FLOOR=10

dir=$(mktemp -d /tmp/memgov-admit-XXXXXX)
trap 'stop_storm; mariadb_stop; rm -rf "$dir"' EXIT
mariadb_start "$dir" --max-connections=$CONFIGURED --innodb-buffer-pool-size=64M || exit $?

max_once() { mariadb_sql "SELECT @@GLOBAL.max_connections"; }
status() { mariadb_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
sockets() { find "/proc/$MARIADB_PID/fd" -lname 'socket:*' 2>/dev/null | wc -l; }
ADMIT_RUN=$admit_run
ADMIT_PID=$MARIADB_PID

mariadb_sql "CREATE USER storm@localhost IDENTIFIED BY 'memgov-test-password'"
idle_sockets=$(sockets) rss_idle=$(mariadb_rss)

# The storm: 150 sessions of an account without privileges, held open.
coproc STORM { "$conn_storm" "$(mariadb_client_socket)" storm memgov-test-password $N_STORM; }
STORM_PID=$!
IFS= read -r -t 120 opened <&"${STORM[0]}" || fail "the storm did not open its sessions"
[[ $opened == "open $N_STORM" ]] || fail "the storm: $opened"
connected=$(status Threads_connected) storm_sockets=$(sockets)
echo "admit-mariadbd: $(mariadbd --version | cut -d' ' -f2-4); max_connections $(max);" \
     "$N_STORM sessions open: Threads_connected $connected, socket descriptors $idle_sockets idle -> $storm_sockets," \
     "threads $(awk '/^Threads:/ {print $2}' "/proc/$MARIADB_PID/status")"
# What the storm costs and why reset cannot see it: each session holds far less than
# reset.min-memory (64M), while together they grew the server.
rss_storm=$(mariadb_rss)
largest=$(mariadb_sql "SELECT MAX(MEMORY_USED) FROM information_schema.PROCESSLIST WHERE USER = 'storm'")
echo "admit-mariadbd: the storm: RSS $((rss_idle / 1048576))M -> $((rss_storm / 1048576))M" \
     "($(( (rss_storm - rss_idle) / N_STORM / 1024 ))K a session); the largest session holds $((largest / 1024))K"
(( largest < 64 * 1048576 )) || fail "a storm session holds $largest bytes"
# The sampler's connection count (socket descriptors) is the sessions plus the listener(s).
(( storm_sockets >= N_STORM && storm_sockets <= N_STORM + idle_sockets + 2 )) ||
        fail "$storm_sockets socket descriptors for $N_STORM sessions ($idle_sockets idle)"

# The sampler's count as the daemon records it: memgov record's connections column.
"$memgov" record --pid "$MARIADB_PID" -i 200ms -d 1s -o "$dir/trace.csv" 2>"$dir/record.log" ||
        fail "memgov record: $(cat "$dir/record.log")"
recorded=$(python3 -c '
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
print(" ".join(r["connections"] for r in rows))' "$dir/trace.csv")
for c in $recorded; do
        (( c == storm_sockets )) || fail "memgov record counted $c connections, the server holds $storm_sockets sockets: $recorded"
done
[[ -n $recorded ]] || fail "memgov record wrote no connections column"
echo "admit-mariadbd: ok: memgov record's connections column: $recorded"

# A dry run: everything but the SET.
run lower 1 $HEADROOM $FLOOR
[[ $r_error == 0 && $r_detail == "would lower "* && $(max) == "$CONFIGURED" && $memory == "0 0 0" ]] ||
        fail "dry run: error $r_error, max_connections $(max), memory $memory: $r_detail"
echo "admit-mariadbd: ok: dry run: $r_detail"

# Lower: to the clients connected (the storm; not memgov's own session) plus the headroom. The
# server may still count memgov's probe of its socket, a moment after it closed: one more.
within() { (( $1 == $2 || $1 == $2 + 1 )); }
# The daemon's lowering: the clients counted by the kernel (the server's sockets, memgov's own
# session among them, as in the daemon's samples) and only max_connections asked of the server.
errors_before=$(status Connection_errors_max_connections) aborted_before=$(status Aborted_connects)
counted=$(( $(sockets) + 1 ))
MEMGOV_TEST_CONNECTIONS=$counted run lower 0 $HEADROOM $FLOOR
want=$r_value
[[ $want == $((counted - 1 + HEADROOM)) && $r_error == 0 && $(max) == "$want" && $r_value_before == "$CONFIGURED" &&
   $r_baseline == "$CONFIGURED" && $memory == "$CONFIGURED $want -" ]] ||
        fail "lower: error $r_error, max_connections $(max), reported $r_value_before -> $r_value, memory $memory: $r_detail"
echo "admit-mariadbd: ok: lower on the kernel's count ($counted with memgov's session): $r_detail"

# The headroom's connections get in, the next one is refused with 1040, the storm still answers.
admit_fill_headroom $N_STORM "$want"
echo "admit-mariadbd: ok: $((want - N_STORM)) more got in, the next: ${refused#connect }; sessions: $reply"
# A SUPER account (memgov's) still gets in: the connection the server keeps for it.
[[ $(mariadb_sql "SELECT 6 * 7") == 42 ]] || fail "root cannot connect at max_connections"
# MariaDB counts the refusal at login in Aborted_connects (with memgov's own probe of the socket,
# a connection closed before the handshake), not in Connection_errors_max_connections, which
# counts only those refused as they are accepted.
errors=$(status Connection_errors_max_connections) aborted=$(status Aborted_connects)
echo "admit-mariadbd: Connection_errors_max_connections $errors_before -> $errors, Aborted_connects $aborted_before -> $aborted"
(( aborted > aborted_before )) || fail "the refused connection is not in Aborted_connects"

# Nothing to lower: max_connections at the clients plus the headroom already.
run lower 0 $HEADROOM $FLOOR
[[ $r_error == -114 && $r_explained == 1 && $r_detail == *"nothing to lower"* && $(max) == "$want" ]] ||
        fail "a second lowering: error $r_error, max_connections $(max): $r_detail"
[[ $memory == "$CONFIGURED $want -" ]] || fail "a refused lowering changed the memory: $memory"
echo "admit-mariadbd: ok: again: $r_detail"

# Restore: memgov connects at max_connections (all taken), and puts back exactly the value found.
run restore 1 0 0
[[ $r_error == 0 && $r_detail == "would put max_connections back"* && $(max) == "$want" ]] ||
        fail "a dry-run restore: error $r_error, max_connections $(max): $r_detail"
run restore 0 0 0
[[ $r_error == 0 && $r_value == "$CONFIGURED" && $(max) == "$CONFIGURED" && $memory == "0 0 0" &&
   $r_detail == *"Connection_errors_max_connections "* && $r_detail != *" -> "*" -> "* ]] ||
        fail "restore: error $r_error, max_connections $(max), memory $memory: $r_detail"
echo "admit-mariadbd: ok: restore: $r_detail"
# memgov's own connections at the limit: its socket probe held the slot kept for SUPER a moment,
# the connection right after it was refused as it was accepted (counted here) and tried again.
echo "admit-mariadbd: memgov's connections refused at accept and tried again: $(status Connection_errors_max_connections)"
storm_cmd connect
[[ $reply == "connect ok" ]] || fail "a connection once restored: $reply"
storm_cmd ping
[[ $reply == "alive $((want + 1)) of $((want + 1))" ]] || fail "the sessions once restored: $reply"

# A value someone else set meanwhile is theirs: not fought, memgov forgets its own. This lowering
# leaves room for the connections that fit (admit.fit), more than the headroom.
MEMGOV_TEST_FIT=$((HEADROOM + 15)) run lower 0 $HEADROOM $FLOOR
within "$(max)" $((want + 1 + HEADROOM + 15)) && [[ $r_error == 0 && $r_detail == *" that fit)"* ]] ||
        fail "lower again, with room for what fits: error $r_error, max_connections $(max): $r_detail"
echo "admit-mariadbd: ok: with room for what fits: $r_detail"
mariadb_sql "SET GLOBAL max_connections = 190"
run restore 0 0 0
[[ $r_error == 0 && $(max) == 190 && $memory == "0 0 0" && $r_detail == *"someone else"* ]] ||
        fail "restore over another's value: error $r_error, max_connections $(max), memory $memory: $r_detail"
echo "admit-mariadbd: ok: another's value: $r_detail"
run restore 0 0 0
[[ $r_error == 0 && $(max) == 190 && $r_detail == *"nothing to put back"* ]] ||
        fail "restore with nothing remembered: error $r_error, max_connections $(max): $r_detail"
mariadb_sql "SET GLOBAL max_connections = $CONFIGURED"

# An account without the privilege: an explained refusal, max_connections as it was.
mariadb_sql "CREATE USER memgov_nopriv@localhost IDENTIFIED BY 'memgov-test-password';
             GRANT PROCESS ON *.* TO memgov_nopriv@localhost"
printf '[client]\nuser=memgov_nopriv\npassword=memgov-test-password\n' >"$dir/nopriv.cnf"
chmod 600 "$dir/nopriv.cnf"
MEMGOV_TEST_OPTION_FILE=$dir/nopriv.cnf run lower 0 $HEADROOM $FLOOR
[[ $r_error == -13 && $r_explained == 1 && $r_detail == *"SUPER, or CONNECTION ADMIN"* && $(max) == "$CONFIGURED" && $memory == "0 0 0" ]] ||
        fail "an account without the privilege: error $r_error, max_connections $(max): $r_detail"
echo "admit-mariadbd: ok: without the privilege: $r_detail"
# On MariaDB, CONNECTION ADMIN alone is enough (the privilege the refusal names, beside SUPER).
mariadb_sql "GRANT CONNECTION ADMIN ON *.* TO memgov_nopriv@localhost"
MEMGOV_TEST_OPTION_FILE=$dir/nopriv.cnf run lower 0 $HEADROOM $FLOOR
within "$(max)" $((want + 1 + HEADROOM)) && [[ $r_error == 0 ]] ||
        fail "with CONNECTION ADMIN: error $r_error, max_connections $(max): $r_detail"
echo "admit-mariadbd: ok: with CONNECTION ADMIN only: $r_detail"
mariadb_sql "SET GLOBAL max_connections = $CONFIGURED"

admit_carry_step admit-mariadbd
run restore 0 0 0
[[ $r_error == 0 && $(max) == "$CONFIGURED" ]] || fail "restore after the carried lowering: $r_detail"

stop_storm
echo "admit-mariadbd: ok: the storm's sessions ended; socket descriptors $(sockets)"
