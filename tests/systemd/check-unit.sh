#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# memgov@.service as built: systemd accepts it (systemd-analyze verify, with ExecStart pointing
# at this build's binary) and its exposure score stays at most 2.5 (systemd-analyze security
# --offline), with and without the network drop-in.
#   check-unit.sh BUILT_UNIT MEMGOV SOURCE_ROOT
set -euo pipefail
unit=${1:?} memgov=${2:?} src=${3:?}
command -v systemd-analyze >/dev/null || { echo "check-unit: SKIP: no systemd-analyze" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "check-unit: FAIL: $*" >&2; exit 1; }

sed "s|^ExecStart=.*|ExecStart=$memgov run --unit %i.service|" "$unit" >"$tmp/memgov@.service"
# verify wants the unit the instance is ordered after; an empty one stands in for it.
printf '[Service]\nExecStart=/bin/true\n' >"$tmp/mariadb.service"
(cd "$tmp" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "$tmp/memgov@mariadb.service") \
        >"$tmp/verify.log" 2>&1 || { cat "$tmp/verify.log" >&2; fail "systemd-analyze verify refused the unit"; }
grep -v -e 'mariadb.service' -e '^$' "$tmp/verify.log" >&2 && fail "systemd-analyze verify warned about the unit"
echo "check-unit: ok: systemd-analyze verify accepts memgov@mariadb.service"

score() {
        (cd "$tmp" && systemd-analyze security --offline=true --no-pager "$1" 2>&1) |
                awk '/Overall exposure level/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+$/) print $i }'
}
plain=$(score "$tmp/memgov@.service")
[[ -n $plain ]] || fail "no exposure score"
mkdir -p "$tmp/net"
cat "$tmp/memgov@.service" >"$tmp/net/memgov@.service"
sed -n '/^\[Service\]/,$p' "$src/systemd/memgov-network.conf" | tail -n +2 >>"$tmp/net/memgov@.service"
net=$(score "$tmp/net/memgov@.service")
for s in "$plain" "$net"; do
        awk -v s="$s" 'BEGIN { exit !(s <= 2.5) }' || fail "exposure score $s is above 2.5"
done
echo "check-unit: ok: exposure score $plain (with the network drop-in: $net), at most 2.5"
