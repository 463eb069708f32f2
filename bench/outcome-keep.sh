#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Keeps what the outcome report needs of a pass, small enough to commit: each run's figures
# (result.env, with the connections refused counted from its clients' logs) and its ident.
#
#   bench/outcome-keep.sh OUT DEST
#
# DEST is a pass of its own: bench/outcome-report.py reads it as it reads OUT, and
# `bench/outcome.sh BUILD --out COPY --resume` on a copy of it makes only the runs it lacks
# (those whose ident no longer matches: other benchmark scripts, settings or memgov).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: outcome-keep.sh OUT DEST}
dest=${2:?usage: outcome-keep.sh OUT DEST}
n=0
for f in "$out"/*/*/run-*/result.env; do
        [[ -e $f ]] || continue
        d=${f%/result.env}
        rel=${d#"$out"/}
        mkdir -p "$dest/$rel"
        cp "$f" "$dest/$rel/result.env"
        [[ -f $d/ident ]] && cp "$d/ident" "$dest/$rel/ident"
        if ! grep -q '^refused=' "$f"; then
                echo "refused=$(python3 "$here/outcome-report.py" --refused "$d")" >>"$dest/$rel/result.env"
        fi
        n=$((n + 1))
done
((n > 0)) || { echo "outcome-keep: no runs in $out" >&2; exit 1; }
echo "outcome-keep: $n run(s) kept in $dest"
