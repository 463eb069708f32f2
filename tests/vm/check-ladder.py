#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks a governor run against its recorded trace:
  1. replaying the trace with the same policy gives exactly the decisions the daemon logged;
  2. (--before-oom) every rung of the ladder was reached before the kernel's OOM kill.
usage: check-ladder.py MEMGOV POLICY TRACE DAEMON_LOG [--before-oom] [--rungs trim,throttle,...]"""
import csv
import json
import os
import re
import subprocess
import sys


def fail(msg):
    print(f"check-ladder: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    memgov, policy, trace, log = sys.argv[1:5]
    before_oom = "--before-oom" in sys.argv
    rungs = ["trim", "throttle", "reset", "restart"]
    if "--rungs" in sys.argv:
        rungs = sys.argv[sys.argv.index("--rungs") + 1].split(",")

    out = subprocess.run([memgov, "replay", "--json", "--policy", policy, trace],
                         capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"replay failed: {out.stderr.strip()}")
    replay = json.loads(out.stdout)["decisions"]

    # What the daemon logged: "memgov: VERB   REASON" with VERB as in format.h (dry run: "would ..."):
    # each action's verb and name from the registry of actions (src/core/action.c).
    verbs = {"level": "level", "effect": "effect", "hold": "hold", "event": "event"}
    registry = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "core", "action.c")).read()
    for name, verb in re.findall(r'\.name = "([^"]+)", \.verb = "([^"]+)"', registry):
        verbs[verb] = verbs["would " + verb] = name
    if len(verbs) < 4 + 2 * 7:
        fail(f"the registry of actions not read: {verbs}")
    pattern = re.compile(r"^memgov: (?:warning: |error: )?(" + "|".join(sorted(map(re.escape, verbs), key=len, reverse=True)) + r") +(.*)$")
    daemon = []
    for line in open(log, encoding="utf-8"):
        m = pattern.match(line.rstrip("\n"))
        if m:
            daemon.append((verbs[m.group(1)], m.group(2)))
    replayed = [(d["kind"], d["reason"]) for d in replay]
    if daemon != replayed:
        for i, (a, b) in enumerate(zip(daemon, replayed)):
            if a != b:
                fail(f"decision {i} differs:\n  daemon: {a}\n  replay: {b}")
        fail(f"the daemon logged {len(daemon)} decisions, replay gives {len(replayed)}")
    print(f"check-ladder: ok: replay reproduces the {len(daemon)} decisions the daemon logged")

    rows = list(csv.DictReader(line for line in open(trace) if not line.startswith("#")))
    first = {}
    for d in replay:
        if d["kind"] == "level" and d["level"] not in first and rungs.count(d["level"]):
            first[d["level"]] = d["time"]["mono_us"]
    missing = [r for r in rungs if r not in first]
    if missing:
        fail(f"never reached: {', '.join(missing)}")
    if before_oom:
        oom_at = None
        for prev, row in zip(rows, rows[1:]):
            if row["events_oom_kill"] and int(row["events_oom_kill"]) > 0:
                oom_at = int(prev["mono_us"])  # the kill came after this sample
                break
        if oom_at is None:
            fail("the trace shows no OOM kill (events_oom_kill stayed 0)")
        late = [r for r in rungs if first[r] >= oom_at]
        if late:
            fail(f"reached only after the OOM kill: {', '.join(late)}")
        start = int(rows[0]["mono_us"])
        lead = ", ".join(f"{r} {(oom_at - first[r]) / 1e6:.1f}s" for r in rungs)
        print(f"check-ladder: ok: every rung before the OOM kill at +{(oom_at - start) / 1e6:.1f}s "
              f"(lead: {lead})")


if __name__ == "__main__":
    main()
