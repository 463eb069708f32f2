#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs what is missing, builds memgov, and runs the whole test suite: unit tests, replay
# golden files, the daemon on fake trees, injection into live processes, a real MariaDB, real
# MySQL 9.7 and MariaDB 11.8 servers from Debian chroots, the container build; then the same host
# tests under AddressSanitizer and UndefinedBehaviorSanitizer, the tests on a real cgroup v2
# kernel in a VM, and a short run of every fuzz target.
# Exit status 0 only when everything passed.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase says how long it took: where the time goes, run by run.
phase_start=$SECONDS phase_name=
phase() {
        [[ -z $phase_name ]] || echo "== $phase_name: $((SECONDS - phase_start)) s (total $SECONDS s)"
        phase_name=$1 phase_start=$SECONDS
        [[ -z $1 ]] || echo "== $1"
}

phase "setup"
./scripts/setup-deps.sh --test
phase "test servers (Debian chroots, built once and cached: docs/testing.md)"
./scripts/provision-servers.sh

phase "build"
./scripts/build.sh build -Dtests=enabled

phase "tests"
# The suites that run under the sanitizers below (unit, replay, integration, inject, faults) run
# there, where a leak or an overflow shows; here, the tests against real servers, the container
# build and the charts, which the sanitizers' build leaves out, and the two daemon tests whose
# heap, resident set and memory lock only this build can measure (AddressSanitizer has its own
# heap and makes mlockall a no-op).
meson test -C build --print-errorlogs --num-processes 2 --no-suite vm --no-suite unit --no-suite replay \
        --no-suite integration --no-suite inject --no-suite faults --no-suite deploy
meson test -C build --print-errorlogs --num-processes 2 steady-state daemon-fake-tree

# After the host's tests, not beside them: the servers' tests want the machine to themselves
# (run together, a MySQL buffer-pool resize took past its minute).
phase "tests under ASan and UBSan; beside them, the deploy suite"
# The deploy suite (the container build, the README's setup on a fresh root: apt and the
# compiler, nothing timed) beside the sanitizers' build and suites, whose injection and fault
# tests run one at a time and leave a core idle: 213 s of deploy tests that ran alone before.
meson test -C build --print-errorlogs --num-processes 1 --suite deploy --logbase deploy >build/deploy.log 2>&1 &
deploy=$!
asan=0
# -O1, as the sanitizers' own docs advise: the fault sweep took 145 s at -O1 against 267 s at -O0.
./scripts/build.sh build-asan -Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
        -Doptimization=1 || asan=$?
((asan != 0)) || ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite replay --suite integration \
        --suite inject --suite faults || asan=$?
deployed=0
wait "$deploy" || deployed=$?
echo "== the deploy suite (beside the sanitizers' suites):"
cat build/deploy.log
((asan == 0 && deployed == 0)) || exit 1

phase "tests on a real cgroup v2 kernel (VMs, two at a time)"
# On their own: a VM beside another VM, not beside the host's tests.
meson test -C build --print-errorlogs --num-processes 2 --suite vm

phase "fuzzing: every target for a few seconds (scripts/fuzz.sh; longer runs in docs/fuzzing.md)"
./scripts/fuzz.sh --seconds 3

phase ""
echo "== all tests passed in $SECONDS s"
