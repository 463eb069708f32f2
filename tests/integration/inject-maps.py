#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A target with 300k mappings (pages of alternating protections): its /proc/PID/maps is ~22 MB.
memgov streams the file through a fixed buffer: its peak RSS (VmHWM, from wait4's ru_maxrss)
during a whole trim of that target must exceed the peak of a trim of a plain target by little,
far less than reading the file whole (twice) takes.
usage: inject-maps.py MEMGOV INJECT_TARGET"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inject_target import Target  # noqa: E402

MEMGOV, BINARY = sys.argv[1], sys.argv[2]
MAPPINGS = 300000
GROWTH_MAX_KIB = 4 * 1024  # over a plain target's trim; the file is ~22 MB


def fail(msg):
    print(f"inject-maps: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def peak_of_trim(t):
    """memgov's peak RSS in KiB over one whole trim of t."""
    p = subprocess.Popen([MEMGOV, "trim", "--pid", str(t.pid), "--thread", str(t.tids["read"]), "--method", "ptrace",
                          "--json"], stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    rep = json.loads(out)
    if p.returncode != 0 or not rep["ok"] or not rep["completed"]:
        fail(f"the trim of {t.pid} failed: {rep.get('error')}")
    return usage.ru_maxrss


def main():
    if os.geteuid() != 0:
        fail("needs root (vm.max_map_count, ptrace)")
    knob = "/proc/sys/vm/max_map_count"
    with open(knob) as f:
        saved = f.read().strip()
    t = None
    try:
        with open(knob, "w") as f:
            f.write(str(MAPPINGS + 65530))
        plain = Target(BINARY, 300, 400)
        try:
            base = peak_of_trim(plain)
            plain.stop()
        finally:
            plain.kill()
        t = Target(BINARY, 300, 400, mode=f"maps={MAPPINGS}")
        with open(f"/proc/{t.pid}/maps") as f:
            lines = sum(1 for _ in f)
        if lines < MAPPINGS:
            fail(f"the target has only {lines} mappings")
        peak = peak_of_trim(t)
        if peak - base > GROWTH_MAX_KIB:
            fail(f"memgov's peak RSS was {peak} KiB for a target with {lines} mappings, {base} KiB for a plain one "
                 f"(at most {GROWTH_MAX_KIB} KiB more)")
        t.feed()
        if t.failures() or t.stop() != 0:
            fail(f"the target saw wrong results: {t.failures()[:3]}")
        print(f"inject-maps: ok: trimmed a target with {lines} mappings; memgov's peak RSS {peak} KiB, "
              f"{base} KiB for a plain target (bound: {GROWTH_MAX_KIB} KiB more)")
    finally:
        if t:
            t.kill()
        with open(knob, "w") as f:
            f.write(saved)


if __name__ == "__main__":
    main()
