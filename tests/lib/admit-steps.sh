# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The admission rung's steps against a real server, shared by admit-mariadbd.sh (the host's
# MariaDB) and admit-servers.sh (the chroots' servers). The sourcing script sets ADMIT_RUN
# (memgov-admit-run) and ADMIT_PID, defines fail MESSAGE and max_once (max_connections, asked
# once), and runs the storm as the coprocess STORM (memgov-conn-storm).
#   run ACTION DRY HEADROOM FLOOR   one admit_run() with what memgov remembers ($memory); its
#                                   result in the variables r_<key>, and memory updated
#   storm_cmd COMMAND               a command to the storm; its answer in reply
#   stop_storm                      the storm told to quit and waited for (for an exit trap too)
#   admit_carry_step NAME           a lowering carried to a new server process (max, CONFIGURED and
#                                   FLOOR from the sourcing script), more than 30 storm sessions in
# max_connections as the server says, asked again while the server refuses the test's own query
# with error 1040 for a moment: right after sessions were ended their threads still finish (a
# KILL returns before its thread is gone), and the slot kept for an administrator may still be
# held by the driver's connection as it closes. The sourcing script defines max_once.
max() {
        local out err i
        err=$(mktemp)
        for i in $(seq 20); do
                out=$(max_once 2>"$err") && { rm -f "$err"; echo "$out"; return 0; }
                grep -q 1040 "$err" || break
                sleep 0.25
        done
        cat "$err" >&2
        rm -f "$err"
        return 1
}

memory="0 0 0"
r_error='' r_explained='' r_value='' r_value_before='' r_baseline='' r_memory='' r_detail='' r_admin=''
run() {
        local out line
        r_admin=''
        # shellcheck disable=SC2086 # memory is three numbers
        out=$("$ADMIT_RUN" "$ADMIT_PID" "$1" "$2" "$3" "$4" $memory) || fail "$1: the driver failed: $out"
        while IFS= read -r line; do
                printf -v "r_${line%%=*}" '%s' "${line#*=}"
        done <<<"$out"
        memory=$r_memory
}
stop_storm() {
        if [[ -n ${STORM_PID:-} ]]; then
                echo quit >&"${STORM[1]}" 2>/dev/null || true
                wait "$STORM_PID" 2>/dev/null || true
                STORM_PID=
        fi
}
reply=
storm_cmd() {
        echo "$1" >&"${STORM[1]}"
        IFS= read -r -t 60 reply <&"${STORM[0]}" || fail "the storm did not answer $1"
}

# At max_connections WANT with N sessions of the storm open: the headroom's connections get in,
# the next one is refused with 1040 (in refused), and every session still answers.
refused=
admit_fill_headroom() { # N WANT
        local i
        for i in $(seq $(($2 - $1))); do
                storm_cmd connect
                [[ $reply == "connect ok" ]] || fail "connection $i of the headroom: $reply"
        done
        storm_cmd connect
        [[ $reply == "connect error 1040 "* ]] || fail "a connection past max_connections: $reply"
        refused=$reply
        storm_cmd ping
        [[ $reply == "alive $2 of $2" ]] || fail "the sessions at max_connections: $reply"
}

# Carried to a new server process (its storm's clients back before the lowering could be there):
# max_connections to the 20 clients before the storm plus a headroom of 10, and the clients over
# 29 ended: memgov's own session, kept open as the daemon keeps it, is the 30th. The 3 oldest of
# the storm sit in a statement (SELECT SLEEP): they go first, then the newest of the idle ones;
# by the order they came in they would have stayed. While memgov's session is still open, an
# administrator (root) still logs in, on the connection the server keeps for SUPER. The ones
# kept still answer; once the driver's session is closed, one client gets in in its place and
# the next is refused. A dry run ends none.
admit_carry_step() { # NAME
        local in
        storm_cmd ping
        in=${reply#alive }
        in=${in%% of*}
        (( in > 30 )) && [[ $reply == "alive $in of $in" ]] || fail "the storm before the carried lowering: $reply"
        storm_cmd "busy 3"
        [[ $reply == "busy 3" ]] || fail "3 of the storm's sessions in a statement: $reply"
        sleep 2 # a statement of 1 s or more, as the processlist counts it
        local order="the longest in one statement first (3 of them in one for 1s or more, up to "
        MEMGOV_TEST_ADMIN=1 MEMGOV_TEST_CONNECTIONS=21 run carry 1 10 "$FLOOR"
        [[ $r_error == 0 && $r_detail == "would lower "*"; would end $((in - 29)) of the $in client(s) in, $order"*"), then the newest" ]] ||
                fail "a dry-run carried lowering: error $r_error, max_connections $(max): $r_detail"
        storm_cmd "busy?"
        [[ $reply == "busy 3 of 3" ]] || fail "a dry run ended sessions in a statement: $reply"
        storm_cmd ping
        [[ $reply == "alive $((in - 3)) of $in" ]] || fail "a dry run ended sessions: $reply"
        echo "$1: ok: carried, dry run: $r_detail"
        MEMGOV_TEST_ADMIN=1 MEMGOV_TEST_CONNECTIONS=21 run carry 0 10 "$FLOOR"
        [[ $r_error == 0 && $(max) == 30 && $memory == "$CONFIGURED 30 -" &&
           $r_detail == *"; ended $((in - 29)) of the $in client(s) in, $order"*"), then the newest; 29 kept beside memgov's own session; "*"; RSS "* ]] ||
                fail "the carried lowering: error $r_error, max_connections $(max), memory $memory: $r_detail"
        [[ $r_admin == ok ]] || fail "an administrator's login beside memgov's kept session after the carried lowering: $r_admin"
        storm_cmd "busy?"
        [[ $reply == "busy 0 of 3" ]] || fail "the sessions in a statement after the carried lowering: $reply"
        storm_cmd ping
        [[ $reply == "alive 29 of $in" ]] || fail "the sessions after the carried lowering: $reply"
        # The driver's kept session closed as it exited (the daemon's stays): one client in its
        # place (asked again while the server still counts a session closed a moment before, as
        # max does), the next one refused.
        for _ in $(seq 20); do
                storm_cmd connect
                [[ $reply == "connect error 1040 "* ]] || break
                sleep 0.25
        done
        [[ $reply == "connect ok" ]] || fail "a connection in the place of memgov's session: $reply"
        storm_cmd connect
        [[ $reply == "connect error 1040 "* ]] || fail "a connection after the carried lowering: $reply"
        echo "$1: ok: carried: $r_detail; an administrator's login beside memgov's session: $r_admin; the storm: $reply"
}
