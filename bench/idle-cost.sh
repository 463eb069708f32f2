#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Idle cost, side by side: memgov (default policy, governing a calm cgroup on a real cgroup v2
# kernel) and earlyoom (Debian's package, with the arguments of its Debian service) watching the
# same VM for the same minutes: CPU time, wakeups and resident memory of each, and their ratios.
# earlyoom's binary is taken from its Debian package, unpacked into the build tree, never
# installed (its service would start on this host).
#   bench/idle-cost.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=$(cd "${1:?usage: idle-cost.sh BUILD_DIR [SECONDS]}" && pwd)
seconds=${2:-120}
here=$(cd "$(dirname "$0")/.." && pwd)
cache=$build/bench-cache/earlyoom
if [[ ! -x $cache/usr/bin/earlyoom ]]; then
        tmp=$(mktemp -d)
        (cd "$tmp" && apt-get download earlyoom >/dev/null 2>&1) ||
                { (apt-get update -qq && cd "$tmp" && apt-get download earlyoom >/dev/null) ||
                  { echo "idle-cost: cannot download Debian's earlyoom package" >&2; rm -rf "$tmp"; exit 77; }; }
        mkdir -p "$cache"
        dpkg-deb -x "$tmp"/earlyoom_*.deb "$cache"
        rm -rf "$tmp"
fi
exec "$here/tests/vm/run-vm.sh" --timeout $((seconds + 240)) --env "MEMGOV_BUILD=$build" \
        --env "EARLYOOM=$cache/usr/bin/earlyoom" --env "BENCH_SECONDS=$seconds" "$here/bench/idle-cost-guest.sh"
