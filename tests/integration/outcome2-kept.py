#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/outcome2's kept pass (bench/results/outcome2-pass, and the runs kept beside it for a
comparison, outcome2-before-*) is what its raw logs say: for every
kept run, its figures (result.env) are made again from its compressed logs (raw.tar.gz) by the
benchmark's own code (outcome2-report.py --clients, outcome2-server.py) and must be the same;
every run names the build behind it (the pass's build.txt) and an ident. The docs' tables are
made from these figures (bench/docs-tables.py, checked by the docs test).
usage: outcome2-kept.py SOURCE_ROOT"""
import glob
import os
import subprocess
import sys
import tarfile
import tempfile

SRC = sys.argv[1]
# The pass, and the runs kept beside it for a comparison the docs make (outcome2-before-*).
PASSES = sorted(p for p in glob.glob(os.path.join(SRC, "bench", "results", "outcome2-*")) if os.path.isdir(p))
REPORT = os.path.join(SRC, "bench", "outcome2-report.py")
SERVER = os.path.join(SRC, "bench", "outcome2-server.py")


def fail(msg):
    print(f"outcome2-kept: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def env(text):
    return dict(line.split("=", 1) for line in text.strip().splitlines() if "=" in line)


def check(PASS):
    checked = 0
    if not os.path.exists(os.path.join(PASS, "build.txt")):
        fail(f"{PASS}/build.txt is missing: which build made the runs")
    runs = sorted(glob.glob(os.path.join(PASS, "*", "*", "*", "*", "run-*", "result.env")))
    if not runs:
        fail(f"no runs in {PASS}")
    for f in runs:
        d = os.path.dirname(f)
        rel = os.path.relpath(d, PASS)
        r = env(open(f).read())
        if not os.path.exists(os.path.join(d, "ident")):
            fail(f"{rel}: no ident")
        raw = os.path.join(d, "raw.tar.gz")
        if not os.path.exists(raw):
            fail(f"{rel}: no raw logs (raw.tar.gz)")
        with tempfile.TemporaryDirectory() as tmp:
            with tarfile.open(raw) as t:
                t.extractall(tmp, filter="data")
            made = {}
            if os.path.exists(os.path.join(tmp, "probe.log")):
                made.update(env(subprocess.run([sys.executable, REPORT, "--clients", tmp], check=True,
                                               capture_output=True, text=True).stdout))
            if r.get("unfinished") != "1":
                made.update(env(subprocess.run([sys.executable, SERVER, tmp, r["governor"], r["limit_bytes"], r["setting"]],
                                               check=True, capture_output=True, text=True).stdout))
            for k, v in made.items():
                if k in r and r[k] != v:
                    fail(f"{rel}: {k}={r[k]} in result.env, {v} from its raw logs")
            missing = [k for k in ("down_seconds", "transactions", "oom_kills") if k not in r]
            if missing and r.get("unfinished") != "1":
                fail(f"{rel}: result.env lacks {', '.join(missing)}")
        checked += 1
    return checked


if not any(p.endswith("outcome2-pass") for p in PASSES):
    print("outcome2-kept: SKIP: no kept pass of bench/outcome2 (bench/results/outcome2-pass)")
    sys.exit(77)
checked = sum(check(p) for p in PASSES)
print(f"outcome2-kept: ok: {checked} kept run(s) in {len(PASSES)} kept part(s), each one's figures made again from its raw logs")
