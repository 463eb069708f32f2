#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Installs the Debian packages memgov needs, and only those missing.
#   setup-deps.sh          to build and run memgov
#   setup-deps.sh --test   also everything the test suite uses
#   setup-deps.sh --demo   also what memgov demo runs (a MariaDB server, debootstrap for the other
#                          servers' chroots; the VM installs its own)
set -euo pipefail

build_pkgs=(gcc libc6-dev pkg-config meson ninja-build python3 scdoc
            libsystemd-dev libcgroup-dev libinih-dev libjson-c-dev libelf-dev libmariadb-dev
            libmicrohttpd-dev libcairo2-dev)
test_pkgs=(libcmocka-dev clang libclang-rt-14-dev libjemalloc2 libgoogle-perftools4 gdb mariadb-server mariadb-client
           sysbench qemu-system-x86 busybox-static cpio xz-utils zstd kmod yamllint debootstrap)

pkgs=("${build_pkgs[@]}")
demo_pkgs=(mariadb-server mariadb-client debootstrap)
if [[ "${1:-}" == "--test" ]]; then
        pkgs+=("${test_pkgs[@]}")
elif [[ "${1:-}" == "--demo" ]]; then
        pkgs+=("${demo_pkgs[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
                missing+=("$p")
        fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
if [[ $(id -u) -ne 0 ]]; then
        if ! command -v sudo >/dev/null; then
                echo "setup-deps: need root (or sudo) to install: ${missing[*]}" >&2
                exit 1
        fi
        sudo=(sudo)
fi

echo "setup-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have stale or no package lists: update once, then install.
if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
        "${sudo[@]}" apt-get update -qq
        "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
