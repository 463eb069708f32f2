#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""One run of bench/outcome as one timeline, on the guest's monotonic clock: when the server
stopped and started answering the probe, its memory.current (each change of 2% of the limit or
more), and what the server, the kernel and the governor logged.
usage: outcome-timeline.py RUN_DIR [--max BYTES] [--from SECONDS] [--to SECONDS]"""
import argparse
import os
import re
import sys

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("run")
ap.add_argument("--max", type=int, default=384 << 20, help="memory.max of the run, in bytes")
ap.add_argument("--from", dest="start", type=float, default=0)
ap.add_argument("--to", dest="end", type=float, default=float("inf"))
a = ap.parse_args()
events = []


def path(name):
    return os.path.join(a.run, name)


if os.path.exists(path("probe.log")):
    last = None
    for line in open(path("probe.log")):
        t, state = line.split()
        if state != last:
            events.append((float(t), "probe", state))
            last = state
if os.path.exists(path("memory.log")):
    shown = None
    for line in open(path("memory.log")):
        f = line.split()
        if len(f) < 3:
            continue
        cur = int(f[1])
        if shown is None or abs(cur - shown) >= a.max // 50:
            events.append((float(f[0]), "memory", f"{cur >> 20}M ({100 * cur / a.max:.0f}%) pid {f[2]}"))
            shown = cur
# journalctl -o short-monotonic: "[  12.345678] host unit[pid]: message"
journal = re.compile(r"^\[\s*([\d.]+)\] \S+ ([^:]+): (.*)$")
for name, what in (("mariadb.journal", "server"), ("kernel.log", "kernel"), ("governor.log", "governor")):
    if not os.path.exists(path(name)):
        continue
    for line in open(path(name), errors="replace"):
        m = journal.match(line)
        if not m:
            continue
        msg = m.group(3)
        if what == "kernel" and not re.search(r"oom-kill|Killed process|out of memory", msg):
            continue
        if what == "server" and not re.search(r"ready for connections|shutdown|Shutdown|exited|Started|Stopp|recovery|"
                                              r"Starting|Deactivated|killed|Main process", msg):
            continue
        events.append((float(m.group(1)), what, msg))
if not events:
    sys.exit(f"outcome-timeline: nothing to show in {a.run} (no probe.log, memory.log or journals)")
for t, what, msg in sorted(events, key=lambda e: e[0]):
    if a.start <= t <= a.end:
        print(f"{t:9.2f} {what:8} {msg}")
