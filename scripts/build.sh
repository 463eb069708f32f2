#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Configures (once) and builds memgov in DIR (default: build/) with extra meson options.
#   build.sh [DIR] [MESON_OPTION...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [[ ! -f "$dir/build.ninja" ]]; then
        meson setup "$dir" "$@" >/dev/null
fi
ninja -C "$dir"
