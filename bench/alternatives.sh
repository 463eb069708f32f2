# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# The alternatives the outcome benchmarks run beside memgov, from Debian's packages: downloaded
# into CACHE/debs and unpacked into CACHE/root/PACKAGE, never installed on this host (their
# services would start here). Source it, then:
#   alternatives_unpack CACHE WHO   (WHO names the caller in errors; exits 77 when a package
#                                    cannot be downloaded; sets ALTERNATIVES_VERSIONS, e.g.
#                                    "earlyoom 1.7-1+b1, nohang 0.2.0-1.1, systemd-oomd 252...")
alternatives_unpack() {
        local cache=$1 who=$2 pkg
        for pkg in earlyoom nohang systemd-oomd; do
                [[ -d $cache/root/$pkg/usr ]] && continue
                mkdir -p "$cache/debs" "$cache/root/$pkg"
                (cd "$cache/debs" && apt-get download "$pkg" >/dev/null 2>&1) ||
                        (apt-get update -qq && cd "$cache/debs" && apt-get download "$pkg" >/dev/null) ||
                        { echo "$who: cannot download Debian's $pkg package" >&2; exit 77; }
                dpkg-deb -x "$(ls "$cache/debs/${pkg}"_*.deb | tail -1)" "$cache/root/$pkg"
        done
        ALTERNATIVES_VERSIONS=$(for pkg in earlyoom nohang systemd-oomd; do
                echo "$pkg $(dpkg-deb -f "$(ls "$cache/debs/${pkg}"_*.deb | tail -1)" Version)"
        done | paste -sd',' | sed 's/,/, /g')
}
