#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Chaos: injections into a live process, with memgov SIGKILLed at every step of them — after
it seized the thread, after it stopped it, at the system call's entry, after it wrote the block,
after it set the registers, after it let go, and not at all — several hundred times. The target
must never die, and every one of its threads must keep getting exactly right results.
usage: inject-chaos.py MEMGOV INJECT_TARGET [ITERATIONS]"""
import collections
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inject_target import Target  # noqa: E402

MEMGOV, BINARY = sys.argv[1], sys.argv[2]
ITERATIONS = int(sys.argv[3]) if len(sys.argv) > 3 else 520
PHASES = {1: "seized", 2: "stopped", 3: "at the system call's entry", 4: "block written",
          5: "registers set", 6: "let go", 7: "none: let it finish"}


def fail(msg):
    print(f"inject-chaos: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def one(pid, tid, kill_after, rng):
    r, w = os.pipe()
    env = dict(os.environ, MEMGOV_TEST_PHASE_FD=str(w))
    p = subprocess.Popen([MEMGOV, "trim", "--pid", str(pid), "--thread", str(tid), "--method", "ptrace"],
                         env=env, pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    reached = 0
    with os.fdopen(r, "rb", buffering=0) as f:
        while True:
            b = f.read(1)
            if not b:
                break
            reached = b[0]
            if reached == kill_after:
                # Somewhere between this step and the next.
                time.sleep(rng.random() * 0.0003)
                p.send_signal(signal.SIGKILL)
                break
    p.wait()
    return reached, p.returncode


def main():
    rng = random.Random(int(os.environ.get("MEMGOV_CHAOS_SEED", "20261129")))
    t = Target(BINARY, 300, 400)
    names = ["read", "poll", "futex", "futex-timed", "nanosleep", "regs"]
    killed = collections.Counter()
    completed = 0
    try:
        for i in range(ITERATIONS):
            phase = rng.randint(1, 7)
            reached, code = one(t.pid, t.tids[rng.choice(names)], phase, rng)
            if phase < 7 and reached == phase:
                killed[phase] += 1
            elif phase == 7 and code == 0:
                completed += 1
            if not t.alive():
                fail(f"the target died at iteration {i} (memgov killed after '{PHASES.get(phase)}')")
            if i % 10 == 9:
                t.feed()
                if t.failures():
                    fail(f"wrong results after iteration {i}: {t.failures()[:3]}")
        time.sleep(0.5)
        code = t.stop()
    finally:
        t.kill()
    if t.failures() or code != 0:
        fail(f"the target saw {len(t.failures())} wrong results: {t.failures()[:5]}")
    summary = [l for l in t.lines if l.startswith("summary")]
    print(f"inject-chaos: ok: {ITERATIONS} injections; memgov SIGKILLed "
          + ", ".join(f"{killed[p]}x {PHASES[p]}" for p in sorted(killed))
          + f"; {completed} ran to the end; the target lived on: {summary[0] if summary else ''}")
    # Every step must have been hit, or the test proves less than it says.
    missing = [PHASES[p] for p in range(1, 7) if killed[p] < 10]
    if missing:
        fail(f"too few kills at: {', '.join(missing)}")


if __name__ == "__main__":
    main()
