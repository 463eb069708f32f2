# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The admission rung's steps against a real server, shared by admit-mariadbd.sh (the host's
# MariaDB) and admit-servers.sh (the chroots' servers). The sourcing script sets ADMIT_RUN
# (memgov-admit-run) and ADMIT_PID, defines fail MESSAGE, and runs the storm as the coprocess
# STORM (memgov-conn-storm).
#   run ACTION DRY HEADROOM FLOOR   one admit_run() with what memgov remembers ($memory); its
#                                   result in the variables r_<key>, and memory updated
#   storm_cmd COMMAND               a command to the storm; its answer in reply
#   stop_storm                      the storm told to quit and waited for (for an exit trap too)
memory="0 0 0"
r_error='' r_explained='' r_value='' r_value_before='' r_baseline='' r_memory='' r_detail=''
run() {
        local out line
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
