#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The admission rung through the daemon, on a fake cgroup and proc tree: the sampler counts the
server's socket descriptors (/proc/PID/fd links "socket:[N]"), the trace records them, and a
working set rising with a connection storm makes the daemon (dry run) lower max_connections and
raise memory.max for a while; the same growth with a flat count goes to reset instead, and so
does growth beside a client that ramps its connections up in steps (the growth is not theirs:
admission is passed by, and says so). The recorded trace replays to the decisions the daemon
logged.
usage: admit-daemon.py MEMGOV SOURCE_ROOT"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import PID, Checks, MB, inactive_file, make_tree, set_current  # noqa: E402

MEMGOV, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")
CHECKS = Checks("admit-daemon")
fail, ok, wait_for = CHECKS.fail, CHECKS.ok, CHECKS.wait_for

POLICY = """
[admit]
at = 70%
eta = 40s
cooldown = 5s
backoff = 10s
rise-window = 30s
min-rise = 10
min-rise-share = 25%
restore-after = 10s
raise-for = 5s
"""


# An admission's parameters in the JSON outputs (src/core/action.c, admit_params).
ADMIT_PARAMS = {"direction", "connections", "carried", "headroom", "fit", "floor"}


def sockets(proc, n):
    fd = os.path.join(proc, str(PID), "fd")
    os.makedirs(fd, exist_ok=True)
    have = len(os.listdir(fd))
    for i in range(have, n):
        os.symlink(f"socket:[{100000 + i}]", os.path.join(fd, str(10 + i)))


def run(tmp, mode):
    storm = mode == "storm"
    ws0 = 120 * MB
    inactive = inactive_file(DATA)
    cg, proc = make_tree(DATA, tmp, ws0 + inactive)
    conns = 5
    sockets(proc, conns)
    # a few files beside the sockets, as a server has
    for i in range(3):
        os.symlink(f"/var/lib/mysql/ibdata{i}", os.path.join(proc, str(PID), "fd", str(3 + i)))
    policy = os.path.join(tmp, "policy.ini")
    with open(policy, "w") as f:
        f.write(open(os.path.join(SRC, "tests", "vm", "policies", "fast.ini")).read() + POLICY)
    os.chmod(policy, 0o644)
    trace, log_path = os.path.join(tmp, "trace.csv"), os.path.join(tmp, "memgov.log")
    log = open(log_path, "w")
    d = subprocess.Popen([MEMGOV, "run", "--dry-run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db",
                          "--policy", policy, "--socket", os.path.join(tmp, "memgov.sock"), "--record", trace,
                          "--state-dir", tmp], stderr=log)
    try:
        def logged():
            return open(log_path).read()
        wait_for(lambda: "governing cgroup /db" in logged(), "the daemon to find its target")
        time.sleep(3)  # a calm baseline: the fewest connections within the rise window
        ws = ws0
        want = "would set max_connections" if storm else "would reset"
        for step in range(400):
            if want in logged():
                break
            if mode == "ramp":
                # 1.5M/s in the sessions connected already; a client doubling its connections
                # every 10 s, each costing nothing: counted as the sampler counts, once in five
                # samples, between stretches where the count stands still.
                ws += 3 * MB // 10
                if step % 50 == 0:
                    conns = 5 + (1 << (step // 50))
                    sockets(proc, conns)
            else:
                ws += 1 * MB
            set_current(cg, ws + inactive)
            if storm and conns < 200:
                conns += 2
                sockets(proc, conns)
            time.sleep(0.2)
        else:
            fail(f"no '{want}' in the daemon's log ({mode}):\n{logged()[-3000:]}")
        time.sleep(1)
        if storm:
            # memgov status --json: the admission in the history with its parameters.
            st = json.loads(subprocess.run([MEMGOV, "status", "--json", "--socket", os.path.join(tmp, "memgov.sock")],
                                           capture_output=True, text=True, check=True).stdout)
            adm = [h for h in st["history"] if h["kind"] == "admission"]
            if not adm or not ADMIT_PARAMS <= set(adm[0].get("params", {})):
                fail(f"status: no admission with its parameters {sorted(ADMIT_PARAMS)} in the history: {adm[:1]}")
            ok(f"status --json: the admission in the history with its parameters {adm[0]['params']}")
    finally:
        d.terminate()
        d.wait(timeout=10)
    text = logged()
    lines = [line for line in text.splitlines() if "max_connections" in line or "would reset" in line]
    rows = list(csv.DictReader(line for line in open(trace) if not line.startswith("#")))
    counts = [int(r["connections"]) for r in rows if r.get("connections")]
    if not counts:
        fail("the trace has no connections column")
    if storm:
        adm = [line for line in lines if "would set max_connections" in line]
        if "connections, up from" not in adm[0]:
            fail(f"the admission decision does not say the rise: {adm[0]}")
        if "would set memory.max" not in text or "while admission takes effect" not in text:
            fail(f"no memory.max raise with the admission:\n{text[-2000:]}")
        if "would reset" in text.split("would set max_connections")[0]:
            fail("a reset came before the admission")
        if max(counts) <= counts[0] + 10:
            fail(f"the recorded connection count did not rise: {counts[:3]} ... {counts[-3:]}")
        ok(f"storm: connections recorded {counts[0]} -> {max(counts)}; {adm[0].split('memgov: ')[-1][:200]}")
    elif mode == "flat":
        if "max_connections" in text:
            fail(f"admission with a flat connection count:\n{text[-2000:]}")
        if len(set(counts)) != 1:
            fail(f"the recorded count moved: {set(counts)}")
        ok(f"flat count ({counts[0]}): no admission, the ladder went on to reset")
    else:
        if "max_connections" in text:
            fail(f"admission for growth beside a ramp of connections:\n{text[-3000:]}")
        passed = [line for line in text.splitlines() if "admission passed by" in line]
        if len(passed) != 1 or "connections, up from" not in passed[0]:
            fail(f"admission passed by not said once, with the rise:\n{text[-3000:]}")
        if max(counts) < counts[0] + 10:
            fail(f"the recorded connection count did not rise: {counts[:3]} ... {counts[-3:]}")
        ok(f"ramp: connections recorded {counts[0]} -> {max(counts)}, no admission, the ladder went on to "
           f"reset; {passed[0].split('memgov: ')[-1][:260]}")

    # The recorded trace replays to the decisions the daemon logged (their kinds, in order).
    r = subprocess.run([MEMGOV, "replay", "--json", "--policy", policy, trace], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"replay: {r.stderr}")
    decisions = json.loads(r.stdout)["decisions"]
    kinds = [x["kind"] for x in decisions]
    if storm:
        adm = next((x for x in decisions if x["kind"] == "admission"), {})
        if not ADMIT_PARAMS <= set(adm):
            fail(f"replay --json: the admission decision lacks its parameters {sorted(ADMIT_PARAMS)}: {adm}")
    if storm and "admission" not in kinds:
        fail(f"the replay has no admission decision: {kinds}")
    if not storm and "admission" in kinds:
        fail(f"the replay ({mode}) has an admission decision: {kinds}")
    if mode == "ramp" and not any("admission passed by" in x.get("reason", "") for x in decisions):
        fail(f"the replay of the ramp does not say admission was passed by: {kinds}")
    ok(f"replay of the recorded trace: {kinds.count('admission')} admission decision(s), "
       f"{kinds.count('reset')} reset(s)")


def main():
    if os.geteuid() != 0:
        print("admit-daemon: SKIP: needs root")
        sys.exit(77)
    # The three daemons side by side, each on its own tree: each waits on its own clock, most of
    # the time asleep (95 s in turn under the sanitizers).
    children = {}
    for mode in ("storm", "flat", "ramp"):
        pid = os.fork()
        if pid == 0:
            code = 1
            tmp = tempfile.mkdtemp(prefix=f"memgov-admit-daemon-{mode}-")
            try:
                run(tmp, mode)
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        children[pid] = mode
    failed = []
    for pid, mode in children.items():
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(mode)
    if failed:
        print(f"admit-daemon: FAIL: {', '.join(failed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
