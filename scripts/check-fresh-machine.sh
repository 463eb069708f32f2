#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The README's setup on a fresh Debian 12 machine: a clean Debian 12 root (debootstrap
# --variant=minbase bookworm, Debian's own mirror), into which a copy of this tree goes, and in
# which, as root:
#   1. scripts/setup-deps.sh && scripts/build.sh      memgov built with only what building needs
#      (no cmocka: the tests are off), memgov runs and accepts the shipped policies;
#   2. scripts/setup-deps.sh --demo                   what the demo adds (memgov demo itself runs
#      in the test suite, in its VM);
#   3. scripts/setup-deps.sh --test, scripts/build.sh build -Dtests=enabled, as scripts/test.sh
#      does: the whole test suite builds.
#
#   check-fresh-machine.sh [--keep]
#
# The clean root is made once and kept as a tarball in $MEMGOV_FRESH_CACHE (default
# /var/cache/memgov-fresh; a fresh machine makes it, a minute or two); every run unpacks a new
# copy, so that nothing of an earlier run is there. The packages this machine has downloaded
# already (/var/cache/apt/archives) are offered to the root's apt as its own cache: the same
# files it would download, each checked by apt against its package lists; any other is
# downloaded. No service starts in the root (policy-rc.d), and everything runs in mount and
# process namespaces of its own: what a package starts there ends with the check.
# --keep: the root is kept (its path is printed). Needs root and debootstrap.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD

# The recipe's revision: a change to how the root is made makes it anew.
RECIPE=2
cache=${MEMGOV_FRESH_CACHE:-/var/cache/memgov-fresh}
mirror=${MEMGOV_FRESH_MIRROR:-http://deb.debian.org/debian}
keep=0
case ${1:-} in
--keep) keep=1 ;;
"") ;;
*) echo "check-fresh-machine: unknown argument '$1' (expected --keep)" >&2; exit 2 ;;
esac

say() { echo "check-fresh-machine: $*"; }
fail() { echo "check-fresh-machine: FAIL: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "needs root (debootstrap, chroot)"
command -v debootstrap >/dev/null || fail "needs debootstrap (scripts/setup-deps.sh --test)"

tarball=$cache/bookworm-minbase.tar
stamp_line="recipe=$RECIPE suite=bookworm variant=minbase mirror=$mirror"
if [[ ! -f $tarball || "$(cat "$cache/stamp" 2>/dev/null)" != "$stamp_line" ]]; then
        mkdir -p "$cache"
        new=$cache/root.new
        rm -rf --one-file-system "$new" "$cache/stamp"
        start=$SECONDS
        say "making a clean Debian 12 root (debootstrap --variant=minbase bookworm); log in $cache/build.log"
        debootstrap --variant=minbase --components=main bookworm "$new" "$mirror" >"$cache/build.log" 2>&1 ||
                { tail -15 "$cache/build.log" >&2; fail "debootstrap failed (whole log: $cache/build.log)"; }
        # The package sources of a Debian 12 installation: the release, its updates, security.
        rm -f "$new/etc/apt/sources.list"
        cat >"$new/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
        # What debootstrap downloaded is not on a fresh machine.
        rm -f "$new"/var/cache/apt/archives/*.deb
        tar -C "$new" -cf "$tarball.new" .
        mv "$tarball.new" "$tarball"
        rm -rf --one-file-system "$new"
        echo "$stamp_line" >"$cache/stamp"
        say "made in $((SECONDS - start)) s: $tarball ($(du -h "$tarball" | cut -f1))"
fi

root=$(mktemp -d /var/tmp/memgov-fresh.XXXXXX)
cleanup() {
        if (( keep )); then
                say "kept $root"
        else
                rm -rf --one-file-system "$root"
        fi
}
trap cleanup EXIT
tar -C "$root" -xf "$tarball"
# What a chroot needs of the host and a machine has of its own: name resolution, and no
# service started by a package's maintainer script.
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
# This machine's downloads, linked (or copied) into the root's apt cache.
if compgen -G "/var/cache/apt/archives/*.deb" >/dev/null; then
        ln -f /var/cache/apt/archives/*.deb "$root/var/cache/apt/archives/" 2>/dev/null ||
                cp -f /var/cache/apt/archives/*.deb "$root/var/cache/apt/archives/"
fi
# A copy of the tree: the files git knows (committed or not, none it ignores: no build directory).
mkdir -p "$root/root/memgov"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        git -C "$src" ls-files -z --cached --others --exclude-standard |
                (cd "$src" && tar --null -T - -cf - 2>/dev/null) | tar -C "$root/root/memgov" -xf -
else
        tar -C "$src" --exclude='./build*' -cf - . | tar -C "$root/root/memgov" -xf -
fi

# Runs a shell command in the root, in the tree, as root on a fresh machine would: its own mount
# and process namespaces, /proc, /sys, /dev and /tmp mounted there alone.
in_root() {
        unshare --mount --pid --fork --propagation private -- sh -c '
                r=$0
                mount -t proc proc "$r/proc" && mount -t sysfs sys "$r/sys" &&
                mount --rbind /dev "$r/dev" && mount -t tmpfs tmpfs "$r/tmp" &&
                exec chroot "$r" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                        LANG=C.UTF-8 /bin/bash -c "cd /root/memgov && $1"' "$root" "$1"
}

# The log of the last run, kept beside the cached root.
log=$cache/last-run.log
: >"$log"
step() {
        local what=$1 cmd=$2 start=$SECONDS
        if ! in_root "$cmd" >>"$log" 2>&1; then
                tail -40 "$log" >&2
                fail "$what: '$cmd' failed in the clean root (whole log: $log)"
        fi
        say "ok: $what ($((SECONDS - start)) s)"
}

# 1. Build and run memgov with what setup-deps.sh installs without a flag.
step "setup-deps.sh and build.sh, no test dependency" "scripts/setup-deps.sh && scripts/build.sh build"
in_root "dpkg-query -W -f='\${Status}' libcmocka-dev 2>/dev/null | grep -q 'install ok installed'" &&
        fail "libcmocka-dev was installed by setup-deps.sh without --test"
grep -q 'tests: off (cmocka not found' "$log" || fail "the build did not say that the tests are off: $(tail -5 "$log")"
step "memgov runs" "build/memgov --version && for p in policies/*.ini; do build/memgov check \$p; done"
# A configure error is shown, not swallowed: the tests asked for without cmocka.
in_root "scripts/build.sh --quiet build-tests -Dtests=enabled" >"$root.err" 2>&1 &&
        fail "build.sh -Dtests=enabled succeeded without cmocka"
grep -q 'Dependency "cmocka" not found' "$root.err" || fail "build.sh did not show meson's error: $(tail -5 "$root.err")"
rm -f "$root.err"
say "ok: build.sh shows meson's error (-Dtests=enabled without cmocka: 'Dependency \"cmocka\" not found')"

# 2. What the demo adds.
step "setup-deps.sh --demo, then the demo's build" \
        "scripts/setup-deps.sh --demo && scripts/build.sh --quiet build && command -v mariadbd && command -v debootstrap"

# 3. The test suite builds, as scripts/test.sh builds it.
step "setup-deps.sh --test and the build with the tests" \
        "scripts/setup-deps.sh --test && scripts/build.sh --quiet build -Dtests=enabled && test -x build/tests/test-engine"
say "PASS: the README's setup works on a clean Debian 12 root"
