#!/bin/bash
# vm-setup.sh — prepare everything the real-kernel VM harness needs.
#
# The harness boots a stock Debian 6.1 kernel under QEMU so that tests get a
# real cgroup v2 hierarchy with the memory controller, whatever the host runs.
# This script is idempotent: a second run with a warm cache only checks that
# the artefacts are there and returns.
#
#   1. installs the missing host packages (QEMU, busybox-static, kmod, ...);
#   2. downloads linux-image-6.1.0-<N>-amd64-unsigned and unpacks it into the
#      cache, one directory per kernel version;
#   3. decompresses the bzImage into an ELF vmlinux (booted directly through
#      its PVH entry point, which skips the in-guest decompression: ~3 s per
#      boot under TCG);
#   4. builds a small initramfs: busybox-static, the modules needed to mount
#      the host root over 9p, and initramfs/init.
#
# Usage: vm-setup.sh [--update] [--quiet] [--print-env]
#   --update     look for a newer 6.1 kernel in the apt lists even if one is
#                already cached (by default a cached kernel is reused as is)
#   --quiet      print no progress messages
#   --print-env  print NAME=VALUE lines describing the artefacts on stdout
#                (read by run-vm.sh)
#
# Environment:
#   MEMGOV_VM_CACHE   cache directory (default /var/cache/memgov-vm)
#   MEMGOV_VM_KERNEL  pin a kernel ABI, e.g. 6.1.0-57-amd64
#
# Exit status: 0 ready; 77 a prerequisite cannot be had (reason on stderr);
# anything else is a bug in this script or an unexpected failure.

set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly here
readonly cache="${MEMGOV_VM_CACHE:-/var/cache/memgov-vm}"

# Host packages the harness uses. busybox-static also provides the poweroff
# the guest calls after switch_root; kmod provides depmod/modprobe (used here
# to order the initramfs modules, and in the guest for optional modules).
readonly packages=(qemu-system-x86 busybox-static kmod xz-utils zstd e2fsprogs)

# Modules the initramfs loads to reach the host root; their dependencies are
# resolved with modprobe --show-depends, so the order comes from modules.dep.
readonly initramfs_modules=(virtio_pci 9pnet_virtio 9p overlay)

update=0
quiet=0
print_env=0
for arg in "$@"; do
    case "$arg" in
        --update) update=1 ;;
        --quiet) quiet=1 ;;
        --print-env) print_env=1 ;;
        -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "vm-setup: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

say() { [[ $quiet == 1 ]] || echo "vm-setup: $*" >&2; }
skip() { echo "vm-setup: SKIP: $*" >&2; exit 77; }
die() { echo "vm-setup: error: $*" >&2; exit 1; }

apt_updated=0
apt_update_once() {
    [[ $apt_updated == 1 ]] && return 0
    say "running apt-get update"
    apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed: the Debian repository cannot be reached"
    apt_updated=1
}

# --- 1. host packages -------------------------------------------------------

is_installed() {
    [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

ensure_packages() {
    local missing=() p
    for p in "${packages[@]}"; do
        is_installed "$p" || missing+=("$p")
    done
    [[ ${#missing[@]} == 0 ]] && return 0
    [[ $(id -u) == 0 ]] || skip "missing packages ${missing[*]} and not root to install them"
    command -v apt-get >/dev/null || skip "missing packages ${missing[*]} and no apt-get"
    # Only refresh the lists when apt does not know a package.
    for p in "${missing[@]}"; do
        apt-cache show "$p" >/dev/null 2>&1 || { apt_update_once; break; }
    done
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null 2>&1 ||
    { apt_update_once
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
          "${missing[@]}" >/dev/null 2>&1; } ||
        skip "cannot install ${missing[*]} with apt-get"
}

# --- 2. the kernel ----------------------------------------------------------

# Newest linux-image-6.1.0-<N>-amd64-unsigned known to apt, as an ABI name
# ("6.1.0-57-amd64"). The -cloud-amd64 flavour is no use: it has no 9p.
newest_kernel_abi() {
    apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' 2>/dev/null |
        sed -n 's/^linux-image-\(6\.1\.0-[0-9]*-amd64\)-unsigned .*/\1/p' | sort -V | tail -n 1
}

# Newest kernel already in the cache.
newest_cached_abi() {
    local d
    for d in "$cache"/kernel-6.1.0-*-amd64; do
        [[ -e $d/ready ]] && echo "${d##*/kernel-}"
    done | sort -V | tail -n 1
}

choose_kernel() {
    local abi="${MEMGOV_VM_KERNEL:-}"
    if [[ -z $abi && $update == 0 ]]; then
        abi="$(newest_cached_abi)"
    fi
    if [[ -z $abi ]]; then
        abi="$(newest_kernel_abi)"
        if [[ -z $abi ]]; then
            apt_update_once
            abi="$(newest_kernel_abi)"
        fi
        [[ -n $abi ]] || skip "no linux-image-6.1.0-*-amd64-unsigned package known to apt"
    fi
    echo "$abi"
}

# Unpack the kernel package into $kdir/pkg and run depmod (the .deb ships no
# modules.dep: it is generated by the package's postinst).
fetch_kernel() {
    local abi="$1" kdir="$2" pkg="linux-image-$1-unsigned" dl
    [[ -e $kdir/pkg/boot/vmlinuz-$abi && -e $kdir/pkg/lib/modules/$abi/modules.dep ]] && return 0
    say "downloading $pkg"
    dl="$kdir/download"
    rm -rf "$dl" "$kdir/pkg"
    mkdir -p "$dl"
    # apt-get download writes into the current directory.
    if ! (cd "$dl" && apt-get download -qq "$pkg" >/dev/null 2>&1); then
        apt_update_once
        if ! (cd "$dl" && apt-get download -qq "$pkg" >/dev/null 2>&1); then
            rm -rf "$dl"
            rmdir "$kdir" 2>/dev/null || true
            skip "cannot download $pkg from the Debian repository"
        fi
    fi
    dpkg-deb -x "$dl"/"$pkg"_*.deb "$kdir/pkg.tmp"
    # The package version (e.g. 6.1.192-3) is recorded for the fixtures' README.
    dpkg-deb -f "$dl"/"$pkg"_*.deb Version >"$kdir/pkg.tmp/package-version"
    depmod -b "$kdir/pkg.tmp" "$abi"
    mv "$kdir/pkg.tmp" "$kdir/pkg"
    rm -rf "$dl"
}

# Find the compressed payload inside a bzImage and decompress it, the way the
# kernel's scripts/extract-vmlinux does. Prints nothing; fails if no payload
# decompresses into an ELF file.
extract_vmlinux() {
    local bz="$1" out="$2" magic tool off
    # magic (as a grep -P pattern) and decompressor, most likely first:
    # Debian builds 6.1 with CONFIG_KERNEL_XZ.
    local -a formats=(
        '\xfd7zXZ\x00|xz -dqc --single-stream'
        '\x28\xb5\x2f\xfd|zstd -dqc'
        '\x1f\x8b\x08|gzip -dqc'
    )
    for f in "${formats[@]}"; do
        magic="${f%%|*}" tool="${f#*|}"
        # shellcheck disable=SC2013  # offsets: one number a line
        for off in $(LC_ALL=C grep -aboP "$magic" "$bz" | cut -d: -f1); do
            # Trailing data after the stream makes the decompressors complain;
            # what matters is that the output is an ELF image.
            tail -c "+$((off + 1))" "$bz" | $tool >"$out.tmp" 2>/dev/null || true
            if [[ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" == 7f454c46 ]]; then
                mv "$out.tmp" "$out"
                return 0
            fi
        done
    done
    rm -f "$out.tmp"
    return 1
}

# True if the ELF has the Xen PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY, 18)
# QEMU needs to boot it directly.
has_pvh_note() {
    command -v readelf >/dev/null || return 1
    readelf -n "$1" 2>/dev/null | grep -Eq '^[[:space:]]+Xen[[:space:]]+0x[0-9a-f]+[[:space:]].*\(0x00000012\)'
}

# Pick what QEMU boots: the ELF vmlinux through PVH, or else the bzImage.
prepare_kernel_image() {
    local abi="$1" kdir="$2"
    local bz="$kdir/pkg/boot/vmlinuz-$abi"
    [[ -e $kdir/kernel-image ]] && return 0
    if extract_vmlinux "$bz" "$kdir/vmlinux" && has_pvh_note "$kdir/vmlinux"; then
        ln -sfn vmlinux "$kdir/kernel-image"
    else
        say "no bootable PVH vmlinux could be extracted; booting the bzImage (slower)"
        rm -f "$kdir/vmlinux"
        ln -sfn "pkg/boot/vmlinuz-$abi" "$kdir/kernel-image"
    fi
}

# --- 3. the initramfs -------------------------------------------------------

# Module files for the initramfs, in load order, one absolute path a line.
initramfs_module_paths() {
    local abi="$1" root="$2" m
    for m in "${initramfs_modules[@]}"; do
        modprobe -d "$root" -S "$abi" --show-depends "$m" | awk '$1 == "insmod" { print $2 }'
    done | awk '!seen[$0]++'
}

build_initramfs() {
    local abi="$1" kdir="$2"
    local root="$kdir/pkg" busybox stamp mods stage m
    # busybox-static installs itself as /bin/busybox.
    busybox=/bin/busybox
    [[ -x $busybox ]] || skip "$busybox not found"
    mods="$(initramfs_module_paths "$abi" "$root")"
    [[ -n $mods ]] || die "cannot resolve the initramfs modules of $abi"

    # Rebuild only when an input changed.
    stamp="$( { cat "$here/initramfs/init"; sha256sum "$busybox"; echo "$mods"; } | sha256sum | cut -d' ' -f1)"
    [[ -e $kdir/initramfs.cpio && "$(cat "$kdir/initramfs.stamp" 2>/dev/null)" == "$stamp" ]] && return 0

    say "building the initramfs"
    stage="$(mktemp -d "$kdir/initramfs.XXXXXX")"
    mkdir -p "$stage"/{bin,dev,proc,sys,modules,lower,rw,results,newroot,stash}
    install -m 0755 "$busybox" "$stage/bin/busybox"
    local applet
    for applet in $("$busybox" --list); do
        [[ $applet == busybox ]] || ln -s busybox "$stage/bin/$applet"
    done
    install -m 0755 "$here/initramfs/init" "$stage/init"
    while read -r m; do
        cp "$m" "$stage/modules/"
        basename "$m" >>"$stage/modules/order"
    done <<<"$mods"
    echo "$abi" >"$stage/kernel-release"
    # The kernel's built-in initramfs already has /dev/console; add one anyway
    # when we can, so init always starts with a console.
    mknod -m 600 "$stage/dev/console" c 5 1 2>/dev/null || true
    (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
        "$busybox" cpio -o -H newc -R 0:0 2>/dev/null) >"$kdir/initramfs.cpio.tmp"
    mv "$kdir/initramfs.cpio.tmp" "$kdir/initramfs.cpio"
    echo "$stamp" >"$kdir/initramfs.stamp"
    rm -rf "$stage"
}

# --- main -------------------------------------------------------------------

[[ $(uname -m) == x86_64 ]] || skip "the harness needs an x86_64 host (got $(uname -m))"
ensure_packages
for tool in qemu-system-x86_64 dpkg-deb depmod modprobe xz; do
    command -v "$tool" >/dev/null || skip "$tool not found after installing packages"
done

mkdir -p "$cache" 2>/dev/null || skip "cannot create the cache directory $cache"
[[ -w $cache ]] || skip "cache directory $cache is not writable (set MEMGOV_VM_CACHE)"

# One setup at a time per cache (parallel test runs share it).
exec 9>"$cache/.lock"
flock 9

abi="$(choose_kernel)"
kdir="$cache/kernel-$abi"
mkdir -p "$kdir"
fetch_kernel "$abi" "$kdir"
prepare_kernel_image "$abi" "$kdir"
build_initramfs "$abi" "$kdir"
touch "$kdir/ready"

say "ready: kernel $abi ($(basename "$(readlink "$kdir/kernel-image")")), cache $kdir"

# What run-vm.sh reads: plain NAME=VALUE lines, no quoting needed.
if [[ $print_env == 1 ]]; then
    echo "MEMGOV_VM_KERNEL_RELEASE=$abi"
    echo "MEMGOV_VM_KERNEL_PACKAGE_VERSION=$(cat "$kdir/pkg/package-version")"
    echo "MEMGOV_VM_KERNEL_IMAGE=$(readlink -f "$kdir/kernel-image")"
    echo "MEMGOV_VM_INITRAMFS=$kdir/initramfs.cpio"
    echo "MEMGOV_VM_MODULES=$kdir/pkg/lib/modules/$abi"
fi
