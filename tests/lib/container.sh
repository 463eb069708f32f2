#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A container as a runtime makes one, for the pod tests: run by a process already placed in its
# cgroup, it enters new cgroup and mount namespaces (the process namespace stays shared, as in a
# pod with shareProcessNamespace), mounts the cgroup file system at /sys/fs/cgroup (now rooted
# at the container's cgroup; read-only unless --rw-cgroup, as runtimes do), gives each --private
# DIR a fresh tmpfs (owned like the directory was), mounts the volumes, and runs the command.
#   container.sh [--rw-cgroup] [--host-cgroup DIR] [--private DIR]... [--read-only-root]
#                [--volume SRC:DST[:ro]]... -- COMMAND [ARGS...]
# --host-cgroup DIR: the whole hierarchy stays visible, writable, at DIR (a hostPath mount).
# --read-only-root: every file system the container sees is read-only (readOnlyRootFilesystem),
#   but /proc, /sys, /dev and the volumes.
# --volume SRC:DST[:ro]: the node's directory SRC at DST, as a kubelet mounts a pod's volume
#   (read-only with :ro, as volumeMounts' readOnly).
set -euo pipefail
if [[ ${MEMGOV_CONTAINER_INSIDE:-} != 1 ]]; then
        export MEMGOV_CONTAINER_INSIDE=1
        exec unshare --cgroup --mount --propagation private -- "$0" "$@"
fi
unset MEMGOV_CONTAINER_INSIDE
ro=ro
host=
read_only_root=0
private=()
volumes=()
while [[ $# -gt 0 ]]; do
        case $1 in
        --rw-cgroup) ro=rw; shift ;;
        --host-cgroup) host=$2; shift 2 ;;
        --private) private+=("$2"); shift 2 ;;
        --read-only-root) read_only_root=1; shift ;;
        --volume) volumes+=("$2"); shift 2 ;;
        --) shift; break ;;
        *) echo "container.sh: unknown option $1" >&2; exit 2 ;;
        esac
done
if [[ -n $host ]]; then
        mkdir -p "$host"
        mount --bind /sys/fs/cgroup "$host"
fi
# The same file system cannot be mounted twice on one mount point: the old view goes first.
umount -l /sys/fs/cgroup
mount -t cgroup2 -o "$ro,nsdelegate" none /sys/fs/cgroup
for d in "${private[@]}"; do
        owner=$(stat -c %u:%g "$d")
        mount -t tmpfs -o mode=0755 tmpfs "$d"
        chown "$owner" "$d"
done
# The volumes' mount points are in the image: made before its file systems turn read-only.
for v in "${volumes[@]}"; do
        IFS=: read -r src dst _ <<<"$v"
        [[ -d $src ]] || { echo "container.sh: volume $src is not a directory" >&2; exit 2; }
        mkdir -p "$dst"
done
if (( read_only_root )); then
        # Each mount of this namespace, deepest last, read-only; the kernel's own file systems
        # (and the cgroup one, read-only already) stay as they are.
        while read -r mnt type; do
                case $type in proc|sysfs|devtmpfs|devpts|mqueue|cgroup2|securityfs|debugfs|tracefs|bpf) continue ;; esac
                mount -o remount,bind,ro "$mnt" 2>/dev/null ||
                        { echo "container.sh: cannot make $mnt read-only" >&2; exit 2; }
        done <<<"$(awk '{ for (i = 7; $i != "-"; i++); print $5, $(i + 1) }' /proc/self/mountinfo)"
fi
for v in "${volumes[@]}"; do
        IFS=: read -r src dst mode <<<"$v"
        mount --bind "$src" "$dst"
        # A bind takes the flags of the mount it comes from, which the read-only root may have
        # made read-only too: each volume as its volumeMount says.
        mount -o "remount,bind,${mode:-rw}" "$dst"
done
exec "$@"
