#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Keeps a pass of bench/outcome2, or a part of one, for the docs: each run's figures
# (result.env), its ident and its raw logs (raw.tar.gz), and the build behind them (build.txt,
# said once for the pass: every part of it must be of the same build).
#
#   bench/outcome2-keep.sh OUT DEST "BUILD"
#
# The tables in the docs are made from DEST by bench/docs-tables.py; the test outcome2-kept
# makes every run's figures again from its raw logs.
set -euo pipefail
out=${1:?usage: outcome2-keep.sh OUT DEST BUILD} dest=${2:?usage: outcome2-keep.sh OUT DEST BUILD}
build=${3:?usage: outcome2-keep.sh OUT DEST BUILD}
if [[ -e $dest/build.txt && $(cat "$dest/build.txt") != "$build" ]]; then
        echo "outcome2-keep: $dest holds runs of another build ($(cat "$dest/build.txt")): a pass is of one build" >&2
        exit 1
fi
n=0
for f in "$out"/*/*/*/*/run-*/result.env; do
        [[ -e $f ]] || continue
        d=${f%/result.env}
        [[ -f $d/ident && -f $d/raw.tar.gz ]] || { echo "outcome2-keep: ${d#"$out"/}: no ident or raw logs, not kept" >&2; continue; }
        rel=${d#"$out"/}
        mkdir -p "$dest/$rel"
        cp "$d/result.env" "$d/ident" "$d/raw.tar.gz" "$dest/$rel/"
        n=$((n + 1))
done
((n > 0)) || { echo "outcome2-keep: no runs in $out" >&2; exit 1; }
echo "$build" >"$dest/build.txt"
echo "outcome2-keep: $n run(s) kept in $dest"
