#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The admission rung on a real server of another flavour, from its Debian chroot (MySQL 9.7,
# MariaDB 11.8), as admit-mariadbd.sh runs it on the host's MariaDB: a storm of sessions of an
# account without privileges held open (through the socket as the host sees it, in the server's
# root; on MySQL the account logs in with its default caching_sha2_password); a dry run changes
# nothing; the lowering sets max_connections to the clients connected plus the headroom; the
# headroom's connections get in, the next one is refused with error 1040 while every session
# already there still answers and root still connects; the restore puts back exactly the value
# found; a lowering with room for the connections that fit (admit.fit); a lowering carried to a
# new server process ends the clients over it, the longest in one statement first, then the
# newest, and an administrator still logs in beside memgov's kept session.
#   admit-servers.sh FLAVOUR MEMGOV_ADMIT_RUN MEMGOV_CONN_STORM
set -euo pipefail
flavour=$1
admit_run=$2
conn_storm=$3
here=$(cd "$(dirname "$0")/.." && pwd)
name=admit-$flavour
# shellcheck source=../lib/servers.sh
. "$here/lib/servers.sh"
# shellcheck source=../lib/admit-steps.sh
. "$here/lib/admit-steps.sh"
[[ $(id -u) == 0 ]] || { echo "$name: SKIP: needs root (chroot, mount namespaces, debootstrap)" >&2; exit 77; }
fail() { echo "$name: FAIL: $*" >&2; exit 1; }

CONFIGURED=80
N_STORM=50
HEADROOM=10
FLOOR=10

server_provision "$flavour"
dir=$(mktemp -d /tmp/memgov-admit-XXXXXX)
trap 'stop_storm; server_stop; rm -rf "$dir"' EXIT
server_start "$dir" --max-connections=$CONFIGURED || exit $?

max_once() { server_sql "SELECT @@GLOBAL.max_connections"; }
status() { server_sql "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
ADMIT_RUN=$admit_run
ADMIT_PID=$SERVER_PID

server_sql "CREATE USER storm@localhost IDENTIFIED BY 'memgov-test-password'"
coproc STORM { "$conn_storm" "$(server_host_socket)" storm memgov-test-password $N_STORM 2>&1; }
STORM_PID=$!
IFS= read -r -t 120 opened <&"${STORM[0]}" || fail "the storm did not open its sessions"
[[ $opened == "open $N_STORM" ]] || fail "the storm: $opened"
echo "$name: $(server_sql "SELECT VERSION()"), max_connections $(max); $N_STORM sessions open," \
     "Threads_connected $(status Threads_connected)"

run lower 1 $HEADROOM $FLOOR
[[ $r_error == 0 && $r_detail == "would lower "* && $(max) == "$CONFIGURED" && $memory == "0 0 0" ]] ||
        fail "dry run: error $r_error, max_connections $(max), memory $memory: $r_detail"
echo "$name: ok: dry run: $r_detail"

# The server may still count the probe of its socket a moment after it closed: one more.
within() { (( $1 == $2 || $1 == $2 + 1 )); }
run lower 0 $HEADROOM $FLOOR
want=$r_value
within "$want" $((N_STORM + HEADROOM)) && [[ $r_error == 0 && $(max) == "$want" && $r_value_before == "$CONFIGURED" &&
   $r_baseline == "$CONFIGURED" ]] ||
        fail "lower: error $r_error, max_connections $(max), reported $r_value_before -> $r_value, memory $memory: $r_detail"
echo "$name: ok: lower: $r_detail"

admit_fill_headroom $N_STORM "$want"
echo "$name: ok: $((want - N_STORM)) more got in, the next: ${refused#connect }; sessions: $reply"
[[ $(server_sql "SELECT 6 * 7") == 42 ]] || fail "root cannot connect at max_connections"

run restore 0 0 0
[[ $r_error == 0 && $r_value == "$CONFIGURED" && $(max) == "$CONFIGURED" && $memory == "0 0 0" ]] ||
        fail "restore: error $r_error, max_connections $(max), memory $memory: $r_detail"
echo "$name: ok: restore: $r_detail"
storm_cmd connect
[[ $reply == "connect ok" ]] || fail "a connection once restored: $reply"
# A lowering with room for the connections that fit (admit.fit), more than the headroom.
MEMGOV_TEST_FIT=$((HEADROOM + 5)) run lower 0 $HEADROOM $FLOOR
within "$(max)" $((want + 1 + HEADROOM + 5)) && [[ $r_error == 0 && $r_detail == *" plus $((HEADROOM + 5)) that fit)"* ]] ||
        fail "lower with room for what fits: error $r_error, max_connections $(max): $r_detail"
echo "$name: ok: with room for what fits: $r_detail"
run restore 0 0 0
[[ $r_error == 0 && $(max) == "$CONFIGURED" && $memory == "0 0 0" ]] ||
        fail "restore after the lowering with room for what fits: error $r_error, memory $memory: $r_detail"
admit_carry_step "$name"
run restore 0 0 0
[[ $r_error == 0 && $(max) == "$CONFIGURED" ]] || fail "restore after the carried lowering: $r_detail"
stop_storm
echo "$name: ok"
