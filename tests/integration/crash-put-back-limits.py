#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""memory.high and memory.max that memgov changed outlive memgov's own death (SIGKILL: no way
out), on a fake cgroup and proc tree:
- the throttle lowers memory.high; memgov is SIGKILLed; the state file holds the change; a new
  memgov puts memory.high back as the first found it before its first sample;
- memory.max left raised by a memgov before: kept while the server uses more than the value
  found (lower than its use, the kernel would reclaim or kill at once), put back once it uses less;
- a limit someone changed since memgov's change is left as it is, and the change forgotten.
usage: crash-put-back-limits.py MEMGOV SOURCE_ROOT"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import Checks, MB, inactive_file, make_tree, set_current  # noqa: E402

MEMGOV, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")
CHECKS = Checks("crash-put-back-limits")
fail, ok, wait_for = CHECKS.fail, CHECKS.ok, CHECKS.wait_for
DAEMONS = []

POLICY = """[governor]
settle = 1s
[sampling]
interval = 1s
fast-interval = 500ms
[trend]
window = 30s
points = 15
min-points = 3
[trim]
enabled = no
[throttle]
enabled = {throttle}
at = 50%
eta = off
cooldown = 1s
[admit]
enabled = no
[reset]
enabled = no
[pool]
enabled = no
[restart]
enabled = no
"""


def main():
    if os.geteuid() != 0:
        print("crash-put-back-limits: SKIP: needs root (a state directory memgov trusts is root's)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="memgov-crash-limits-")
    if os.environ.get("KEEP"): print(tmp)
    os.chmod(tmp, 0o755)
    try:
        run(tmp)
    finally:
        for p in DAEMONS:
            if p.poll() is None:
                p.kill()
        if not os.environ.get("KEEP"): shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    inactive = inactive_file(DATA)
    cg, proc = make_tree(DATA, tmp, 100 * MB + inactive)
    db = os.path.join(cg, "db")
    state = os.path.join(tmp, "state")
    os.mkdir(state, 0o755)
    policy = os.path.join(tmp, "policy.ini")

    def start(name, throttle):
        with open(policy, "w") as f:
            f.write(POLICY.format(throttle="yes" if throttle else "no"))
        os.chmod(policy, 0o644)
        log = os.path.join(tmp, name + ".log")
        d = subprocess.Popen([MEMGOV, "run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db", "--policy",
                              policy, "--socket", "", "--state-dir", state], stderr=open(log, "w"))
        DAEMONS.append(d)
        return d, lambda: open(log).read()

    def limit(name):
        return open(os.path.join(db, name)).read().strip()

    def state_file():
        return json.load(open(os.path.join(state, "cgroup-db.state")))

    # 1. The throttle lowers memory.high; memgov is killed without its way out.
    d, logged = start("first", throttle=True)
    wait_for(lambda: "governing cgroup /db" in logged(), "the daemon to govern /db")
    for i in range(40):
        set_current(cg, (100 + 4 * i) * MB + inactive)
        time.sleep(0.25)
        if "-> memory.high of /db is now" in logged():
            break
    wait_for(lambda: "-> memory.high of /db is now" in logged(), "a memory.high set by the throttle")
    d.send_signal(signal.SIGKILL)
    d.wait()
    lowered = limit("memory.high")
    if lowered == "max":
        fail("memory.high is max after the throttle")
    c = state_file()["changes"].get("memory.high")
    if not c or c["found"] != "max" or str(c["set"]) != lowered:
        fail(f"the state file does not hold the change of memory.high to {lowered}: {state_file()}")
    ok(f"memory.high max -> {lowered} by the throttle, memgov SIGKILLed: the state file holds the change")

    # 2. A new memgov, no throttle: memory.high back to max before its first sample.
    d, logged = start("second", throttle=False)
    wait_for(lambda: "-> memory.high of /db is now max" in logged(), "memory.high put back")
    if f"put memory.high back" not in logged() or limit("memory.high") != "max":
        fail(f"memory.high is {limit('memory.high')}:\n{logged()}")
    if "memory.high" in state_file()["changes"]:
        fail(f"the change is still in the state file: {state_file()}")
    d.terminate()
    d.wait(timeout=10)
    ok(f"a new memgov put memory.high back {lowered} -> max and forgot the change")

    # 3. memory.max left raised to 300M (found 256M), the server at 280M: kept, then put back.
    with open(os.path.join(db, "memory.max"), "w") as f:
        f.write(f"{300 * MB}\n")
    set_current(cg, 280 * MB)
    s = state_file()
    s["changes"] = {"memory.max": {"found": 256 * MB, "set": 300 * MB},
                    "memory.high": {"found": "max", "set": 200 * MB}}  # someone set 180M since
    with open(os.path.join(db, "memory.high"), "w") as f:
        f.write(f"{180 * MB}\n")
    json.dump(s, open(os.path.join(state, "cgroup-db.state"), "w"))
    d, logged = start("third", throttle=False)
    wait_for(lambda: "put back to 256M once the server uses less (it uses 280M)" in logged(), "memory.max kept raised")
    wait_for(lambda: "is 180M, not the 200M the memgov before set: changed since, left as it is" in logged(),
             "memory.high someone changed left as it is")
    time.sleep(2)
    if limit("memory.max") != str(300 * MB):
        fail(f"memory.max was put back under what the server uses: {limit('memory.max')}")
    set_current(cg, 150 * MB)
    wait_for(lambda: limit("memory.max") == str(256 * MB), "memory.max put back once the server uses less")
    wait_for(lambda: not state_file()["changes"], "the changes forgotten")
    if limit("memory.high") != str(180 * MB):
        fail(f"memory.high someone set was changed: {limit('memory.high')}")
    d.terminate()
    d.wait(timeout=10)
    ok("memory.max left raised at 300M: kept while the server used 280M, put back to 256M once it used 150M; "
       "memory.high someone changed since left at 180M")


if __name__ == "__main__":
    main()
