#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds, caches and verifies the Debian chroots that hold the real database servers the tests
# run besides the host's MariaDB (docs/testing.md), each from Debian's own repositories:
#   mysql-9.7      Debian unstable: mysql-server-core (Oracle MySQL 9.7; its mysqld links
#                  libtcmalloc.so.4) and mysql-client-core
#   mariadb-11.8   Debian 13 (trixie): mariadb-server-core (MariaDB 11.8) and mariadb-client-core
#
#   provision-servers.sh [--rebuild] [--root] [FLAVOUR...]      (default: every flavour)
#
# A chroot is FOLDER/FLAVOUR/root, FOLDER being $MEMGOV_SERVERS_CACHE (default
# /var/cache/memgov-servers); FOLDER/FLAVOUR/stamp records what was verified in it. A later run
# reuses a chroot whose stamp matches the recipe below and whose server still reports the version
# recorded; otherwise (or with --rebuild) it builds it again from scratch: debootstrap
# --variant=minbase, then the packages with apt-get inside, without recommends. With --root, the
# chroot's directory alone goes to stdout, one line per flavour, and the report to stderr.
# $MEMGOV_SERVERS_MIRROR replaces the Debian mirror (default http://deb.debian.org/debian); the
# HTTP proxy is apt's own (Acquire::http::Proxy) unless http_proxy is set.
# Needs root and debootstrap (scripts/setup-deps.sh --test).
set -euo pipefail

# The recipe's revision: a change to what a chroot holds or how it is made changes it, and the
# chroots built by the previous one are built again.
RECIPE=2
FLAVOURS=(mysql-9.7 mariadb-11.8)

# The instances' data directory, made once in a chroot and copied for each (server_template).
# shellcheck source=../tests/lib/servers.sh
. "$(dirname "$0")/../tests/lib/servers.sh"

cache=${MEMGOV_SERVERS_CACHE:-/var/cache/memgov-servers}
mirror=${MEMGOV_SERVERS_MIRROR:-http://deb.debian.org/debian}
rebuild=0 print_root=0 flavours=()

say() { if (( print_root )); then echo "provision-servers: $*" >&2; else echo "provision-servers: $*"; fi; }
die() { echo "provision-servers: $*" >&2; exit 1; }

usage() {
        sed -n '/^#   provision-servers.sh/s/^#   //p' "$0" >&2
        exit 2
}

while (( $# )); do
        case $1 in
        --rebuild) rebuild=1 ;;
        --root) print_root=1 ;;
        -h|--help) usage ;;
        -*) echo "provision-servers: unknown option $1" >&2; usage ;;
        *) flavours+=("$1") ;;
        esac
        shift
done
(( ${#flavours[@]} )) || flavours=("${FLAVOURS[@]}")

# What each flavour is: its Debian suite, its packages, the server and client binaries, the
# major.minor the server must report, the allocator library its server must link (if any).
recipe() {
        case $1 in
        mysql-9.7)
                suite=sid packages=(mysql-server-core mysql-client-core)
                server=/usr/sbin/mysqld client=/usr/bin/mysql expect=9.7 links=libtcmalloc.so.4 ;;
        mariadb-11.8)
                suite=trixie packages=(mariadb-server-core mariadb-client-core)
                server=/usr/sbin/mariadbd client=/usr/bin/mariadb expect=11.8 links= ;;
        *)
                die "unknown flavour '$1' (known: ${FLAVOURS[*]})" ;;
        esac
        recipe_line="recipe=$RECIPE suite=$suite mirror=$mirror packages=${packages[*]}"
}

# Runs a command inside ROOT, in a mount namespace of its own (its /proc mounted there, gone with
# it): nothing is ever mounted in the cache, so removing a chroot never reaches the host's files.
in_root() {
        local root=$1
        shift
        unshare --mount --propagation private -- sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
                "$root" "$@"
}

human() { numfmt --to=iec --format=%.0f "$1"; }
took() { printf '%dm%02ds' $(( $1 / 60 )) $(( $1 % 60 )); }

# Checks ROOT against the recipe; on success sets the stamp's lines in `facts` (and `version`),
# on failure says why in `why`.
verify() {
        local root=$1 out p v line
        facts=() why=
        [[ -x $root$server ]] || { why="$server is missing"; return 1; }
        if ! out=$(in_root "$root" "$server" --version 2>&1); then
                why="$server --version failed: $(tail -3 <<<"$out")"
                return 1
        fi
        # The version's line, not a warning before it (mariadbd on a machine without a network
        # interface: "[Warning] failed to retrieve the MAC address").
        line=$(grep -m1 ' Ver ' <<<"$out") || line=$(head -1 <<<"$out")
        # mysqld  Ver 9.7.4-2 for Linux on x86_64 ((Debian))
        # mariadbd  Ver 11.8.3-MariaDB-0+deb13u1 for debian-linux-gnu on x86_64 (Debian 13)
        version=$(sed -n 's/.* Ver \([0-9][^ ]*\) .*/\1/p' <<<"$line")
        [[ -n $version ]] || { why="$server --version printed no version: $line"; return 1; }
        [[ $version == "$expect".* ]] || { why="$server is version $version, not $expect.x"; return 1; }
        facts+=("server=$server" "server_version=$line" "version=$version")
        for p in "${packages[@]}"; do
                v=$(in_root "$root" dpkg-query -W -f '${Version}' "$p" 2>/dev/null) ||
                        { why="package $p is not installed"; return 1; }
                facts+=("package=$p $v")
        done
        if ! out=$(in_root "$root" "$client" --version 2>&1); then
                why="$client --version failed: $(tail -3 <<<"$out")"
                return 1
        fi
        facts+=("client=$client" "client_version=$(head -1 <<<"$out")")
        if [[ -n $links ]]; then
                out=$(in_root "$root" ldd "$server" 2>&1) || { why="ldd $server failed: $(tail -3 <<<"$out")"; return 1; }
                line=$(grep -F "$links => " <<<"$out") || { why="$server does not link $links"; return 1; }
                facts+=("links=$(awk '{print $1, $2, $3}' <<<"$line")")
        fi
        # The servers' account: the host's own uid and gid where the host has one (as a unit with
        # RootDirectory= and User=mysql runs it), so that files and processes read the same on
        # both sides.
        local want have
        want=$(getent passwd mysql | cut -d: -f3,4) || want=
        have=$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$root/etc/passwd")
        [[ -n $have ]] || { why="the chroot has no mysql account"; return 1; }
        [[ -z $want || $want == "$have" ]] ||
                { why="the chroot's mysql account is $have, the host's $want"; return 1; }
        facts+=("account=mysql $have")
        [[ -d $root/srv/memgov ]] || { why="the instance mount point /srv/memgov is missing"; return 1; }
        in_root "$root" getent hosts localhost >/dev/null || { why="localhost does not resolve in the chroot"; return 1; }
        return 0
}

build() {
        local flavour=$1 dir=$2 new=$2/root.new log=$2/build.log start=$SECONDS
        rm -rf --one-file-system "$new"
        : >"$log"
        say "$flavour: building a Debian $suite chroot in $dir/root (${packages[*]}); log in $log"
        if ! debootstrap --variant=minbase --components=main "$suite" "$new" "$mirror" >>"$log" 2>&1; then
                tail -15 "$log" >&2
                die "$flavour: debootstrap $suite from $mirror failed (whole log: $log)"
        fi
        # Only what the server needs: no documentation, manual pages or translations from the
        # packages installed below; no service started by a maintainer script.
        printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
                'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/locale/*' \
                >"$new/etc/dpkg/dpkg.cfg.d/memgov-minimal"
        printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
        chmod 755 "$new/usr/sbin/policy-rc.d"
        local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -q -y -o APT::Install-Recommends=false)
        # debootstrap left the package lists it used: update only if they do not do.
        if ! in_root "$new" "${apt[@]}" install "${packages[@]}" >>"$log" 2>&1; then
                if ! in_root "$new" "${apt[@]}" update >>"$log" 2>&1 ||
                   ! in_root "$new" "${apt[@]}" install "${packages[@]}" >>"$log" 2>&1; then
                        tail -15 "$log" >&2
                        die "$flavour: apt-get install ${packages[*]} in the Debian $suite chroot failed (whole log: $log)"
                fi
        fi
        local ids=() want
        if want=$(getent passwd mysql | cut -d: -f3,4); then
                ids=(--uid "${want%:*}")
                in_root "$new" getent group mysql >/dev/null ||
                        in_root "$new" groupadd --system --gid "${want#*:}" mysql >>"$log" 2>&1 ||
                        die "$flavour: cannot create the group mysql (gid ${want#*:}) in the chroot (log: $log)"
        fi
        if ! in_root "$new" getent passwd mysql >/dev/null; then
                in_root "$new" getent group mysql >/dev/null || in_root "$new" groupadd --system mysql >>"$log" 2>&1 ||
                        die "$flavour: cannot create the group mysql in the chroot (log: $log)"
                in_root "$new" useradd --system "${ids[@]}" --gid mysql --no-create-home --home-dir /nonexistent \
                        --shell /usr/sbin/nologin mysql >>"$log" 2>&1 ||
                        die "$flavour: cannot create the account mysql ${ids[*]} in the chroot (log: $log)"
        fi
        # The mount point of a test's instance (its data directory, socket and logs). The names a
        # server looks itself up by (mariadb-install-db does), as in any container.
        mkdir -p "$new/srv/memgov"
        printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$new/etc/hosts"
        in_root "$new" apt-get clean >>"$log" 2>&1
        rm -rf "$new/var/lib/apt/lists/"* "$new/var/cache/apt/"*.bin
        if ! verify "$new"; then
                die "$flavour: the new chroot fails its verification: $why (log: $log)"
        fi
        built_seconds=$(( SECONDS - start ))
        built_size=$(du -sx -B1 "$new" | cut -f1)
        {
                echo "flavour=$flavour"
                echo "$recipe_line"
                printf '%s\n' "${facts[@]}"
                echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) seconds=$built_seconds size=$built_size"
        } >"$dir/stamp.new"
        rm -f "$dir/stamp"
        rm -rf --one-file-system "$dir/root"
        mv "$new" "$dir/root"
        mv "$dir/stamp.new" "$dir/stamp"
}

report() {
        local flavour=$1 dir=$2 how=$3 line pkgs=() links_line
        while IFS= read -r line; do
                case $line in
                package=*) pkgs+=("${line#package=}") ;;
                esac
        done <"$dir/stamp"
        links_line=$(sed -n 's/^links=\([^ ]*\) => \(.*\)/, links \1 (\2)/p' "$dir/stamp")
        say "$flavour: $(sed -n 's/^server_version=//p' "$dir/stamp")"
        line=$(printf '%s, ' "${pkgs[@]}")
        say "$flavour: ${line%, }$links_line"
        local built seconds size
        read -r built seconds size <<<"$(sed -n 's/^built=\([^ ]*\) seconds=\([0-9]*\) size=\([0-9]*\)$/\1 \2 \3/p' "$dir/stamp")"
        if [[ $how == cached ]]; then
                say "$flavour: cached in $dir/root: $(human "$size"), built $built in $(took "$seconds")"
        else
                say "$flavour: built in $(took "$seconds"): $dir/root, $(human "$size")"
        fi
}

provision() {
        local flavour=$1 dir=$cache/$1 lockfd
        recipe "$flavour"
        mkdir -p "$dir"
        exec {lockfd}>"$cache/$flavour.lock"
        if ! flock -n "$lockfd"; then
                say "$flavour: waiting for another provisioning, or for a server that runs in the chroot"
                flock -w 3600 "$lockfd" || die "$flavour: $cache/$flavour.lock still held after an hour"
        fi
        local reason=
        if (( rebuild )); then
                reason="rebuild asked for"
        elif [[ ! -f $dir/stamp || ! -d $dir/root ]]; then
                reason="not built yet"
        elif ! grep -qxF "$recipe_line" "$dir/stamp"; then
                reason="the recipe changed"
        elif [[ ${MEMGOV_VM:-} == 1 ]]; then
                # The test VM sees the host's own chroot, verified on the host (scripts/test.sh
                # provisions before any VM boots); running the chroot's binaries again costs some
                # ten seconds of the emulated CPU per flavour and scenario. Each scenario prints
                # the version the server it starts reports.
                [[ -x $dir/root$server ]] || reason="$server is missing"
        elif ! verify "$dir/root"; then
                reason="verification failed: $why"
        elif ! grep -qxF "version=$version" "$dir/stamp"; then
                reason="the server is $version now, the stamp says $(sed -n 's/^version=//p' "$dir/stamp")"
        fi
        if [[ -z $reason ]]; then
                report "$flavour" "$dir" cached
        elif [[ ${MEMGOV_VM:-} == 1 ]]; then
                # The test VM sees the host's chroots and has no network to build them with.
                die "$flavour: $reason, and a chroot is not built inside the test VM (run $0 on the host)"
        else
                [[ $reason == "not built yet" ]] || say "$flavour: building again: $reason"
                build "$flavour" "$dir"
                report "$flavour" "$dir" built
        fi
        server_use "$flavour" "$dir/root"
        if [[ ! -d $dir/root$SERVER_TEMPLATE ]]; then
                local start=$SECONDS
                server_template || die "$flavour: the server cannot make a data directory in the chroot"
                say "$flavour: a new data directory made in $(took $((SECONDS - start))), for the tests' instances to copy"
        fi
        exec {lockfd}>&-
        if (( print_root )); then echo "$dir/root"; fi
}

[[ $(id -u) == 0 ]] || die "needs root (debootstrap, chroot, mount namespaces)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/setup-deps.sh --test)"
if [[ -z ${http_proxy:-} ]]; then
        proxy=
        eval "$(apt-config shell proxy Acquire::http::Proxy)"
        [[ -n $proxy ]] && export http_proxy=$proxy
fi
mkdir -p "$cache"
for f in "${flavours[@]}"; do
        provision "$f"
done
