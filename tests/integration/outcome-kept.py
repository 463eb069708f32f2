#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The outcome benchmark's kept runs say what the docs say: outcome-report.py, run again on
bench/results/outcome, prints the tables of the kept outcome.md, and each scenario's table of
medians in docs/benchmarks.md ("Three runs each") has, for every governor, the figures the report
gives (runs killed, seconds not answering, worst run, transactions, refused, latency, peak).
usage: outcome-kept.py SOURCE_ROOT"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from md_tables import tables  # noqa: E402

SRC = sys.argv[1]
KEPT = os.path.join(SRC, "bench", "results", "outcome")
REPORT = os.path.join(SRC, "bench", "outcome-report.py")
DOCS = os.path.join(SRC, "docs", "benchmarks.md")
DOC_NAME = {"oomd": "systemd-oomd"}


def fail(msg):
    print(f"outcome-kept: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


scenarios = sorted(d for d in os.listdir(KEPT) if os.path.isdir(os.path.join(KEPT, d)))
if not scenarios:
    fail(f"no kept runs in {KEPT}")

# The report, made again from the kept runs (in a copy: it writes beside them).
with tempfile.TemporaryDirectory() as tmp:
    copy = os.path.join(tmp, "outcome")
    shutil.copytree(KEPT, copy)
    subprocess.run([sys.executable, REPORT, copy, "versions", "384M", "10", "3"], check=True,
                   capture_output=True, text=True)
    with open(os.path.join(copy, "outcome.md")) as f:
        made = f.read()
with open(os.path.join(KEPT, "outcome.md")) as f:
    kept = f.read()
rows = lambda t: [l for l in t.splitlines() if l.startswith("|")]
if rows(made) != rows(kept):
    diff = [f"kept {a!r}, made {b!r}" for a, b in zip(rows(kept), rows(made)) if a != b]
    fail(f"the kept outcome.md is not what its runs say: {diff[:2] or 'the rows differ in number'}")
report = tables(made)

docs_text = open(DOCS).read()
section = docs_text[docs_text.index("### Three runs each"):]
section = section[:section.index("\n### ", 1)]
docs = tables(section)

checked = 0
for scenario in scenarios:
    if scenario not in report:
        fail(f"the report has no table for the kept scenario {scenario}")
    doc = docs.get(scenario)
    if doc is None:
        fail(f"docs/benchmarks.md has no table of the kept scenario {scenario} under 'Three runs each'")
    for governor, r in report[scenario].items():
        d = doc.get(DOC_NAME.get(governor, governor))
        if d is None:
            fail(f"{scenario}: docs/benchmarks.md has no row for {governor}")
        want = {
            "runs OOM-killed": f"{r['runs OOM-killed']} of {r['runs']}",
            "SIGKILLs": r["SIGKILLs"],
            "graceful restarts": r["graceful restarts"],
            "s not answering": r["s not answering"],
            "worst run": r["worst run's s not answering"],
            "transactions": r["transactions"],
            "client errors": r["client errors"],
            "refused (1040)": r["connections refused (1040)"],
            "p50 s": f"{float(r['p50 ms']) / 1000:.1f}",
            "p99 s": f"{float(r['p99 ms']) / 1000:.1f}",
            "peak MiB": r["peak MiB"],
        }
        for column, value in want.items():
            if column in d:
                if d[column] != value:
                    fail(f"{scenario}, {governor}: docs/benchmarks.md says {column} {d[column]}, "
                         f"the kept runs {value}")
                checked += 1
print(f"outcome-kept: ok: the kept outcome.md is what its runs say; {checked} figures of "
      f"{', '.join(scenarios)} in docs/benchmarks.md agree with them")
