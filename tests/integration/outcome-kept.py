#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The outcome benchmark's kept passes are what their runs say: outcome-report.py, run again on
each kept pass of bench/results/ (a directory with an outcome.md and runs beside it), prints the
tables of its kept outcome.md; the chart of docs/benchmarks.md is the one the pass it shows makes
(bench/results/outcome-pass). The docs' tables are checked by tests/docs/check-docs.py.
usage: outcome-kept.py SOURCE_ROOT"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
RESULTS = os.path.join(SRC, "bench", "results")
REPORT = os.path.join(SRC, "bench", "outcome-report.py")
CHART = os.path.join(SRC, "docs", "images", "outcome.svg")
CHARTED = "outcome-pass"


def fail(msg):
    print(f"outcome-kept: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


rows = lambda t: [l for l in t.splitlines() if l.startswith("|")]
passes = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(RESULTS, "*", "outcome.md")))
if not any(os.path.basename(p) == CHARTED for p in passes):
    fail(f"no kept pass {CHARTED} in {RESULTS}")
for kept_dir in passes:
    name = os.path.basename(kept_dir)
    with open(os.path.join(kept_dir, "outcome.md")) as f:
        kept = f.read()
    # The arguments it was made with, from its own first line.
    m = re.search(r"Medians of (\d+) run\(s\) per cell; MariaDB under MemoryMax (\S+), one phase (\d+)s; (.*?); "
                  r"alternatives: (.*?)\. Unfinished", kept)
    if not m:
        fail(f"{name}/outcome.md: its first line is not the report's")
    nruns, memmax, scale, vms, versions = m.groups()
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, name)
        shutil.copytree(kept_dir, copy)
        subprocess.run([sys.executable, REPORT, copy, versions, memmax, scale, nruns, vms], check=True,
                       capture_output=True, text=True)
        made = open(os.path.join(copy, "outcome.md")).read()
        svg = open(os.path.join(copy, "outcome.svg")).read()
    if rows(made) != rows(kept):
        diff = [f"kept {a!r}, made {b!r}" for a, b in zip(rows(kept), rows(made)) if a != b]
        fail(f"{name}: the kept outcome.md is not what its runs say: {diff[:2] or 'the rows differ in number'}")
    if name == CHARTED and open(CHART).read() != svg:
        fail(f"docs/images/outcome.svg is not the chart of bench/results/{CHARTED} (bench/outcome-report.py "
             f"makes it: copy its outcome.svg)")
    print(f"outcome-kept: ok: {name}: outcome.md is what its {len(glob.glob(os.path.join(kept_dir, '*/*/run-*')))} "
          f"runs say")
print(f"outcome-kept: ok: docs/images/outcome.svg is the chart of {CHARTED}")
