#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configures and builds memgov in DIR (default: build/) with extra meson options.
#   build.sh [--quiet] [DIR] [MESON_OPTION...]
# The first time, meson setup DIR OPTIONS; later, the options given are applied to DIR (meson
# configure), so that a directory configured before (say without the tests) gets them.
# --quiet: nothing on the terminal when all goes well. Whatever fails, what meson or ninja said
# is shown, and the exit status is not 0.
set -euo pipefail
cd "$(dirname "$0")/.."
quiet=0
if [[ ${1:-} == --quiet ]]; then
        quiet=1
        shift
fi
dir=${1:-build}
shift || true

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Runs a step with its output kept; on failure the output goes to stderr with the step named.
step() {
        if "$@" >"$log" 2>&1; then
                return 0
        fi
        cat "$log" >&2
        echo "build.sh: failed: $*" >&2
        exit 1
}

if [[ ! -f "$dir/build.ninja" ]]; then
        # A directory a failed setup left behind is set up from scratch.
        [[ ! -d "$dir/meson-private" ]] || rm -rf "$dir"
        step meson setup "$dir" "$@"
        # What a reader should know of the configuration: meson's messages and warnings.
        (( quiet )) || grep -E '^(Message|WARNING):' "$log" >&2 || true
elif (( $# )); then
        step meson configure "$dir" "$@"
fi
if (( quiet )); then
        step ninja -C "$dir"
else
        ninja -C "$dir"
fi
