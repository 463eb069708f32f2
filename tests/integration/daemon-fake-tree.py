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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import Checks, MB, make_cgroup, make_tree, set_current  # noqa: E402

MEMGOV, SRC = sys.argv[1], sys.argv[2]
SANITIZED = os.environ.get("MEMGOV_SANITIZED") == "1"
DATA = os.path.join(SRC, "tests", "data")
DAEMONS = []


CHECKS = Checks("daemon-fake-tree")
fail, ok, wait_for = CHECKS.fail, CHECKS.ok, CHECKS.wait_for


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


def run(tmp):
    current = 100 * MB
    cg, proc = make_tree(DATA, tmp, current)

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

    # Least privilege: a dry run on a copy of a cgroup tree needs ptrace access to the server,
    # the server's descriptors (to find its socket for SQL) and its own memory locked, nothing
    # else (no CAP_KILL: a dry run signals nobody; no CAP_SYS_RESOURCE: no PSI trigger on a
    # copy); the bounding set goes too, so that no program it runs gets more back.
    caps = {}
    for line in open(f"/proc/{d.pid}/status"):
        if line.startswith("Cap"):
            key, val = line.split(":")
            caps[key] = int(val, 16)
    want = (1 << 19) | (1 << 14) | (1 << 2)  # CAP_SYS_PTRACE, CAP_IPC_LOCK, CAP_DAC_READ_SEARCH
    if caps["CapEff"] != want or caps["CapPrm"] != want or caps["CapBnd"] != want or caps["CapInh"] or caps["CapAmb"]:
        fail(f"capabilities after startup: { {k: hex(v) for k, v in caps.items()} }, expected {hex(want)}")
    if "capabilities kept: CAP_SYS_PTRACE CAP_IPC_LOCK CAP_DAC_READ_SEARCH\n" not in logged():
        fail("the kept capabilities are not logged")
    if SANITIZED:
        # AddressSanitizer replaces mlockall with a no-op: the lock is checked in the plain build.
        locked_text = "memory lock not observable under AddressSanitizer"
    else:
        locked = [line for line in open(f"/proc/{d.pid}/status") if line.startswith("VmLck")]
        if not locked or int(locked[0].split()[1]) == 0:
            fail(f"memgov's memory is not locked: {locked}")
        locked_text = f"{locked[0].split()[1]} kB locked"
    ok(f"capabilities: effective, permitted and bounding sets reduced to CAP_SYS_PTRACE CAP_IPC_LOCK "
       f"CAP_DAC_READ_SEARCH; {locked_text}")

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
    # "next in": the engine's own pacing of the trim, from fast.ini: its 10 s cooldown counted from
    # the trim or, held back for freeing nothing (a dry run frees nothing), its 20 s backoff
    # counted from when that was judged, within settle (3 s) of the trim. Both figures are
    # rounded down to the second.
    trim = st["actions"]["trim"]
    if trim["count"] < 1 or trim["last_s_ago"] is None:
        fail(f"status: no trim counted: {trim}")
    lo, hi = (20, 24) if trim["not_helping"] else (10, 10)
    paced = trim["last_s_ago"] + trim["ready_in_s"]
    if not (lo - 1 <= paced <= hi if trim["ready_in_s"] > 0 else trim["last_s_ago"] >= lo - 1):
        fail(f"status: trim {trim['last_s_ago']}s ago, ready in {trim['ready_in_s']}s, not helping "
             f"{trim['not_helping']}: expected {lo}-{hi}s from the trim to the next")
    ok(f"status over the control socket: level {st['level']}, {st['samples']} samples, "
       f"{len(st['history'])} decisions in the history; trim {trim['last_s_ago']}s ago, next in "
       f"{trim['ready_in_s']}s{' (not helping)' if trim['not_helping'] else ''}")
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
    if "dry run over" in logged():
        fail("a reload ended the dry run asked for on the command line")

    # governor.dry-run follows the file on reload (--dry-run on the command line does not).
    pol2 = os.path.join(tmp, "policy2.ini")
    with open(pol2, "w") as f:
        f.write(open(policy).read() + "\n[governor]\ndry-run = yes\n")
    os.chmod(pol2, 0o644)
    log2 = os.path.join(tmp, "memgov2.log")
    d2 = subprocess.Popen([MEMGOV, "run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db", "--policy", pol2,
                           "--socket", "", "--state-dir", ""], stderr=open(log2, "w"))
    DAEMONS.append(d2)
    wait_for(lambda: "dry run: nothing will be changed" in open(log2).read(), "the second daemon's dry run")
    shutil.copy(os.path.join(SRC, "tests", "vm", "policies", "fast.ini"), pol2)
    d2.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload: dry run over: memgov acts from now on" in open(log2).read(), "the end of the dry run")
    high = os.path.join(cg, "db", "memory.high")
    wait_for(lambda: open(high).read().strip() != "max", "memory.high written once acting")
    acting_high = open(high).read().strip()
    with open(pol2, "a") as f:
        f.write("\n[governor]\ndry-run = yes\n")
    d2.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload: dry run from now on" in open(log2).read(), "the dry run again")
    # Back to a dry run, memgov puts back what it changed, as when it stops: a dry run would leave
    # it in place for good.
    wait_for(lambda: open(high).read().strip() == "max", "memory.high put back as found")
    if "a dry run from now on: memory.high" not in open(log2).read():
        fail("the dry run again: memory.high put back without a word")
    ok(f"back to a dry run: memory.high {acting_high} -> max, as found")
    d2.send_signal(signal.SIGTERM)
    d2.wait(timeout=5)
    ok("governor.dry-run follows the policy on reload: on, off, on again")

    # The cgroup goes away (the server stopped) and comes back (restarted).
    shutil.rmtree(os.path.join(cg, "db"))
    wait_for(lambda: "the cgroup is gone" in logged() and "waiting for the target" in logged(), "the loss")
    make_cgroup(DATA, cg, 50 * MB)
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
