#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon against a fake cgroup and proc tree in a temporary directory: it samples, decides
(dry run), answers status on its control socket and refuses strangers, reloads its policy on
SIGHUP (keeping the last good one when the new one is broken), follows its target when the cgroup
goes away and comes back, exits cleanly on SIGTERM, and its recorded trace replays to exactly the
decisions it logged.
usage: daemon-fake-tree.py MEMGOV SOURCE_ROOT"""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MEMGOV, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")
MB = 1 << 20
DAEMONS = []


def fail(msg):
    print(f"daemon-fake-tree: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def ok(msg):
    print(f"daemon-fake-tree: ok: {msg}")


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def wait_for(pred, what, timeout=15):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    fail(f"timed out waiting for {what}")


def main():
    if os.geteuid() != 0:
        print("daemon-fake-tree: SKIP: needs root (the peer credential check runs a request as another user)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="memgov-daemon-")
    os.chmod(tmp, 0o755)  # so that the stranger of the peer test reaches the socket
    try:
        run(tmp)
    finally:
        for p in DAEMONS:
            if p.poll() is None:
                p.kill()
        if os.environ.get("KEEP"):
            print(tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def make_cgroup(cg, current):
    db = os.path.join(cg, "db")
    stat = open(os.path.join(DATA, "kernel-6.1", "memory.stat")).read()
    put(os.path.join(db, "memory.stat"), stat)
    put(os.path.join(db, "memory.high"), "max\n")
    put(os.path.join(db, "memory.max"), f"{256 * MB}\n")
    put(os.path.join(db, "memory.events"), "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n")
    put(os.path.join(db, "memory.pressure"), open(os.path.join(DATA, "kernel-6.1", "memory.pressure")).read())
    put(os.path.join(db, "cgroup.procs"), "4242\n")
    set_current(cg, current)


def set_current(cg, current):
    # Written in place, as the kernel updates it (an inotify IN_MODIFY for memory.events).
    with open(os.path.join(cg, "db", "memory.current"), "w") as f:
        f.write(f"{current}\n")


def run(tmp):
    cg, proc = os.path.join(tmp, "cg"), os.path.join(tmp, "proc")
    put(os.path.join(cg, "cgroup.controllers"), "cpuset cpu io memory pids\n")
    put(os.path.join(proc, "meminfo"), open(os.path.join(DATA, "kernel-6.18", "meminfo")).read())
    pdir = os.path.join(proc, "4242")
    put(os.path.join(pdir, "comm"), "mariadbd\n")
    put(os.path.join(pdir, "stat"), "4242 (mariadbd) S 1 4242 4242 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 39 0 1620 1000 10\n")
    put(os.path.join(pdir, "status"), "Name:\tmariadbd\nState:\tS (sleeping)\nTgid:\t4242\nPPid:\t1\nTracerPid:\t0\n"
        "Uid:\t106\t106\t106\t106\nVmRSS:\t  102400 kB\nRssAnon:\t  100000 kB\nThreads:\t39\n")
    put(os.path.join(pdir, "cgroup"), "0::/db\n")
    shutil.copy(os.path.join(DATA, "kernel-6.18", "proc-maps.glibc"), os.path.join(pdir, "maps"))
    current = 100 * MB
    make_cgroup(cg, current)

    policy = os.path.join(tmp, "policy.ini")
    shutil.copy(os.path.join(SRC, "tests", "vm", "policies", "fast.ini"), policy)
    os.chmod(policy, 0o644)
    sock = os.path.join(tmp, "memgov.sock")
    trace = os.path.join(tmp, "trace.csv")
    log_path = os.path.join(tmp, "memgov.log")
    log = open(log_path, "w")
    d = subprocess.Popen([MEMGOV, "run", "--dry-run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db",
                          "--policy", policy, "--socket", sock, "--record", trace, "--state-dir", tmp], stderr=log)
    DAEMONS.append(d)

    def logged():
        return open(log_path).read()

    wait_for(lambda: "governing cgroup /db (mariadbd pid 4242)" in logged(), "the daemon to find its target")
    ok("found the target in the fake tree: cgroup /db, mariadbd pid 4242")

    # Grow 4M every 0.2 s (20M/s) from 100M toward the 256M budget: trim comes on the ETA.
    for _ in range(30):
        current += 4 * MB
        set_current(cg, current)
        time.sleep(0.2)
    wait_for(lambda: "would trim" in logged(), "a trim decision")
    ok("decided to trim (dry run) as the working set grew")

    st = json.loads(subprocess.run([MEMGOV, "status", "--json", "--socket", sock], capture_output=True,
                                   text=True, check=True).stdout)
    if st["target"]["pid"] != 4242 or not st["dry_run"] or st["samples"] < 5:
        fail(f"status: unexpected {st['target']}, dry_run {st['dry_run']}, samples {st['samples']}")
    if st["sample"]["memory"]["max"] != 256 * MB or st["memory_events_notifications"] < 0:
        fail(f"status: memory {st['sample']['memory']}")
    if not any("would trim" in h["line"] for h in st["history"]):
        fail("status: the trim is not in the history")
    ok(f"status over the control socket: level {st['level']}, {st['samples']} samples, "
       f"{len(st['history'])} decisions in the history")
    text = subprocess.run([MEMGOV, "status", "--socket", sock], capture_output=True, text=True, check=True).stdout
    if "working set" not in text or "mariadbd pid 4242" not in text:
        fail(f"status table:\n{text}")

    # A stranger on the socket is refused by the peer credential check.
    os.chmod(sock, 0o666)
    nobody = pwd.getpwnam("nobody")
    r = subprocess.run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                        MEMGOV, "status", "--socket", sock], capture_output=True, text=True)
    if r.returncode == 0 or "permission denied" not in r.stderr:
        fail(f"nobody was not refused: {r.returncode} {r.stderr}")
    ok("a request from uid nobody is refused")

    # SIGHUP with a broken policy keeps the one in use; with a valid one, takes it.
    with open(policy, "a") as f:
        f.write("[trim]\nat = 75\n")
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: "keeping the one in use" in logged(), "the broken reload to be refused")
    shutil.copy(os.path.join(SRC, "tests", "vm", "policies", "fast.ini"), policy)
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload: policy" in logged(), "the valid reload")
    ok("SIGHUP: a broken policy is reported and the last good one stays; a valid one is taken")

    # The cgroup goes away (the server stopped) and comes back (restarted).
    shutil.rmtree(os.path.join(cg, "db"))
    wait_for(lambda: "the cgroup is gone" in logged() and "waiting for the target" in logged(), "the loss")
    make_cgroup(cg, 50 * MB)
    wait_for(lambda: logged().count("governing cgroup /db") >= 2, "the target to be found again")
    ok("followed the target: cgroup gone, waited, found again")

    d.send_signal(signal.SIGTERM)
    try:
        code = d.wait(timeout=5)
    except subprocess.TimeoutExpired:
        fail("no exit within 5 s of SIGTERM")
    if code != 0:
        fail(f"exit status {code} after SIGTERM")
    if os.path.exists(sock):
        fail("the control socket was left behind")
    ok("SIGTERM: clean exit, socket removed")

    r = subprocess.run([sys.executable, os.path.join(SRC, "tests", "vm", "check-ladder.py"), MEMGOV, policy, trace,
                        log_path, "--rungs", "trim"], capture_output=True, text=True)
    print(r.stdout, end="")
    if r.returncode != 0:
        fail(r.stderr.strip())


if __name__ == "__main__":
    main()
