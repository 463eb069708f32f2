#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the libFuzzer targets of tests/fuzz with clang (in build-fuzz/, -Dfuzzing=true) and runs
# each for a while; prints per target the executions, executions per second and crashes.
#   fuzz.sh [--seconds N] [--jobs N] [--merge] [--install] [--build-dir DIR] [TARGET...]
#
#   --seconds N      run each target N seconds (default 20)
#   --jobs N         run N targets at a time (default: one per CPU; each target uses one)
#   --merge          add the new inputs that reach new code to tests/fuzz/corpus/TARGET/
#                    (otherwise they stay in a temporary directory, printed at the end)
#   --install        install clang and its fuzzing runtime with apt-get when they are missing
#   --build-dir DIR  build there instead of build-fuzz/
#   TARGET           fuzz-psi or psi...; default: every tests/fuzz/fuzz-*.c
#
# Exits 1 when a target crashed (the reproducer's path is printed: run the target on it to see
# the crash again), 2 when it cannot build or run the targets. See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=20
merge=0
install=0
dir=build-fuzz
targets=()

jobs=$(nproc)

usage() {
        sed -n '3,16s/^# \{0,1\}//p' "$0"
}

while [[ $# -gt 0 ]]; do
        case "$1" in
        --seconds)
                [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -gt 0 ]] || { echo "fuzz.sh: --seconds needs a whole number above 0" >&2; exit 2; }
                seconds=$2
                shift 2
                ;;
        --seconds=*)
                seconds=${1#--seconds=}
                [[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "fuzz.sh: --seconds needs a whole number above 0" >&2; exit 2; }
                shift
                ;;
        --jobs)
                [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -gt 0 ]] || { echo "fuzz.sh: --jobs needs a whole number above 0" >&2; exit 2; }
                jobs=$2
                shift 2
                ;;
        --merge)
                merge=1
                shift
                ;;
        --install)
                install=1
                shift
                ;;
        --build-dir)
                [[ $# -ge 2 ]] || { echo "fuzz.sh: --build-dir needs a directory" >&2; exit 2; }
                dir=$2
                shift 2
                ;;
        -h | --help)
                usage
                exit 0
                ;;
        -*)
                echo "fuzz.sh: unknown option $1" >&2
                usage >&2
                exit 2
                ;;
        *)
                t=${1#fuzz-}
                if [[ ! -f tests/fuzz/fuzz-$t.c ]]; then
                        echo "fuzz.sh: no target fuzz-$t (tests/fuzz/fuzz-$t.c)" >&2
                        exit 2
                fi
                targets+=("fuzz-$t")
                shift
                ;;
        esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
        for f in tests/fuzz/fuzz-*.c; do
                t=${f##*/}
                targets+=("${t%.c}")
        done
fi

# The maximum input length of each target: a little more than the largest real file it reads.
max_len() {
        case "$1" in
        fuzz-cgroup-value | fuzz-timestamp) echo 64 ;;
        fuzz-control-request) echo 256 ;;
        fuzz-memory-events | fuzz-psi | fuzz-units) echo 512 ;;
        fuzz-proc-stat) echo 1024 ;;
        fuzz-memory-stat | fuzz-smaps-rollup) echo 2048 ;;
        fuzz-proc-status | fuzz-meminfo | fuzz-net-unix) echo 4096 ;;
        fuzz-policy | fuzz-trace | fuzz-sessions | fuzz-proc-cgroup) echo 8192 ;;
        fuzz-proc-maps | fuzz-status-reply | fuzz-elf-symbols) echo 16384 ;;
        *) echo 4096 ;;
        esac
}

# ---- the toolchain: clang and its libFuzzer runtime (Debian: clang, libclang-rt-N-dev) ----

missing=()
probe=$(mktemp -d "${TMPDIR:-/tmp}/memgov-fuzz-probe.XXXXXX")
trap 'rm -rf "$probe"' EXIT
check_toolchain() {
        missing=()
        if ! command -v clang >/dev/null; then
                missing+=(clang libclang-rt-14-dev)
                return
        fi
        local major
        major=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
        printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' >"$probe/probe.c"
        if ! clang -fsanitize=fuzzer,address,undefined "$probe/probe.c" -o "$probe/probe" 2>/dev/null; then
                missing+=("libclang-rt-${major:-14}-dev")
        fi
}
check_toolchain
if [[ ${#missing[@]} -gt 0 ]]; then
        if [[ $install -eq 0 ]]; then
                echo "fuzz.sh: clang with its libFuzzer runtime is needed: install the Debian package(s) ${missing[*]}" >&2
                echo "         (apt-get install ${missing[*]}), or run fuzz.sh --install" >&2
                exit 2
        fi
        sudo=()
        if [[ $(id -u) -ne 0 ]]; then
                command -v sudo >/dev/null || { echo "fuzz.sh: --install needs root or sudo" >&2; exit 2; }
                sudo=(sudo)
        fi
        echo "fuzz.sh: installing ${missing[*]}"
        "${sudo[@]}" apt-get update
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
        check_toolchain
        if [[ ${#missing[@]} -gt 0 ]]; then
                echo "fuzz.sh: still missing after the installation: ${missing[*]}" >&2
                exit 2
        fi
fi
for tool in meson ninja; do
        command -v $tool >/dev/null || { echo "fuzz.sh: $tool is missing (scripts/setup-deps.sh installs what the build needs)" >&2; exit 2; }
done

# ---- build ----

if [[ ! -f "$dir/build.ninja" ]]; then
        CC=clang meson setup "$dir" -Dfuzzing=true >"$probe/setup.log" 2>&1 || { cat "$probe/setup.log" >&2; exit 2; }
else
        # Switches an existing clang build to the fuzz targets; a gcc one says it needs clang.
        meson configure "$dir" -Dfuzzing=true >"$probe/setup.log" 2>&1 || { cat "$probe/setup.log" >&2; exit 2; }
fi
ninja -C "$dir" "${targets[@]/#/tests/fuzz/}" >"$probe/build.log" 2>&1 || { cat "$probe/build.log" >&2; exit 2; }

# ---- run ----

work=$(mktemp -d "${TMPDIR:-/tmp}/memgov-fuzz.XXXXXX")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
stat_of() { # stat_of NAME LOG: a value of libFuzzer's -print_final_stats
        sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$2" | tail -n 1
}

# run_target TARGET: the target for $seconds, its log in $work/TARGET/log and its exit status in
# $work/TARGET/rc. Each is one process on one CPU: $jobs of them at a time.
run_target() {
        local t=$1 rc=0
        local dict=()
        [[ -f tests/fuzz/dict/$t.dict ]] && dict=(-dict="tests/fuzz/dict/$t.dict")
        "$dir/tests/fuzz/$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
                -print_final_stats=1 -artifact_prefix="$work/$t/artifacts/" "${dict[@]}" \
                "$work/$t/corpus" "tests/fuzz/corpus/$t" >"$work/$t/log" 2>&1 || rc=$?
        echo "$rc" >"$work/$t/rc"
}
running=0
for t in "${targets[@]}"; do
        mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
        if ((running >= jobs)); then
                wait -n
                running=$((running - 1))
        fi
        run_target "$t" &
        running=$((running + 1))
done
wait

printf '%-22s %12s %10s %8s %8s\n' target executions exec/s new crashes
failed=()
total_execs=0
for t in "${targets[@]}"; do
        rc=$(cat "$work/$t/rc")
        execs=$(stat_of number_of_executed_units "$work/$t/log")
        rate=$(stat_of average_exec_per_sec "$work/$t/log")
        new=$(stat_of new_units_added "$work/$t/log")
        if [[ -z "$execs" ]]; then
                # Stopped by a crash before its statistics: its last progress line.
                execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$work/$t/log" | tail -n 1)
                rate=$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' "$work/$t/log" | tail -n 1)
        fi
        crashes=$(find "$work/$t/artifacts" -type f | wc -l)
        if [[ $rc -ne 0 && $crashes -eq 0 ]]; then
                crashes=1 # died without writing an input (e.g. in its initialisation)
        fi
        total_execs=$((total_execs + ${execs:-0}))
        printf '%-22s %12s %10s %8s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "${new:-?}" "$crashes"
        [[ $crashes -gt 0 ]] && failed+=("$t")
        if [[ $merge -eq 1 ]] && [[ -n "$(ls -A "$work/$t/corpus")" ]]; then
                "$dir/tests/fuzz/$t" -merge=1 -max_len="$(max_len "$t")" "tests/fuzz/corpus/$t" "$work/$t/corpus" \
                        >"$work/$t/merge.log" 2>&1 || echo "fuzz.sh: $t: merging failed, see $work/$t/merge.log" >&2
        fi
done
echo "total executions: $total_execs in ${#targets[@]} target(s), ${seconds}s each"
echo "new inputs and logs: $work"

if [[ ${#failed[@]} -gt 0 ]]; then
        for t in "${failed[@]}"; do
                if [[ -z "$(ls -A "$work/$t/artifacts")" ]]; then
                        echo "FAILED $t without a reproducer (log: $work/$t/log)" >&2
                        continue
                fi
                echo "CRASH in $t (log: $work/$t/log)" >&2
                for a in "$work/$t/artifacts"/*; do
                        [[ -e "$a" ]] || continue
                        echo "  reproducer: $a" >&2
                        echo "  run again:  $dir/tests/fuzz/$t $a" >&2
                done
        done
        exit 1
fi
exit 0
