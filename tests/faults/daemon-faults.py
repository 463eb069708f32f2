#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon (memgov run, acting: no --dry-run) on a fake cgroup and proc tree, with one class of
its calls failing on purpose through an LD_PRELOAD interposer (fault-preload.c): the Nth read of a
cgroup file, the Nth open of the server's /proc files, the Nth write of memory.high, the Nth SQL
connect, the Nth ptrace request or process_vm_readv/writev of a trim, or every one of them from the
first on. Each run makes the working set climb to 84 % of the 256M budget (trim, throttle and
reset), then fall to 15 %, and asserts:

  - the daemon stays up and exits 0 on SIGTERM; under AddressSanitizer, no leak and no error;
  - each failure is logged once: every failed action exactly one "-> ACTION failed" line from the
    actuator and one "ACTION failed: not tried again for ..." from the engine (the last one may be
    cut by SIGTERM), and a cgroup or process file that cannot be read one warning per episode of
    failures, not one per sample;
  - the ladder comes back to normal once the working set has fallen;
  - replaying the trace it recorded (--record) gives exactly the decisions it logged
    (tests/vm/check-ladder.py), and in those decisions no trim or reset comes before its cooldown,
    and no action of a kind before the backoff announced when it failed.

The "server" is a real process (memgov-inject-target, whose threads sit in the system calls an
injection may interrupt and check they come back unharmed) so that trims really go through ptrace;
reset has no SQL server to talk to and restart is off (the server would be stopped): those fail, or
are not reached, as they would on a host without them.

usage: daemon-faults.py MEMGOV PRELOAD INJECT_TARGET SOURCE_ROOT"""
import concurrent.futures
import json
import os
import re
import shutil
import socket
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from fake_tree import MB, PID, inactive_file, make_tree, set_current  # noqa: E402

MEMGOV, PRELOAD, TARGET, SRC = sys.argv[1:5]
DATA = os.path.join(SRC, "tests", "data")
CHECK_LADDER = os.path.join(SRC, "tests", "vm", "check-ladder.py")
PARALLEL = int(os.environ.get("MEMGOV_FAULTS_PARALLEL", "6"))

POLICY = """# Fast enough for a run of ten seconds; ETAs off: the thresholds alone move the ladder.
[governor]
settle = 1s
lock-memory = no
[sampling]
interval = 200ms
fast-interval = 100ms
[trend]
window = 10s
points = 10
min-points = 4
[trim]
at = 50%
eta = off
cooldown = 2s
min-gain = 4M
backoff = 3s
[throttle]
at = 65%
eta = off
cooldown = 1s
floor = 60%
[reset]
at = 80%
eta = off
cooldown = 2s
min-gain = 4M
backoff = 3s
[sql]
socket = {sock}
connect-timeout = 1s
query-timeout = 1s
[restart]
enabled = no
"""

# (class, pattern, errno): each runs with the Nth matching call failing, N = 1..K, and with every
# call from the first on failing ("1-").
K = 3
CLASSES = [
    ("read", "memory.current", "EIO"),       # the sampler: the cgroup files
    ("read", "memory.stat", "EPERM"),
    ("open", "memory.events", "ENOENT"),
    ("read", "/status", "EIO"),               # the sampler: the server's /proc files
    ("open", "/stat", "ENOENT"),
    ("write", "memory.high", "EPERM"),        # the limits actuator
    ("connect", "mysqld.sock", "ETIMEDOUT"),  # reset over SQL
    ("ptrace", "*", "EPERM"),                 # trim by injection
    ("ptrace", "GETREGS", "ESRCH"),
    ("vm_readv", "*", "EFAULT"),
    ("vm_writev", "*", "EFAULT"),
]


def is_asan(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    return "libasan" in out


ASAN = is_asan(MEMGOV)


class Failure(Exception):
    pass


def wait_for(pred, what, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise Failure(f"timed out waiting for {what}")


def starttime_of(pid):
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rindex(")") + 2:].split()[19])


def make_fake_tree(tmp, pid, current):
    """The tree of fake_tree.py, with the server's pid and start time those of a real process."""
    cg, proc = make_tree(DATA, tmp, current)
    os.rename(os.path.join(proc, str(PID)), os.path.join(proc, str(pid)))
    pdir = os.path.join(proc, str(pid))
    with open(os.path.join(pdir, "stat"), "w") as f:
        f.write(f"{pid} (mariadbd) S 1 {pid} {pid} 0 -1 4194560 100 0 0 0 12 34 0 0 20 0 39 0 "
                f"{starttime_of(pid)} 1000 10\n")
    status = open(os.path.join(pdir, "status")).read().replace(f"Tgid:\t{PID}", f"Tgid:\t{pid}")
    with open(os.path.join(pdir, "status"), "w") as f:
        f.write(status)
    with open(os.path.join(cg, "db", "cgroup.procs"), "w") as f:
        f.write(f"{pid}\n")
    return cg, proc


def decisions(log):
    """(verb, reason) of each decision the daemon logged, as check-ladder.py reads them."""
    pat = re.compile(r"^memgov: (?:warning: |error: )?(level|effect|hold|event|trim|set memory\.high|"
                     r"set memory\.max|reset|restart) +(.*)$")
    return [m.groups() for m in map(pat.match, log.splitlines()) if m]


def check_replay(policy, trace, log_path, reached):
    """check-ladder.py, then cooldowns and backoffs on the replayed decisions."""
    r = subprocess.run([sys.executable, CHECK_LADDER, MEMGOV, policy, trace, log_path, "--rungs",
                        ",".join(reached)], capture_output=True, text=True, env=clean_env())
    if r.returncode != 0:
        raise Failure(f"check-ladder: {r.stderr.strip()}")
    out = subprocess.run([MEMGOV, "replay", "--json", "--policy", policy, trace], capture_output=True, text=True,
                         env=clean_env(), check=True)
    # The emergency reset is held back by its own failures' backoffs and cooldown only: a reset
    # at reset.min-memory that failed says so ("an emergency reset excepted"); a plain reset
    # waits for any reset's backoff and cooldown.
    cooldown = {"trim": 2.0, "reset": 2.0, "emergency reset": 2.0}
    last, until = {}, {}
    for d in json.loads(out.stdout)["decisions"]:
        t = d["time"]["mono_us"] / 1e6
        kind = d["kind"]
        m = re.match(r"^(trim|memory\.high|memory\.max|reset|restart) failed: not tried again for ([0-9.]+)(ms|s|m)\b"
                     r"( \(an emergency reset excepted\))?", d["reason"])
        if kind == "effect" and m:
            until[m.group(1)] = t + float(m.group(2)) * {"ms": 1e-3, "s": 1, "m": 60}[m.group(3)]
            if m.group(1) == "reset" and not m.group(4):
                until["emergency reset"] = until["reset"]
        if kind == "reset" and ": emergency reset (" in d["reason"]:
            kind = "emergency reset"
        if kind in ("trim", "memory.high", "memory.max", "reset", "emergency reset", "restart"):
            if t < until.get(kind, 0) - 1e-6:
                raise Failure(f"{kind} at +{t:.2f}s, before the end of its backoff at +{until[kind]:.2f}s")
            if kind in cooldown and kind in last and t - last[kind] < cooldown[kind] - 1e-6:
                raise Failure(f"{kind} {t - last[kind]:.2f}s after the previous one (cooldown {cooldown[kind]}s)")
            last[kind] = t
            if kind == "emergency reset":
                last["reset"] = t
    return r.stdout.strip()


def clean_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "MEMGOV_FAULT", "MEMGOV_FAULT_LOG"):
        env.pop(k, None)
    return env


def run_one(cls, pattern, which, errno_name):
    name = f"{cls}:{pattern}:{which}:{errno_name}" if cls else "no fault"
    tmp = tempfile.mkdtemp(prefix="memgov-faults-")
    target = daemon = listener = None
    try:
        target = subprocess.Popen([TARGET, "1000", "400"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for line in target.stdout:
            if line.strip() == "ready":
                break
        inact = inactive_file(DATA)
        cg, proc = make_fake_tree(tmp, target.pid, 60 * MB + inact)
        policy = os.path.join(tmp, "faults.ini")
        with open(policy, "w") as f:
            f.write(POLICY.format(sock=os.path.join(tmp, "mysqld.sock")))
        # A socket file at the policy's path, listening (it never answers): memgov opens the file
        # and checks who listens before it connects, so that the connect fault has a call to fail.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(os.path.join(tmp, "mysqld.sock"))
        listener.listen(16)
        trace, log_path, fault_log = (os.path.join(tmp, n) for n in ("trace.csv", "memgov.log", "faults.log"))
        env = clean_env()
        env["LD_PRELOAD"] = PRELOAD
        env["MEMGOV_FAULT_LOG"] = fault_log
        if cls:
            env["MEMGOV_FAULT"] = f"{cls}:{pattern}:{which}:{errno_name}"
        if ASAN:
            env["ASAN_OPTIONS"] = "detect_leaks=1:verify_asan_link_order=0:abort_on_error=0"
            env["UBSAN_OPTIONS"] = "print_stacktrace=1"
        log = open(log_path, "w")
        daemon = subprocess.Popen([MEMGOV, "run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db",
                                   "--policy", policy, "--socket", "", "--record", trace, "--state-dir", tmp],
                                  stderr=log, env=env)

        def logged():
            return open(log_path).read()

        def alive():
            if daemon.poll() is not None:
                raise Failure(f"the daemon exited ({daemon.returncode}) before SIGTERM:\n{logged()[-3000:]}")
            return True

        wait_for(lambda: alive() and "governing cgroup /db" in logged(), "the daemon to find its target", 20)
        time.sleep(1.0)
        for ws in (140, 180, 215):
            set_current(cg, ws * MB + inact)
            time.sleep(0.2)
        end = time.monotonic() + 4.0
        while time.monotonic() < end:
            alive()
            time.sleep(0.1)
        set_current(cg, 40 * MB + inact)
        # Back to normal: the last level decision since the fall (if the ladder had moved at all).

        def back_to_normal():
            levels = [r for v, r in decisions(logged()) if v == "level"]
            return alive() and (not levels or re.search(r"-> normal \(", levels[-1]) is not None)
        wait_for(back_to_normal, "the ladder to come back to normal", 15)
        time.sleep(0.3)
        daemon.send_signal(signal.SIGTERM)
        try:
            code = daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            raise Failure("no exit within 20 s of SIGTERM")
        # The server went through every trim, failed or not, unharmed.
        target.stdin.write("stop\n")
        target.stdin.flush()
        out, _ = target.communicate(timeout=20)
        if target.returncode != 0 or "FAIL" in out:
            raise Failure(f"the server was harmed (exit {target.returncode}):\n{out[-2000:]}")
        text = logged()
        if code != 0:
            raise Failure(f"exit status {code} after SIGTERM:\n{text[-3000:]}")
        if "is already traced by process" in text:
            raise Failure("a thread of the server was left traced by memgov after a failed trim")
        for bad in ("Sanitizer", "runtime error:"):  # reports, and a leak check that could not run
            if bad in text:
                raise Failure(f"{bad}:\n{text[text.index(bad) - 200:][:3000]}")

        # Once per failure.
        lines = open(fault_log).read().splitlines() if os.path.exists(fault_log) else []
        injected = [line for line in lines if line.startswith("fault ")]
        calls = sum(int(line.split()[-1]) for line in lines if line.startswith("calls "))
        first = int(which.split("-")[0]) if cls else 0
        if cls and not injected and calls >= first:
            raise Failure(f"no call failed, with {calls} matching calls: the fault never fired")
        results, effects = {}, {}
        # Up to SIGTERM: the writes that put memory.high back on the way out do not go through the
        # engine (and "max" written over a longer number leaves a plain file of the fake tree
        # unreadable, which a cgroup file cannot be).
        for line in text[:text.index("memgov: Terminated: stopping")].splitlines():
            m = re.match(r"^memgov: warning: -> (trim|memory\.high|memory\.max|reset|restart) failed: ", line)
            if m:
                results[m.group(1)] = results.get(m.group(1), 0) + 1
            m = re.match(r"^memgov: (?:\w+: )?effect +(trim|memory\.high|memory\.max|reset|restart) failed: not tried "
                         r"again", line)
            if m:
                effects[m.group(1)] = effects.get(m.group(1), 0) + 1
            m = re.match(r"^memgov: warning: (\w+(?:\.\w+)?) dropped: ", line)
            if m:
                results[m.group(1)] = results.get(m.group(1), 0) + 1
        for kind in set(results) | set(effects):
            a, e = results.get(kind, 0), effects.get(kind, 0)
            if not (a - 1 <= e <= a):
                raise Failure(f"{kind}: {a} failed action(s) logged by the actuator, {e} reported by the engine")
        # A file that cannot be read: said when it starts (and by whoever decides what to do about
        # it), not on every sample.
        # (memory.high and memory.max are plain files here, written by the limits actuator while the
        # sampler reads them: one read in the middle of a write finds the file empty, "Bad
        # message". A cgroup file is never seen half written; that line is the fake tree's.)
        said = [line for line in text.splitlines()
                if re.match(r"^memgov: (warning: )?(cannot read the (cgroup|server process) of |.*: the (cgroup|server "
                            r"process) is gone)", line)
                and not re.search(r": memory\.(high|max): Bad message; ", line)]
        if cls in ("read", "open"):
            episodes = count_episodes(injected)
            if len(said) > episodes:
                raise Failure(f"{len(said)} line(s) for {episodes} episode(s) of unreadable files:\n"
                              + "\n".join(said[:10]))
            if pattern != "memory.events" and not said and not results:
                raise Failure(f"{len(injected)} failed read(s), and nothing said about them")
        reached = []
        for v, r in decisions(text):
            m = re.search(r": \w+ -> (\w+) \(", r) if v == "level" else None
            if m and m.group(1) != "normal" and m.group(1) not in reached:
                reached.append(m.group(1))
        replay = check_replay(policy, trace, log_path, reached or ["trim"]) if reached else "no level change"
        return {"name": name, "injected": len(injected), "calls": calls, "failed_actions": sum(results.values()),
                "decisions": len(decisions(text)), "reached": reached, "replay": replay, "lines": len(text.splitlines())}
    except Failure as e:
        return {"name": name, "error": f"{e} (files kept in {keep_files(tmp, name)})"}
    finally:
        if os.environ.get("MEMGOV_FAULTS_KEEP"):
            keep_files(tmp, name)
        for p in (daemon, target):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        if listener:
            listener.close()
        shutil.rmtree(tmp, ignore_errors=True)


def keep_files(tmp, name):
    keep = os.path.join(tempfile.gettempdir(), "memgov-faults-kept-" + re.sub(r"[^A-Za-z0-9]+", "-", name))
    shutil.rmtree(keep, ignore_errors=True)
    # (not the fake tree, nor the sockets, which cannot be copied)
    shutil.copytree(tmp, keep, ignore=shutil.ignore_patterns("cg", "proc", "*.sock"))
    return keep


def count_episodes(injected):
    """Failed reads of consecutive calls make one episode (one warning), others one each."""
    calls = sorted(int(re.search(r" call (\d+) ", line).group(1)) for line in injected)
    return sum(1 for i, c in enumerate(calls) if i == 0 or c != calls[i - 1] + 1)


def main():
    runs = [(None, None, None, None)]
    for cls, pattern, err in CLASSES:
        runs += [(cls, pattern, str(n), err) for n in range(1, K + 1)]
        runs.append((cls, pattern, "1-", err))
    only = os.environ.get("MEMGOV_FAULTS_ONLY")  # e.g. "write:memory.high" or "no fault"
    if only:
        runs = [r for r in runs if only in (f"{r[0]}:{r[1]}:{r[2]}:{r[3]}" if r[0] else "no fault")]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=PARALLEL) as ex:
        results = list(ex.map(lambda r: run_one(*r), runs))
    bad = [r for r in results if "error" in r]
    for r in results:
        if "error" in r:
            print(f"daemon-faults: FAIL: {r['name']}: {r['error']}")
        else:
            print(f"daemon-faults: ok: {r['name']}: {r['injected']} of {r['calls']} call(s) failed, "
                  f"{r['failed_actions']} failed "
                  f"action(s), {r['decisions']} decisions, rungs {','.join(r['reached']) or '-'}; {r['replay']}")
    good = [r for r in results if "error" not in r]
    print(f"daemon-faults: {len(results)} runs{' under AddressSanitizer' if ASAN else ''} in "
          f"{time.monotonic() - start:.0f}s: {sum(r['injected'] for r in good)} calls failed on purpose, "
          f"{sum(r['failed_actions'] for r in good)} failed actions logged, "
          f"{sum(r['decisions'] for r in good)} decisions replayed identically")
    print(f"{len(results) - len(bad)} passed, {len(bad)} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
