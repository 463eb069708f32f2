# SPDX-License-Identifier: GPL-2.0-or-later
"""A fake cgroup v2 and proc tree in a directory, for running the daemon on the host with
--cgroup-root and --proc-root: cgroup /db holding a mariadbd with pid 4242, its files taken
from real captures in tests/data."""
import os
import shutil
import sys
import time

MB = 1 << 20
PID = 4242


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_cgroup(data, cg, current, memory_max=256 * MB):
    db = os.path.join(cg, "db")
    put(os.path.join(db, "memory.stat"), open(os.path.join(data, "kernel-6.1", "memory.stat")).read())
    put(os.path.join(db, "memory.high"), "max\n")
    put(os.path.join(db, "memory.max"), f"{memory_max}\n")
    put(os.path.join(db, "memory.events"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")
    put(os.path.join(db, "memory.pressure"), open(os.path.join(data, "kernel-6.1", "memory.pressure")).read())
    put(os.path.join(db, "cgroup.procs"), f"{PID}\n")
    set_current(cg, current)


def set_current(cg, current):
    # Replaced whole, never truncated then written: the daemon reads the file while the test moves
    # the working set, and a kernel file read at any moment holds a complete value, never nothing.
    path = os.path.join(cg, "db", "memory.current")
    with open(path + ".new", "w") as f:
        f.write(f"{current}\n")
    os.replace(path + ".new", path)


def inactive_file(data):
    for line in open(os.path.join(data, "kernel-6.1", "memory.stat")):
        key, val = line.split()
        if key == "inactive_file":
            return int(val)
    raise KeyError("inactive_file")


def make_tree(data, tmp, current):
    """Returns (cgroup root, proc root)."""
    cg, proc = os.path.join(tmp, "cg"), os.path.join(tmp, "proc")
    put(os.path.join(cg, "cgroup.controllers"), "cpuset cpu io memory pids\n")
    put(os.path.join(proc, "meminfo"), open(os.path.join(data, "kernel-6.18", "meminfo")).read())
    pdir = os.path.join(proc, str(PID))
    put(os.path.join(pdir, "comm"), "mariadbd\n")
    put(os.path.join(pdir, "stat"),
        f"{PID} (mariadbd) S 1 {PID} {PID} 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 39 0 1620 1000 10\n")
    put(os.path.join(pdir, "status"), f"Name:\tmariadbd\nState:\tS (sleeping)\nTgid:\t{PID}\nPPid:\t1\nTracerPid:\t0\n"
        "Uid:\t106\t106\t106\t106\nVmRSS:\t  102400 kB\nRssAnon:\t  100000 kB\nThreads:\t39\n")
    put(os.path.join(pdir, "cgroup"), "0::/db\n")
    shutil.copy(os.path.join(data, "kernel-6.18", "proc-maps.glibc"), os.path.join(pdir, "maps"))
    make_cgroup(data, cg, current)
    return cg, proc


class Checks:
    """fail/ok/wait_for for a test script named name: a failure says what and exits 1."""

    def __init__(self, name):
        self.name = name

    def fail(self, msg):
        print(f"{self.name}: FAIL: {msg}", file=sys.stderr)
        sys.exit(1)

    def ok(self, msg):
        print(f"{self.name}: ok: {msg}")

    def wait_for(self, pred, what, timeout=15):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return
            time.sleep(0.1)
        self.fail(f"timed out waiting for {what}")
