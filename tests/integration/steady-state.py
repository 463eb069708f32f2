#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The governor's own footprint stays flat: the daemon on a fake tree samples ten times a second
for a minute (a third of it under the sanitizers) while the working set saws up and down (the ladder climbs and comes back, actions
are decided and carried out), its status is asked for and its metrics scraped twice a second;
after a warm-up, its heap in use, resident set and open files do not grow, and its memory is
locked.
usage: steady-state.py MEMGOV SOURCE_ROOT"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import Checks, MB, make_tree, set_current  # noqa: E402

MEMGOV, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")
# Under AddressSanitizer mallinfo2 reports nothing, freed memory waits in a quarantine and
# mlockall is a no-op: there the run checks the rest (and LeakSanitizer checks the exit), which
# the minute the heap's trend needs does not make surer: a third of it.
SANITIZED = os.environ.get("MEMGOV_SANITIZED") == "1"
WARMUP, MEASURE = (5, 15) if SANITIZED else (15, 45)

CHECKS = Checks("steady-state")
fail, wait_for = CHECKS.fail, CHECKS.wait_for


def main():
    tmp = tempfile.mkdtemp(prefix="memgov-steady-")
    d = None
    try:
        cg, proc = make_tree(DATA, tmp, 100 * MB)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        policy = os.path.join(tmp, "policy.ini")
        with open(policy, "w") as f:
            base = open(os.path.join(SRC, "tests", "vm", "policies", "fast.ini")).read()
            base = re.sub(r"(?m)^(fast-)?interval = .*$", lambda m: f"{m.group(1) or ''}interval = 100ms", base)
            f.write(base + f"\n[metrics]\nlisten = 127.0.0.1:{port}\ntextfile = {tmp}/memgov.prom\n")
        os.chmod(policy, 0o644)
        sock = os.path.join(tmp, "memgov.sock")
        log = open(os.path.join(tmp, "memgov.log"), "w")
        d = subprocess.Popen([MEMGOV, "run", "--dry-run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db",
                              "--policy", policy, "--socket", sock, "--state-dir", tmp,
                              "--record", os.path.join(tmp, "trace.csv")], stderr=log)
        wait_for(lambda: os.path.exists(sock), "the control socket", timeout=10)
        start = time.monotonic()
        points = []
        step = 0
        while time.monotonic() - start < WARMUP + MEASURE:
            # A sawtooth from 100M to 246M of the 256M budget and back to 100M, every 15 s.
            phase = step % 30
            set_current(cg, int((100 + (phase if phase < 25 else 0) * 6) * MB))
            step += 1
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
            r = subprocess.run([MEMGOV, "status", "--json", "--socket", sock], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"status: {r.stderr}")
            g = json.loads(r.stdout)["governor"]
            if time.monotonic() - start > WARMUP:
                points.append(g)
            time.sleep(0.5)
        if d.poll() is not None:
            fail(f"the daemon exited with {d.returncode}")
        d.send_signal(signal.SIGTERM)
        if d.wait(timeout=10) != 0:
            fail("exit status")
        samples = json.loads(r.stdout)["samples"]
        decisions = sum(1 for line in open(os.path.join(tmp, "memgov.log")) if "would " in line)
        heap = [p["heap_in_use"] for p in points]
        rss = [p["rss"] for p in points]
        files = [p["open_files"] for p in points]
        fds = set(files)
        print(f"steady-state: {samples} samples, {decisions} actions decided; over the last {MEASURE}s: heap in use "
              f"{min(heap)}..{max(heap)} B, RSS {min(rss) >> 10}..{max(rss) >> 10} KiB, open files {sorted(fds)}")
        if samples < 10 * (WARMUP + MEASURE) * 0.8:
            fail(f"only {samples} samples")
        if decisions < 4:
            fail("the ladder did not move: the run proves little")
        # A leak is a count that stays up. A descriptor another thread holds for a moment while
        # the status counts (the action thread reading the target's maps or looking for its
        # socket, the metrics thread closing a scrape) is none: the count must come back to where
        # it was, and never stand more than two over it.
        settled_first, settled_last = min(files[:5]), min(files[-5:])
        if settled_last != settled_first or max(files) > settled_first + 2:
            fail(f"the open files changed: {settled_first} at first, {settled_last} at the end, "
                 f"{sorted(fds)} in all")
        if SANITIZED:
            print("steady-state: ok: open files flat after the warm-up, no leak at exit; heap, resident set "
                  "and memory lock are measured in the build without AddressSanitizer")
            return
        if max(heap) - heap[0] > 64 << 10:
            fail(f"the heap grew by {max(heap) - heap[0]} bytes")
        if max(rss) - rss[0] > 512 << 10:
            fail(f"the resident set grew by {(max(rss) - rss[0]) >> 10} KiB")
        if not points[-1]["memory_locked"]:
            fail("memgov's memory is not locked")
        print(f"steady-state: ok: heap, resident set and open files flat after the warm-up; memory locked; "
              f"RSS {rss[-1] >> 10} KiB")
    finally:
        if d and d.poll() is None:
            d.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
