#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A thread that memgov chose while it was blocked in a sleep, and that entered vfork() before
the interrupt came: the parent side of vfork() waits for its child in a sleep no ptrace stop
interrupts, so the stop comes only once the child exits (here: 10 s later). memgov must not wait
for it: `memgov trim` returns within a few seconds with an error, and the thread is left as it
was: not traced (TracerPid 0), not in a tracing stop, and it goes on running once its child is
done.
usage: inject-vfork.py MEMGOV INJECT_TARGET"""
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time

MEMGOV, BINARY = sys.argv[1], sys.argv[2]
BOUND = 6.0  # seconds a trim may take; the wedge lasts 10 s
# The seize lands just as the thread enters vfork() by chance: most attempts find it in no system
# call it can be taken out of, and on a loaded machine it can take several hundred attempts. So
# no count of attempts: as many as BUDGET allows, until one has seized it there.
BUDGET = 200  # seconds for all attempts (the test's timeout in tests/meson.build allows for it)


def fail(msg):
    print(f"inject-vfork: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def status(pid, tid):
    fields = {}
    with open(f"/proc/{pid}/task/{tid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.strip()
    return fields


def code_tail(pid):
    """The address and bytes of the last page of libc's code: where memgov puts its call stub."""
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) == 6 and fields[1] == "r-xp" and os.path.basename(fields[5]) == "libc.so.6":
                end = int(fields[0].split("-")[1], 16)
                with open(f"/proc/{pid}/mem", "rb") as m:
                    m.seek(end - 4096)
                    return end - 4096, m.read(4096)
    fail("no libc code in the target")


def restore(pid, tail):
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as m:
        m.seek(tail[0])
        m.write(tail[1])


def trim(pid):
    """One `memgov trim`; returns (seconds, exit code, report, whether the thread was seized)."""
    r, w = os.pipe()
    env = dict(os.environ, MEMGOV_TEST_PHASE_FD=str(w))
    t0 = time.monotonic()
    p = subprocess.Popen([MEMGOV, "trim", "--pid", str(pid), "--method", "ptrace", "--json"], env=env,
                         pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    os.close(w)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    took = time.monotonic() - t0
    with os.fdopen(r, "rb") as f:
        phases = f.read()
    return took, p.returncode, json.loads(out) if out.strip() else {}, 1 in phases


def main():
    p = subprocess.Popen([BINARY, "100", "100", "vfork"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         bufsize=1)
    lines = queue.Queue()
    tid = None
    for line in p.stdout:
        if line.startswith("ready"):
            break
        if line.startswith("tid vfork"):
            tid = int(line.split()[2])
    threading.Thread(target=lambda: [lines.put(l.strip()) for l in p.stdout], daemon=True).start()
    tail = code_tail(p.pid)
    try:
        wedged, done, errors = None, 0, {}
        t_start = time.monotonic()
        for i in itertools.count():
            if time.monotonic() - t_start > BUDGET:
                break
            took, code, rep, seized = trim(p.pid)
            why = f"exit {code} {rep.get('syscall')}: " + (rep.get("error") or "")[:60]
            errors[why] = errors.get(why, 0) + 1
            if took > BOUND:
                fail(f"attempt {i}: memgov trim took {took:.1f} s (more than {BOUND} s): {rep.get('error')}")
            # A trim that caught the thread in its sleep succeeds: try again until one seizes it
            # just as it enters vfork(). The stub is taken out again, so that every attempt is a
            # first one (the stub written first, then the thread seized: a wider window).
            # (After a pause: the thread runs the stub's last instructions after it reported.)
            if code == 0:
                time.sleep(0.05)
                restore(p.pid, tail)
            done += code == 0
            if seized and "did not stop within" in (rep.get("error") or ""):
                wedged = (i, took, rep["error"])
                break
        if not wedged:
            fail(f"no trim out of {i} in {BUDGET} s seized the thread just before it entered vfork(): {errors}")
        st = status(p.pid, tid)
        if st["TracerPid"] != "0" or st["State"].startswith("t"):
            fail(f"the thread was left traced or stopped: TracerPid {st['TracerPid']}, State {st['State']}")
        # Its child sleeps 10 s, then the thread returns from vfork() and goes on.
        try:
            while True:
                line = lines.get(timeout=20)
                if line.startswith("vfork-returned"):
                    break
        except queue.Empty:
            fail("the thread did not come back from vfork() within 20 s")
        time.sleep(0.2)
        st = status(p.pid, tid)
        if st["TracerPid"] != "0" or st["State"].startswith("t") or p.poll() is not None:
            fail(f"after vfork() returned: TracerPid {st['TracerPid']}, State {st['State']}, exit {p.poll()}")
        p.stdin.write("stop\n")
        p.stdin.flush()
        code = p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if code != 0:
        fail(f"the target exited {code}")
    i, took, why = wedged
    print(f"inject-vfork: ok: {done} trims done before; attempt {i} seized the thread as it entered vfork(); memgov gave up after "
          f"{took:.1f} s ({why}); the thread was not traced nor stopped, and ran on once its child exited")


if __name__ == "__main__":
    main()
