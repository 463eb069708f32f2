#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs what is missing, builds memgov, and runs the whole test suite: unit tests, replay
# golden files, the same under AddressSanitizer and UndefinedBehaviorSanitizer, and the tests
# on a real cgroup v2 kernel in a VM. Exit status 0 only when everything passed.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup-deps.sh --test

echo "== build"
./scripts/build.sh build
echo "== tests"
meson test -C build --print-errorlogs --num-processes 2

echo "== tests under ASan and UBSan"
./scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite replay --suite integration --suite inject

echo "== all tests passed"
