#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The quick start: installs what memgov needs, builds it, and runs memgov demo: a real MariaDB
# server whose memory grows, governed live, then a summary and a chart (in ./memgov-demo).
# Needs root (it installs packages, creates a cgroup, and starts a VM where the host has no
# cgroup v2 memory controller). Arguments go to memgov demo (e.g. -o DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
        exec sudo "$0" "$@"
fi
./scripts/setup-deps.sh --demo
[[ -x build/memgov ]] || echo "demo.sh: building memgov in build/ (a minute)"
./scripts/build.sh --quiet build
exec ./build/memgov demo "$@"
