#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A pod's volumes laid out on the node as the kubelet lays them out, for the sidecar tests
# (bind-mounted into a container by tests/lib/container.sh --volume):
#   kubelet_empty_dir DIR [memory]             an emptyDir: a directory (or, with memory, a tmpfs)
#                                              of mode 0777, root's
#   kubelet_atomic_volume DIR MEDIUM MODE KEY=FILE...
#                                              a Secret (MEDIUM memory) or ConfigMap (disk) volume:
#                                              the atomic writer's timestamped directory (0755)
#                                              holding each key at MODE (defaultMode), "..data"
#                                              a link to it, each key a link into "..data"
#   kubelet_fs_group DIR GID [ro]              what the pod's securityContext.fsGroup does to a
#                                              volume: group GID on everything, read (ro) or
#                                              read-write (the rest) for the group, setgid on
#                                              directories
# A Secret's or ConfigMap's volume directory is the emptyDir it is wrapped in (0777, and on tmpfs
# 1777 as a fresh tmpfs is: "drwxrwxrwt" in a pod).
set -euo pipefail

kubelet_empty_dir() {
        local dir=$1 medium=${2:-disk}
        mkdir -p "$dir"
        if [[ $medium == memory ]]; then
                mount -t tmpfs -o size=1M tmpfs "$dir"
        else
                chmod 0777 "$dir"
        fi
        chown 0:0 "$dir"
}

kubelet_atomic_volume() {
        local dir=$1 medium=$2 mode=$3 kv key
        shift 3
        kubelet_empty_dir "$dir" "$medium"
        # ..2026_12_05_17_28_56.3195867161: the time of the write, then a random suffix.
        local ts
        ts=..$(date -u +%Y_%m_%d_%H_%M_%S).$RANDOM$RANDOM
        mkdir "$dir/$ts"
        chmod 0755 "$dir/$ts"
        for kv in "$@"; do
                key=${kv%%=*}
                install -m "$mode" -o 0 -g 0 "${kv#*=}" "$dir/$ts/$key"
        done
        # The writer makes "..data_tmp" and renames it over "..data": one atomic switch.
        ln -s "$ts" "$dir/..data_tmp"
        mv -T "$dir/..data_tmp" "$dir/..data"
        for kv in "$@"; do
                key=${kv%%=*}
                ln -s "..data/$key" "$dir/$key"
        done
}

kubelet_fs_group() {
        local dir=$1 gid=$2 ro=${3:-} f mask
        [[ $ro == ro ]] && mask=0440 || mask=0660
        # (Paths of the test's making: no newline in them. No process substitution: a guest
        # without /dev/fd has none.)
        while IFS= read -r f; do
                chown -h ":$gid" "$f"
                [[ -L $f ]] && continue
                if [[ -d $f ]]; then
                        chmod "$(printf '%o' $(( 0$(stat -c %a "$f") | mask | 02110 )))" "$f"
                else
                        chmod "$(printf '%o' $(( 0$(stat -c %a "$f") | mask )))" "$f"
                fi
        done <<<"$(find "$dir")"
}
