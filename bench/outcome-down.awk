# SPDX-License-Identifier: GPL-2.0-or-later
# Seconds the server did not answer, from bench/outcome's probe log ("UPTIME up|down" a line, a
# probe every half second; a probe that gets no answer waits out its 2 s timeout first): each
# failed probe counts until the next probe starts, the last one for half a second.
#   awk -f outcome-down.awk probe.log
$2 == "down" || $2 == "up" {
        if (seen && last == "down")
                down += $1 - t
        seen = 1; t = $1; last = $2
}
END {
        if (last == "down")
                down += 0.5
        printf "%.1f\n", down
}
