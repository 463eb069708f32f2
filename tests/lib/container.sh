#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A container as a runtime makes one, for the pod tests: run by a process already placed in its
# cgroup, it enters new cgroup and mount namespaces (the process namespace stays shared, as in a
# pod with shareProcessNamespace), mounts the cgroup file system at /sys/fs/cgroup (now rooted
# at the container's cgroup; read-only unless --rw-cgroup, as runtimes do), gives each --private
# DIR a fresh tmpfs (owned like the directory was), and runs the command.
#   container.sh [--rw-cgroup] [--host-cgroup DIR] [--private DIR]... -- COMMAND [ARGS...]
# --host-cgroup DIR: the whole hierarchy stays visible, writable, at DIR (a hostPath mount).
set -euo pipefail
if [[ ${MEMGOV_CONTAINER_INSIDE:-} != 1 ]]; then
        export MEMGOV_CONTAINER_INSIDE=1
        exec unshare --cgroup --mount --propagation private -- "$0" "$@"
fi
unset MEMGOV_CONTAINER_INSIDE
ro=ro
host=
private=()
while [[ $# -gt 0 ]]; do
        case $1 in
        --rw-cgroup) ro=rw; shift ;;
        --host-cgroup) host=$2; shift 2 ;;
        --private) private+=("$2"); shift 2 ;;
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
exec "$@"
