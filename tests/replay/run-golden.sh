#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs one replay golden case and compares its output byte for byte with the expected file.
#   run-golden.sh MEMGOV CASE            compare
#   run-golden.sh MEMGOV CASE --update   rewrite CASE.expected (read the diff before committing)
# CASE.case holds the arguments of `memgov replay`, one line; the expected file holds standard
# output, then standard error, then the exit status.
set -u
case $1 in
/*) memgov=$1 ;;
*) memgov=$PWD/$1 ;;
esac
name=$2
here=$(cd "$(dirname "$0")" && pwd)
cd "$here" || exit 1

args=$(cat "$name.case") || exit 1
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err" "$out.all"' EXIT

# shellcheck disable=SC2086 # the case file holds several arguments
"$memgov" replay $args >"$out" 2>"$err"
status=$?
{
        cat "$out"
        echo "--- stderr"
        cat "$err"
        echo "--- exit status $status"
} >"$out.all"

if [ "${3:-}" = "--update" ]; then
        cp "$out.all" "$name.expected"
        echo "updated $name.expected"
        exit 0
fi
if ! diff -u "$name.expected" "$out.all"; then
        echo "replay output of case $name differs from $name.expected" >&2
        exit 1
fi
