#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs what is missing, builds memgov, and runs the whole test suite: unit tests, replay
# golden files, the daemon on fake trees, injection into live processes, a real MariaDB, real
# MySQL 9.7 and MariaDB 11.8 servers from Debian chroots, the container build; beside them the
# same host tests under AddressSanitizer and UndefinedBehaviorSanitizer; then the tests on a real
# cgroup v2 kernel in a VM, and a short run of every fuzz target.
# Exit status 0 only when everything passed.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup-deps.sh --test
echo "== test servers (Debian chroots, built once and cached: docs/testing.md)"
./scripts/provision-servers.sh

echo "== build"
./scripts/build.sh build

# The host's tests, and beside them the same under AddressSanitizer and
# UndefinedBehaviorSanitizer: both mostly wait (servers starting, daemons sampling at their
# pace), and the sanitizers' build fills that time. Each meson run keeps its own tests that are
# not parallel apart from one another; no test shares a server, a socket, a port or a cgroup with
# another (each works in a directory of its own, on a port the kernel chose). The sanitizers'
# output comes after the host's tests, whole.
asan_log=$(mktemp "${TMPDIR:-/tmp}/memgov-asan.XXXXXX")
trap 'rm -f "$asan_log"' EXIT
(
        set -e
        ./scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
                meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite replay --suite integration \
                --suite inject --suite faults
) >"$asan_log" 2>&1 &
asan=$!
echo "== tests (the same under ASan and UBSan run beside them)"
# The fault tests run once, under the sanitizers, where a leak or an overflow shows.
host=0
meson test -C build --print-errorlogs --num-processes 2 --no-suite faults --no-suite vm || host=$?
sanitized=0
wait "$asan" || sanitized=$?
echo "== tests under ASan and UBSan"
cat "$asan_log"
(( host == 0 )) || { echo "== the host's tests failed" >&2; exit 1; }
(( sanitized == 0 )) || { echo "== the tests under ASan and UBSan failed" >&2; exit 1; }

echo "== tests on a real cgroup v2 kernel (VMs, two at a time)"
# On their own: a VM beside another VM, not beside the host's tests.
meson test -C build --print-errorlogs --num-processes 2 --suite vm

echo "== fuzzing: every target for a few seconds (scripts/fuzz.sh; longer runs in docs/fuzzing.md)"
./scripts/fuzz.sh --seconds 3

echo "== all tests passed"
