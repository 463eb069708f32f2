#!/bin/bash
# smoke.sh — checks that the VM gives the tests what they rely on: cgroup v2
# with the memory controller, child cgroups with memory.max, PSI, and a real
# memcg OOM kill. Runs in both harness modes:
#
#   tests/vm/run-vm.sh tests/vm/scenarios/smoke.sh
#   tests/vm/run-vm.sh --systemd tests/vm/scenarios/smoke.sh
#
# In systemd mode it also checks that the system reached a running state and
# that systemd-run -p MemoryMax= applies the limit to a transient unit.
# Exits 1 with a message at the first failed check, 77 outside the VM.

set -euo pipefail

[[ ${MEMGOV_VM:-} == 1 ]] || { echo "smoke: SKIP: meant to run inside the VM (tests/vm/run-vm.sh)" >&2; exit 77; }

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
ok() { echo "smoke: ok: $*"; }

cgroot=/sys/fs/cgroup

# --- cgroup v2 with the memory controller -------------------------------------

[[ "$(stat -f -c %T "$cgroot")" == cgroup2fs ]] || fail "$cgroot is not cgroup2 ($(stat -f -c %T "$cgroot"))"
grep -qw memory "$cgroot/cgroup.controllers" || fail "no memory controller in $cgroot/cgroup.controllers"
ok "$cgroot is cgroup2 with controllers: $(cat "$cgroot/cgroup.controllers")"

[[ -r /proc/pressure/memory ]] || fail "/proc/pressure/memory missing (PSI)"
ok "/proc/pressure/memory: $(head -n 1 /proc/pressure/memory)"

# Where the harness lets us create child cgroups.
parent="${MEMGOV_CGROUP:?}"
grep -qw memory "$parent/cgroup.subtree_control" ||
    fail "memory is not enabled in $parent/cgroup.subtree_control"

# --- the harness's own promises ---------------------------------------------------

[[ ! -e /.dockerenv ]] || fail "/.dockerenv is visible in the guest"
[[ "$(stat -f -c %T /tmp)" == tmpfs ]] || fail "/tmp is not a fresh tmpfs"
[[ -d ${MEMGOV_RESULTS:-} && -w $MEMGOV_RESULTS ]] || fail "MEMGOV_RESULTS ($MEMGOV_RESULTS) is not writable"
echo "written in the guest" >"$MEMGOV_RESULTS/smoke.txt"
[[ -d /lib/modules/$(uname -r)/kernel ]] || fail "the guest kernel's modules are not in /lib/modules/$(uname -r)"
ok "no /.dockerenv, fresh /tmp, results share writable, modules present"

# --- a child cgroup with memory.max ---------------------------------------------

cg="$parent/smoke-oom"
rmdir "$cg" 2>/dev/null || true
mkdir "$cg" || fail "cannot create $cg"
echo 64M >"$cg/memory.max" || fail "cannot write $cg/memory.max"
[[ "$(cat "$cg/memory.max")" == 67108864 ]] || fail "memory.max reads $(cat "$cg/memory.max"), not 67108864"
ok "created $cg with memory.max=$(cat "$cg/memory.max")"
[[ -r $cg/memory.pressure ]] || fail "$cg/memory.pressure missing"
ok "memory.pressure: $(head -n 1 "$cg/memory.pressure")"

# --- an OOM kill inside it ----------------------------------------------------------

# dd with a 100 MiB block: reading /dev/zero into its buffer touches every
# page, which cannot fit under 64M without swap.
set +e
# (In a subshell whose stderr is discarded: bash reports "Killed" there.)
(
    bash -c 'echo $$ >"$1/cgroup.procs" && exec dd if=/dev/zero of=/dev/null bs=100M count=1 2>/dev/null' \
        _ "$cg"
    exit $?
) 2>/dev/null
status=$?
set -e
oom_kill="$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")"
[[ $status == 137 ]] || fail "the 100M allocation ended with status $status, not 137 (SIGKILL)"
[[ $oom_kill == 1 ]] || fail "memory.events oom_kill is '$oom_kill', not 1: $(tr '\n' ' ' <"$cg/memory.events")"
ok "100M allocation under memory.max=64M was OOM-killed (oom_kill $oom_kill)"
rmdir "$cg"

# --- systemd mode ---------------------------------------------------------------------

if [[ ${MEMGOV_VM_MODE:-} == systemd ]]; then
    [[ "$(cat /proc/1/comm)" == systemd ]] || fail "PID 1 is $(cat /proc/1/comm), not systemd"
    # --wait: our own service starts as soon as multi-user.target is reached,
    # possibly before the last boot jobs are done.
    state="$(timeout 60 systemctl is-system-running --wait 2>&1)" || true
    if [[ $state != running ]]; then
        systemctl --no-pager --failed >&2 || true
        fail "systemctl is-system-running: $state"
    fi
    ok "systemctl is-system-running: $state"
    virt="$(systemd-detect-virt 2>&1)" || true
    [[ $virt == qemu ]] || fail "systemd-detect-virt says '$virt', not qemu"
    ok "systemd-detect-virt: $virt"

    # shellcheck disable=SC2016  # expanded by the unit's shell
    out="$(systemd-run --pipe --wait --quiet --collect --unit=smoke-memmax -p MemoryMax=32M \
        bash -c 'cat /sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)/memory.max')" ||
        fail "systemd-run -p MemoryMax=32M failed"
    [[ $out == 33554432 ]] || fail "the transient unit saw memory.max=$out, not 33554432"
    ok "systemd-run -p MemoryMax=32M: the unit's memory.max is $out"

    set +e
    systemd-run --wait --quiet --collect --unit=smoke-oom -p MemoryMax=64M -p MemorySwapMax=0 \
        dd if=/dev/zero of=/dev/null bs=100M count=1 2>/dev/null
    status=$?
    set -e
    [[ $status != 0 ]] || fail "systemd-run: the 100M allocation under MemoryMax=64M succeeded"
    journalctl -b --no-pager -u smoke-oom.service | grep -q 'oom-kill' ||
        fail "no oom-kill logged for smoke-oom.service"
    ok "systemd-run -p MemoryMax=64M: the 100M allocation was OOM-killed"
fi

echo "smoke: PASS"
