#!/bin/bash
# run-job.sh — runs the test script inside the guest, in both modes (started
# by stage2.sh in script mode, by memgov-vm-job.service in systemd mode).
#
# Reads the job that run-vm.sh left in the results share (.vm/job.env for
# the settings, .vm/command for the script and its arguments), prepares the
# optional swap and disk, runs the script with a clean environment and
# writes, in the results share:
#   stdout.log, stderr.log   the script's output
#   exit-status              its exit status (written last: its presence
#                            tells run-vm.sh that the script ran to the end)
#   journal.log              systemd mode: the boot's journal
#   .vm/timing               guest uptime when the script started and ended
# It exits 0 whatever the script did: the status travels in exit-status.

set -uo pipefail

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
readonly results=/mnt/memgov-results
readonly vmdir="$results/.vm"

log() { echo "memgov-vm: $*" >/dev/console; }
setup_error() {
    log "setup: $*"
    echo "run-job: $*" >>"$vmdir/guest-error"
}
uptime_s() { local up _; read -r up _ </proc/uptime; echo "$up"; }

# shellcheck source=/dev/null
. "$vmdir/job.env"
# .vm/command sets the positional parameters and the job_env array.
job_env=()
# shellcheck source=/dev/null
. "$vmdir/command"

# Optional zram swap: without swap, anonymous memory cannot be reclaimed and
# memory.high throttles very hard, which is not what production hosts see.
if [[ -n ${MEMGOV_VM_SWAP:-} ]]; then
    if modprobe zram num_devices=1 &&
        echo "$MEMGOV_VM_SWAP" >/sys/block/zram0/disksize &&
        mkswap /dev/zram0 >/dev/null && swapon /dev/zram0; then
        :
    else
        setup_error "zram swap of $MEMGOV_VM_SWAP"
    fi
fi

# Optional scratch disk (an ext4 image made by run-vm.sh): page cache and
# dirty data on a real block device are accounted like on a real host,
# unlike tmpfs whose pages are shmem that only swap can reclaim.
if [[ -n ${MEMGOV_VM_DISK:-} ]]; then
    mkdir -p /mnt/memgov-disk
    { modprobe virtio_blk && modprobe ext4; } || setup_error "load virtio_blk and ext4"
    for _ in $(seq 50); do [[ -b /dev/vda ]] && break; sleep 0.1; done
    mount -t ext4 /dev/vda /mnt/memgov-disk || setup_error "mount the scratch disk"
    job_env+=("MEMGOV_DISK=/mnt/memgov-disk")
fi

# Optional network card (run-vm.sh --forward): QEMU's user network, the
# guest at its usual address, reached from the host through the forwarded
# port only.
if [[ -n ${MEMGOV_VM_NET:-} ]]; then
    modprobe virtio_net || setup_error "load virtio_net"
    for _ in $(seq 50); do [[ -e /sys/class/net/eth0 ]] && break; sleep 0.1; done
    { ip link set lo up && ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 &&
        ip route add default via 10.0.2.2; } || setup_error "configure eth0"
fi

# The cgroup under which the script may create child cgroups, with the
# memory, cpu, io and pids controllers enabled for them: the root cgroup in
# script mode; under systemd, this service's own (delegated) cgroup, after
# moving ourselves to a leaf of it, since a cgroup with processes cannot give
# controllers to its children.
job_cgroup=/sys/fs/cgroup
if [[ $MEMGOV_VM_MODE == systemd ]]; then
    self=
    while IFS= read -r line; do
        [[ $line == 0::* ]] && self="${line#0::}"
    done </proc/self/cgroup
    job_cgroup="/sys/fs/cgroup$self"
    if mkdir -p "$job_cgroup/harness" && echo $$ >"$job_cgroup/harness/cgroup.procs"; then
        read -r controllers <"$job_cgroup/cgroup.controllers"
        for c in memory cpu io pids; do
            [[ " $controllers " == *" $c "* ]] || continue
            echo "+$c" >"$job_cgroup/cgroup.subtree_control" || setup_error "enable $c in $job_cgroup"
        done
    else
        setup_error "cannot move to $job_cgroup/harness"
    fi
fi

cd "${MEMGOV_VM_CWD:-/}" 2>/dev/null || cd /

# Run the script with a clean, known environment. Done with builtins in a
# subshell rather than with env -i, to save a process start (~25 ms).
read -r kernel_release </proc/sys/kernel/osrelease
echo "start $(uptime_s)" >"$vmdir/timing"
log "running $*"
(
    for v in $(compgen -e); do unset "$v"; done
    export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    export HOME=/root USER=root LOGNAME=root SHELL=/bin/bash LANG=C.UTF-8
    export MEMGOV_VM=1 MEMGOV_RESULTS="$results" MEMGOV_VM_MODE
    export MEMGOV_VM_KERNEL="$kernel_release" MEMGOV_CGROUP="$job_cgroup"
    for kv in "${job_env[@]}"; do export "${kv?}"; done
    exec "$@" </dev/null >"$results/stdout.log" 2>"$results/stderr.log"
)
status=$?
echo "end $(uptime_s)" >>"$vmdir/timing"
log "script exited with status $status"

if [[ $MEMGOV_VM_MODE == systemd ]]; then
    journalctl -b --no-pager -o short-monotonic >"$results/journal.log" 2>&1 ||
        setup_error "journalctl"
fi

echo "$status" >"$results/exit-status"
sync
exit 0
