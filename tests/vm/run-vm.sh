#!/bin/bash
# run-vm.sh — run a test script as root inside a QEMU VM with a real Debian
# 6.1 kernel and a cgroup v2 hierarchy with the memory controller.
#
# Usage: run-vm.sh [OPTIONS] SCRIPT [ARGS...]
#
# SCRIPT is a host path; the guest sees the host's whole file system (read
# only, with a throwaway writable overlay, fresh /tmp and /run), so it runs
# at the same path, as do the programs it calls. It gets a clean environment
# with PATH, HOME=/root and:
#   MEMGOV_VM=1
#   MEMGOV_VM_MODE=script|systemd
#   MEMGOV_VM_KERNEL=<uname -r of the guest>
#   MEMGOV_RESULTS=/mnt/memgov-results   the results directory, read-write
#   MEMGOV_CGROUP=<dir>   where SCRIPT may create child cgroups (memory, cpu,
#                         io, pids enabled): /sys/fs/cgroup in script mode,
#                         its service's delegated cgroup under systemd
#   MEMGOV_DISK=/mnt/memgov-disk         with --disk only
# and starts in the caller's working directory.
#
# Options:
#   --timeout SECONDS  kill the VM after this long (default 300)
#   --mem SIZE         guest memory, QEMU syntax (default 1G)
#   --cpus N           guest CPUs (default 2)
#   --results DIR      results directory (default: a new directory under
#                      ${TMPDIR:-/tmp}); its path is printed
#   --systemd          boot systemd as PID 1 and run SCRIPT as a service once
#                      multi-user.target is reached (journal saved too)
#   --mask UNIT        systemd mode: also mask UNIT (repeatable)
#   --host-services    systemd mode: also start the services the host enables
#                      in /etc/systemd/system/multi-user.target.wants (by
#                      default they are left stopped; tests may start them)
#   --swap SIZE        give the guest a zram swap device of SIZE (e.g. 256M)
#   --disk SIZE        attach a fresh ext4 disk of SIZE, mounted at
#                      /mnt/memgov-disk
#   --forward HOST:GUEST  a network card on QEMU's user network, restricted
#                      (the guest reaches nothing), with TCP port HOST on the
#                      host's 127.0.0.1 forwarded to the guest's port GUEST;
#                      the guest is 10.0.2.15/24 on eth0, the host 10.0.2.2
#   --env NAME=VALUE   pass a variable to SCRIPT (repeatable)
#   --append ARGS      extra kernel command line (e.g. loglevel=7)
#   --console          stream the guest console to stderr while it runs
#   -q, --quiet        do not replay the script's output after the run (only
#                      the end of its stderr when it fails)
#
# The results directory receives stdout.log, stderr.log, exit-status,
# console.log (the serial console: kernel and harness messages), journal.log
# (systemd mode) and whatever SCRIPT writes to $MEMGOV_RESULTS.
#
# Exit status: SCRIPT's own (so 77, "skipped", stays 77); 77 as well when
# the harness cannot be set up on this machine; 124 when the timeout killed
# the VM; 125 when the VM failed before SCRIPT finished (no exit status).

set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly here

timeout=300
mem=1G
cpus=2
results=
mode=script
swap=
disk=
forward=
append=
console=0
quiet=0
host_services=0
extra_env=()
# Units of the host that only slow a throwaway VM down or wait for hardware
# and network it does not have.
mask=(
    getty@tty1.service serial-getty@ttyS0.service
    systemd-timesyncd.service
    apt-daily.timer apt-daily-upgrade.timer man-db.timer dpkg-db-backup.timer
    e2scrub_all.timer e2scrub_reap.service fstrim.timer logrotate.timer
    systemd-networkd-wait-online.service NetworkManager-wait-online.service
    remote-fs.target
)

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; }
die() { echo "run-vm: error: $*" >&2; exit 125; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --timeout) timeout="${2:?}"; shift 2 ;;
        --mem) mem="${2:?}"; shift 2 ;;
        --cpus) cpus="${2:?}"; shift 2 ;;
        --results) results="${2:?}"; shift 2 ;;
        --systemd) mode=systemd; shift ;;
        --mask) mask+=("${2:?}"); shift 2 ;;
        --host-services) host_services=1; shift ;;
        --swap) swap="${2:?}"; shift 2 ;;
        --disk) disk="${2:?}"; shift 2 ;;
        --forward) [[ ${2:?} =~ ^[0-9]+:[0-9]+$ ]] || die "--forward wants HOSTPORT:GUESTPORT, got '$2'"
                   forward="$2"; shift 2 ;;
        --env) [[ ${2:?} == [A-Za-z_]*=* ]] || die "--env wants NAME=VALUE, got '$2'"
               extra_env+=("$2"); shift 2 ;;
        --append) append+=" ${2:?}"; shift 2 ;;
        --console) console=1; shift ;;
        -q|--quiet) quiet=1; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) break ;;
    esac
done
[[ $# -ge 1 ]] || { usage >&2; exit 2; }
[[ $timeout =~ ^[0-9]+$ && $timeout -gt 0 ]] || die "--timeout wants a number of seconds"
[[ $cpus =~ ^[0-9]+$ && $cpus -gt 0 ]] || die "--cpus wants a positive number"

script="$(readlink -f "$1")" || die "cannot resolve $1"
shift
[[ -f $script && -x $script ]] || die "$script is not an executable file"

# --- the kernel and initramfs -----------------------------------------------

setup_status=0
setup_out="$("$here/vm-setup.sh" --quiet --print-env)" || setup_status=$?
case $setup_status in
    0) ;;
    77) echo "run-vm: SKIP: the VM harness is not available here (see above)" >&2; exit 77 ;;
    *) die "vm-setup.sh failed with status $setup_status" ;;
esac
MEMGOV_VM_KERNEL_IMAGE='' MEMGOV_VM_INITRAMFS='' MEMGOV_VM_MODULES=''
while IFS='=' read -r name value; do
    case "$name" in MEMGOV_VM_*) printf -v "$name" '%s' "$value" ;; esac
done <<<"$setup_out"
[[ -r $MEMGOV_VM_KERNEL_IMAGE && -r $MEMGOV_VM_INITRAMFS ]] || die "vm-setup.sh gave no kernel"

# --- the results directory and the job --------------------------------------

if [[ -z $results ]]; then
    results="$(mktemp -d "${TMPDIR:-/tmp}/memgov-vm.XXXXXX")"
else
    mkdir -p "$results"
    results="$(readlink -f "$results")"
    # Leftovers of an earlier run would pass for this run's.
    rm -rf "$results/.vm" "$results"/{stdout.log,stderr.log,exit-status,console.log,journal.log}
fi
echo "run-vm: results in $results" >&2
vmdir="$results/.vm"
mkdir -p "$vmdir"

# Shell-quote for the guest's busybox sh: 'it'\''s'.
squote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Host directories under /tmp or /run the script needs: the guest mounts a
# fresh tmpfs there, so init binds these through from the host view.
keep=
env_dirs=()
for e in "${extra_env[@]}"; do
    v=${e#*=}
    [[ $v == /* ]] && env_dirs+=("$v")
done
# The whole source tree (the harness is in it), the script's directory, the working
# directory, and the paths given in --env variables (a build directory).
for d in "$(cd "$here/../.." && pwd)" "$(dirname "$script")" "$PWD" "${env_dirs[@]}"; do
    case "$d/" in
        /tmp/*|/run/*) keep+="$d"$'\n' ;;
    esac
done

{
    echo "MEMGOV_VM_MODE=$(squote "$mode")"
    echo "MEMGOV_VM_HARNESS=$(squote "$here")"
    echo "MEMGOV_VM_MODULES=$(squote "$MEMGOV_VM_MODULES")"
    echo "MEMGOV_VM_KEEP=$(squote "$keep")"
    echo "MEMGOV_VM_MASK=$(squote "${mask[*]}")"
    echo "MEMGOV_VM_HOST_SERVICES=$host_services"
    echo "MEMGOV_VM_CWD=$(squote "$PWD")"
    echo "MEMGOV_VM_SWAP=$(squote "$swap")"
    echo "MEMGOV_VM_DISK=$(squote "$([[ -n $disk ]] && echo 1)")"
    echo "MEMGOV_VM_NET=$(squote "$([[ -n $forward ]] && echo 1)")"
} >"$vmdir/job.env"
{
    printf 'set --'; printf ' %q' "$script" "$@"; echo
    printf 'job_env=('
    [[ ${#extra_env[@]} == 0 ]] || printf ' %q' "${extra_env[@]}"
    echo ' )'
} >"$vmdir/command"

# --- QEMU ---------------------------------------------------------------------

cmdline="console=ttyS0 quiet panic=-1 rdinit=/init"
if [[ $mode == systemd ]]; then
    cmdline+=" systemd.unit=multi-user.target systemd.unified_cgroup_hierarchy=1"
    cmdline+=" systemd.show_status=error"
fi
cmdline+="$append"

# shellcheck disable=SC2054  # the commas belong to QEMU's option syntax
qemu=(
    qemu-system-x86_64
    -nodefaults -no-user-config -display none -monitor none
    # TCG rather than KVM: it works wherever QEMU does, including hosts
    # where /dev/kvm is missing or hangs.
    -accel tcg,thread=multi -cpu max -m "$mem" -smp "$cpus"
    # A panic (panic=-1 reboots) or a reboot ends QEMU instead of looping.
    -no-reboot
    -kernel "$MEMGOV_VM_KERNEL_IMAGE" -initrd "$MEMGOV_VM_INITRAMFS" -append "$cmdline"
    # (QEMU option values escape a comma by doubling it.)
    -serial "file:${results//,/,,}/console.log"
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=${results//,/,,},mount_tag=results,security_model=none,multidevs=remap"
)
if [[ -n $disk ]]; then
    command -v mkfs.ext4 >/dev/null || die "--disk needs mkfs.ext4 (e2fsprogs)"
    truncate -s "$disk" "$vmdir/disk.img"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$vmdir/disk.img" ||
        die "mkfs.ext4 failed"
    qemu+=(-drive "file=${vmdir//,/,,}/disk.img,if=virtio,format=raw,cache=unsafe")
fi

if [[ -n $forward ]]; then
    qemu+=(-netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:${forward%%:*}-:${forward#*:}"
           -device virtio-net-pci,netdev=net0)
fi

tail_pid=
if [[ $console == 1 ]]; then
    : >"$results/console.log"
    tail -n +1 -F "$results/console.log" >&2 2>/dev/null &
    tail_pid=$!
fi

start_ns=$(date +%s%N)
qemu_status=0
# timeout(1) kills QEMU when the guest hangs; --kill-after in case QEMU
# itself does not die on SIGTERM.
timeout --kill-after=10 "$timeout" "${qemu[@]}" </dev/null >"$vmdir/qemu.log" 2>&1 ||
    qemu_status=$?
end_ns=$(date +%s%N)
if [[ -n $tail_pid ]]; then
    sleep 0.2
    kill "$tail_pid" 2>/dev/null || true
    wait "$tail_pid" 2>/dev/null || true
fi
rm -f "$vmdir/disk.img"

# --- the verdict --------------------------------------------------------------

show_tail() {  # show_tail FILE: the end of a log, for a failure message
    [[ -s $1 ]] || return 0
    echo "run-vm: --- last lines of ${1##*/} ---" >&2
    tail -n 25 "$1" >&2
    echo "run-vm: ---" >&2
}

total=$(( (end_ns - start_ns) / 1000000 ))
if [[ $qemu_status == 124 || $qemu_status == 137 ]]; then
    show_tail "$results/console.log"
    if [[ ! -s $results/exit-status ]]; then
        echo "run-vm: TIMEOUT: the VM did not finish within $timeout s and was killed; logs in $results" >&2
        exit 124
    fi
    # The script finished but the guest did not power off: its status still
    # stands.
    echo "run-vm: warning: the script finished but the VM did not power off within $timeout s and was killed" >&2
fi
if [[ ! -s $results/exit-status ]]; then
    show_tail "$vmdir/qemu.log"
    show_tail "$results/console.log"
    grep -m 1 -a 'Kernel panic' "$results/console.log" | sed 's/^/run-vm: guest kernel panic: /' >&2 || true
    [[ -s $vmdir/guest-error ]] && cat "$vmdir/guest-error" >&2
    if grep -q '^start' "$vmdir/timing" 2>/dev/null; then
        echo "run-vm: FAILED: the script started but the VM stopped (QEMU status $qemu_status) before it finished; logs in $results" >&2
    else
        echo "run-vm: FAILED: the VM stopped (QEMU status $qemu_status) without running the script; logs in $results" >&2
    fi
    exit 125
fi
status="$(cat "$results/exit-status")"
[[ $status =~ ^[0-9]+$ ]] || die "bad exit-status file: '$status'"

if [[ $quiet == 0 ]]; then
    cat "$results/stdout.log"
    cat "$results/stderr.log" >&2
elif [[ $status != 0 ]]; then
    show_tail "$results/stderr.log"
fi
[[ -s $vmdir/guest-error ]] && sed 's/^/run-vm: guest setup problem: /' "$vmdir/guest-error" >&2

# Timing: guest uptimes (kernel start to script start/end) and host wall time.
script_start='' script_end=''
while read -r what t; do
    case "$what" in start) script_start=$t ;; end) script_end=$t ;; esac
done <"$vmdir/timing"
printf 'run-vm: %s exited with status %s (mode %s, boot-to-script %ss, script %ss, total %d.%03ds)\n' \
    "${script##*/}" "$status" "$mode" "$script_start" \
    "$(awk -v a="$script_start" -v b="$script_end" 'BEGIN { printf "%.2f", b - a }')" \
    $((total / 1000)) $((total % 1000)) >&2
exit "$status"
