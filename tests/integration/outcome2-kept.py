#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/outcome2's kept pass (bench/results/outcome2-pass, and the runs kept beside it for a
comparison, outcome2-before-*) is what its raw logs say: for every
kept run, its figures (result.env) are made again from its compressed logs (raw.tar.gz) by the
benchmark's own code (outcome2-report.py --clients, outcome2-server.py) and must be the same;
every run names the build behind it (the pass's build.txt) and an ident. The docs' tables are
made from these figures (bench/docs-tables.py, checked by the docs test).
usage: outcome2-kept.py SOURCE_ROOT"""
import concurrent.futures
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


def check_run(PASS, f):
    """What is wrong with one kept run, or None."""
    d = os.path.dirname(f)
    rel = os.path.relpath(d, PASS)
    r = env(open(f).read())
    if not os.path.exists(os.path.join(d, "ident")):
        return f"{rel}: no ident"
    raw = os.path.join(d, "raw.tar.gz")
    if not os.path.exists(raw):
        return f"{rel}: no raw logs (raw.tar.gz)"
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
                return f"{rel}: {k}={r[k]} in result.env, {v} from its raw logs"
        missing = [k for k in ("down_seconds", "transactions", "oom_kills") if k not in r]
        if missing and r.get("unfinished") != "1":
            return f"{rel}: result.env lacks {', '.join(missing)}"
    return None


def runs_of(PASS):
    if not os.path.exists(os.path.join(PASS, "build.txt")):
        fail(f"{PASS}/build.txt is missing: which build made the runs")
    runs = sorted(glob.glob(os.path.join(PASS, "*", "*", "*", "*", "run-*", "result.env")))
    if not runs:
        fail(f"no runs in {PASS}")
    return [(PASS, f) for f in runs]


if not any(p.endswith("outcome2-pass") for p in PASSES):
    print("outcome2-kept: SKIP: no kept pass of bench/outcome2 (bench/results/outcome2-pass)")
    sys.exit(77)
# One run a CPU: each is a decompression and two interpreters (the kept runs grow with each pass;
# one at a time, 123 of them took 22 s).
runs = [run for p in PASSES for run in runs_of(p)]
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
    wrong = [w for w in pool.map(lambda run: check_run(*run), runs) if w]
if wrong:
    fail(wrong[0] + (f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""))
checked = len(runs)
print(f"outcome2-kept: ok: {checked} kept run(s) in {len(PASSES)} kept part(s), each one's figures made again from its raw logs")
