#!/bin/bash
# stage2.sh — PID 1 of the guest in script mode, after switch_root into the
# overlay of the host root. initramfs/init has already set the system up
# (cgroup2 with the memory controller delegated, /dev/pts, /dev/shm,
# loopback); this runs the job and powers the VM off.
#
# It must never exit: PID 1 exiting panics the kernel. Every way out goes
# through power_off. Builtins only where possible: each host program started
# costs ~25 ms under TCG.

set -uo pipefail

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

power_off() {
    sync
    # busybox-static is installed on the host (vm-setup.sh sees to it); the
    # sysrq fallback needs no binary at all.
    /bin/busybox poweroff -f
    echo o >/proc/sysrq-trigger
    sleep 10
}
trap power_off EXIT

# The job runs in a background subshell so that this shell, as PID 1, keeps
# reaping the orphans it inherits while it waits (bash reaps every child on
# SIGCHLD): tests never see zombies of their daemons.
# shellcheck source=SCRIPTDIR/run-job.sh
( . "${BASH_SOURCE[0]%/*}/run-job.sh" ) &
wait $!
