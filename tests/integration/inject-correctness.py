#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Injection correctness: repeated trims injected into threads blocked in read on a pipe, a
timed poll, futex waits with and without timeout, a relative nanosleep, and a raw read with
every register loaded with a pattern; the epoll_wait thread is never taken (the kernel would
return EINTR to it). Afterwards every thread's results are exactly right: reads get their
messages whole and in order, timed calls last their full period (not less, not more), nothing
sees EINTR, registers and vector registers hold their values.
usage: inject-correctness.py MEMGOV INJECT_TARGET"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inject_target import Target  # noqa: E402

MEMGOV, BINARY = sys.argv[1], sys.argv[2]
ROUNDS = 6


def fail(msg):
    print(f"inject-correctness: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def trim(pid, tid):
    r = subprocess.run([MEMGOV, "trim", "--pid", str(pid), "--thread", str(tid), "--method", "ptrace", "--json"],
                       capture_output=True, text=True)
    return r.returncode, json.loads(r.stdout)


def main():
    # Timed calls of 1.5 s, checked to last between 1.5 s and 1.5 s + 250 ms: a sleep restarted
    # from the start after an injection half-way would last ~2.2 s, one cut short ~0.7 s.
    t = Target(BINARY, 1500, 250)
    held = []
    try:
        expect = {"read": "read", "poll": "poll", "futex": "futex", "futex-timed": "futex",
                  "nanosleep": "clock_nanosleep", "regs": "read"}
        for rnd in range(ROUNDS):
            time.sleep(0.7)  # into the middle of the timed calls
            for name, syscall in expect.items():
                code, rep = trim(t.pid, t.tids[name])
                if code != 0 or not rep["ok"] or not rep["completed"]:
                    fail(f"round {rnd}: trim through thread {name}: {rep.get('error')}")
                if rep["thread"] != t.tids[name] or rep["syscall"] not in (syscall, "restart_syscall"):
                    fail(f"round {rnd}: trim through {name} used thread {rep['thread']} in {rep['syscall']}")
                held.append(rep["held_us"])
            code, rep = trim(t.pid, t.tids["epoll"])
            if code == 0 or "not blocked in a system call it can be taken out of" not in rep["error"]:
                fail(f"the epoll_wait thread was not refused: {rep}")
            t.feed()
            time.sleep(0.8)
        if not t.alive():
            fail("the target died")
        code = t.stop()
    finally:
        t.kill()
    for line in t.lines:
        print("  target:", line)
    if t.failures() or code != 0:
        fail(f"the target saw {len(t.failures())} wrong results (exit {code})")
    held.sort()
    print(f"inject-correctness: ok: {len(held)} injections in {ROUNDS} rounds; every thread's results exact; "
          f"epoll_wait never taken; thread held p50 {held[len(held) // 2]} us, max {held[-1]} us")


if __name__ == "__main__":
    main()
