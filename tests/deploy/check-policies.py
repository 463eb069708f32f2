#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The shipped policies: each one passes memgov check; each does what its header promises on a
recorded trace of a server whose sessions grow (conservative never restarts and resets less
than the default; aggressive acts earlier and allows more restarts); the Kubernetes ConfigMap
holds policies/kubernetes.ini with dry-run = yes added, and nothing else.
usage: check-policies.py MEMGOV SOURCE_ROOT"""
import glob
import json
import os
import subprocess
import sys

MEMGOV, SRC = sys.argv[1], sys.argv[2]
TRACE = os.path.join(SRC, "tests", "replay", "session-growth.csv")


def fail(msg):
    print(f"check-policies: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg):
    print(f"check-policies: ok: {msg}")


def replay(policy):
    cmd = [MEMGOV, "replay", "--json", TRACE] + (["--policy", policy] if policy else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{' '.join(cmd)}: {r.stderr}")
    d = json.loads(r.stdout)
    counts = {}
    for dec in d["decisions"]:
        counts[dec["kind"]] = counts.get(dec["kind"], 0) + 1
    first = {dec["kind"]: dec["time"]["mono_us"] for dec in reversed(d["decisions"])}
    return counts, first


policies = sorted(glob.glob(os.path.join(SRC, "policies", "*.ini")))
names = {os.path.basename(p)[:-4] for p in policies}
if not {"default", "conservative", "aggressive", "kubernetes"} <= names:
    fail(f"policies/ holds {sorted(names)}")
for p in policies:
    r = subprocess.run([MEMGOV, "check", p], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"memgov check {p}: {r.stdout}{r.stderr}")
ok(f"memgov check passes: {', '.join(sorted(names))}")

default, dfirst = replay(None)
cons, _ = replay(os.path.join(SRC, "policies", "conservative.ini"))
aggr, afirst = replay(os.path.join(SRC, "policies", "aggressive.ini"))
if default.get("restart", 0) < 1:
    fail("the trace no longer makes the default policy restart: pick another trace")
if cons.get("restart", 0) != 0:
    fail(f"conservative restarted {cons['restart']} time(s)")
if cons.get("reset", 0) >= default.get("reset", 0):
    fail(f"conservative reset {cons.get('reset', 0)} time(s), the default {default.get('reset', 0)}")
ok(f"conservative: 0 restarts (default {default['restart']}), {cons.get('reset', 0)} reset(s) (default "
   f"{default['reset']})")
# The trim comes as soon as the trend shows the rise under both (the trace rises from its first
# minute); the dearer rungs come sooner under the aggressive policy.
if not (afirst["trim"] <= dfirst["trim"] and afirst["reset"] < dfirst["reset"] and afirst["restart"] < dfirst["restart"]):
    fail(f"aggressive does not act earlier: {afirst} vs {dfirst}")
if aggr.get("restart", 0) <= default["restart"]:
    fail(f"aggressive restarted {aggr.get('restart', 0)} time(s), the default {default['restart']}")
ok(f"aggressive: first trim {afirst['trim'] // 1000000}s, reset {afirst['reset'] // 1000000}s, restart "
   f"{afirst['restart'] // 1000000}s into the trace (default {dfirst['trim'] // 1000000}s, "
   f"{dfirst['reset'] // 1000000}s, {dfirst['restart'] // 1000000}s); {aggr['restart']} restarts")

cm = open(os.path.join(SRC, "docs", "kubernetes", "configmap.yaml")).read()
body = cm.split("memgov.ini: |\n", 1)[1].rstrip("\n").split("\n")
text = "\n".join(line[4:] if line.startswith("    ") else line.strip() for line in body) + "\n"
keys = lambda t: [line.strip() for line in t.split("\n") if line.strip() and not line.lstrip().startswith("#")]  # noqa: E731
shipped = keys(open(os.path.join(SRC, "policies", "kubernetes.ini")).read())
want = list(shipped)
want.insert(want.index("[governor]") + 1, "dry-run = yes")
if keys(text) != want:
    fail(f"the ConfigMap's policy is not policies/kubernetes.ini plus dry-run = yes:\n{keys(text)}\n{want}")
ok("docs/kubernetes/configmap.yaml = policies/kubernetes.ini + dry-run = yes")
