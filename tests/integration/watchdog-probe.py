#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The watchdog and the liveness probe. memgov run on the fake cgroup and proc tree pings the
watchdog (WATCHDOG=1 on NOTIFY_SOCKET, here a datagram socket of the test) while its action
thread is healthy, also while a job runs within its timeout, and stops once a job is wedged past
its timeout (wedge-preload.so makes the memory.high open never return, as a write stuck in
reclaim): then memgov status says so and memgov status --probe fails. The probe also fails when
no daemon answers, or when the daemon (stopped) or something else on the socket does not answer
within its bound; memgov
status reads a long reply whole and refuses a cut or an endless one, never passing it off as a
snapshot. A reload into a dry run while a write is under way does not wait for it, and puts
memory.high back after it.
usage: watchdog-probe.py MEMGOV WEDGE_PRELOAD SOURCE_ROOT"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import PID, Checks, MB, inactive_file, make_tree, set_current  # noqa: E402

MEMGOV, PRELOAD, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
DATA = os.path.join(SRC, "tests", "data")
CHECKS = Checks("watchdog-probe")
fail, ok, wait_for = CHECKS.fail, CHECKS.ok, CHECKS.wait_for
DAEMONS = []


def status(*args, timeout=30):
    t0 = time.monotonic()
    r = subprocess.run([MEMGOV, "status", *args], capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def serve_once(path, reply, answer=True):
    """A fake daemon on path: takes one client, reads its request, sends reply (or nothing)."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)

    def run():
        c, _ = srv.accept()
        try:
            c.recv(64)
            if answer:
                c.sendall(reply)
            else:
                time.sleep(15)
        except OSError:
            pass  # the client gave up: what is checked is what it says
        finally:
            c.close()
            srv.close()
    threading.Thread(target=run, daemon=True).start()


def check_replies(tmp):
    history = [{"kind": "trim", "level": "trim", "line": "x" * 1000, "result": None, "error": None}
               for _ in range(200)]
    doc = json.dumps({"version": "0", "instance": "long-reply", "level": "normal", "history": history}).encode()
    if len(doc) < 150 * 1024:
        fail("the long reply is not long")

    sock = os.path.join(tmp, "long.sock")
    serve_once(sock, doc + b"\n")
    r, _ = status("--json", "--socket", sock)
    if r.returncode != 0:
        fail(f"a {len(doc)}-byte reply: exit {r.returncode}: {r.stderr}")
    st = json.loads(r.stdout)
    if st.get("instance") != "long-reply" or len(st["history"]) != 200:
        fail(f"a {len(doc)}-byte reply was not read whole: instance {st.get('instance')}")
    ok(f"a {len(doc) // 1024} KiB reply is read whole")

    # Text from the server's side (its process name, a session's host) in the table and in the
    # JSON: a control in it (C0, DEL, C1 as UTF-8) would act on the terminal, so it is shown as
    # \xNN, on both outputs.
    target = {"description": "mariadbd pid 7 \x1b[2J\x1b]0;owned\x07 \x7f \u009b31m", "pid": 7}
    hostile = json.dumps({"version": "0", "instance": "x", "level": "normal", "target": target,
                          "history": [{"kind": "reset", "level": "reset", "line": "reset",
                                       "result": "reset 1 of 1 session(s): #9 a@\x1b[31mevil (idle 40s)",
                                       "error": None}]}, ensure_ascii=False).encode()
    for mode in ((), ("--json",)):
        sock = os.path.join(tmp, f"escape{len(mode)}.sock")
        serve_once(sock, hostile + b"\n")
        r, _ = status(*mode, "--socket", sock)
        out = r.stdout
        if r.returncode != 0 or any(c in out for c in ("\x1b", "\x07", "\x7f", "\u009b")):
            fail(f"control characters from the reply reached the terminal ({' '.join(mode) or 'text'}): exit "
                 f"{r.returncode}, {out!r}")
        shown = json.loads(out)["target"]["description"] if mode else out
        want = "pid 7 \\x1b[2J\\x1b]0;owned\\x07 \\x7f \\xc2\\x9b31m"
        if want not in shown:
            fail(f"the controls are not shown as \\xNN ({' '.join(mode) or 'text'}): {shown!r}")
    ok("controls in the reply's text (ESC, BEL, DEL, CSI as UTF-8) shown as \\xNN in the table and the JSON, "
       "never sent to the terminal")

    sock = os.path.join(tmp, "cut.sock")
    serve_once(sock, doc[:70000])
    r, _ = status("--json", "--socket", sock)
    if r.returncode == 0 or r.stdout or "is not a status document" not in r.stderr:
        fail(f"a cut reply: exit {r.returncode}, stdout {r.stdout[:200]!r}, stderr {r.stderr!r}")
    ok("a reply cut short is refused, no snapshot instead: " + r.stderr.strip())

    sock = os.path.join(tmp, "endless.sock")
    serve_once(sock, b"[" + b"0," * (9 << 20))
    r, _ = status("--json", "--socket", sock)
    if r.returncode == 0 or r.stdout or "longer than 16 MiB: refused" not in r.stderr:
        fail(f"an endless reply: exit {r.returncode}, stdout {r.stdout[:200]!r}, stderr {r.stderr!r}")
    ok("a reply of more than 16 MiB is refused: " + r.stderr.strip())

    sock = os.path.join(tmp, "silent.sock")
    serve_once(sock, b"", answer=False)
    r, took = status("--probe", "--socket", sock)
    if r.returncode == 0 or "no answer within 5s" not in r.stderr or took > 8:
        fail(f"probe of a socket that does not answer: exit {r.returncode} after {took:.1f}s: {r.stderr!r}")
    ok(f"probe of a socket that does not answer: exit {r.returncode} after {took:.1f}s")

    r, _ = status("--probe", "--socket", os.path.join(tmp, "nobody.sock"))
    if r.returncode == 0 or "no daemon answers" not in r.stderr or r.stdout:
        fail(f"probe with no daemon: exit {r.returncode}: {r.stderr!r}")
    ok("probe with no daemon: exit 1, no snapshot taken")


class Pings:
    """The daemon's sd_notify messages, with the time each WATCHDOG=1 came."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.times = []
        self.messages = []
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            msg = self.sock.recv(4096).decode(errors="replace")
            self.messages.append(msg)
            if "WATCHDOG=1" in msg.split("\n"):
                self.times.append(time.monotonic())

    def since(self, t):
        return [p for p in self.times if p >= t]


def wait_for_quiet(worker, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if worker().get("busy") is False:
            return True
        time.sleep(0.1)
    return False


class Daemon:
    """memgov run on a fake tree in tmp (fast.ini, the working set at 60M), its opens of
    memory.high for writing wedged while the file tmp/wedge exists (wedge-preload.so). leaks:
    whether AddressSanitizer checks for leaks at exit (not when a thread wedged in the kernel is
    left behind with its job, on purpose: action_worker_stop)."""

    def __init__(self, tmp, args, env, leaks, comm=None):
        self.inact = inactive_file(DATA)
        self.cg, proc = make_tree(DATA, tmp, 60 * MB + self.inact)
        if comm is not None:
            with open(os.path.join(proc, str(PID), "comm"), "w") as f:
                f.write(comm + "\n")
        policy = self.policy = os.path.join(tmp, "policy.ini")
        shutil.copy(os.path.join(SRC, "tests", "vm", "policies", "fast.ini"), policy)
        os.chmod(policy, 0o644)
        self.sock = os.path.join(tmp, "memgov.sock")
        self.log_path = os.path.join(tmp, "memgov.log")
        self.wedge = os.path.join(tmp, "wedge")
        env = dict(os.environ, LD_PRELOAD=PRELOAD, MEMGOV_WEDGE_OPEN="memory.high", MEMGOV_WEDGE_WHEN=self.wedge, **env)
        if "libasan" in subprocess.run(["ldd", MEMGOV], capture_output=True, text=True).stdout:
            # AddressSanitizer wants its runtime first; the preload (no sanitizer of its own)
            # comes before it here.
            env["ASAN_OPTIONS"] = "verify_asan_link_order=0" + ("" if leaks else ":detect_leaks=0")
        run = [MEMGOV, "run", *args, "--cgroup-root", self.cg, "--proc-root", proc, "--cgroup", "/db", "--policy",
               policy, "--socket", self.sock, "--state-dir", ""]
        # WATCHDOG_PID names the daemon itself: the shell's pid, which exec gives to memgov.
        self.d = subprocess.Popen(["sh", "-c", 'WATCHDOG_PID=$$ exec "$@"', "sh", *run],
                                  stderr=open(self.log_path, "w"), env=env)
        DAEMONS.append(self.d)

    def logged(self):
        return open(self.log_path).read()

    def worker(self):
        r, _ = status("--json", "--socket", self.sock)
        return json.loads(r.stdout)["worker"] if r.returncode == 0 else {}


def check_watchdog(tmp):
    pings = Pings(os.path.join(tmp, "notify.sock"))
    g = Daemon(tmp, ["--dry-run"], dict(NOTIFY_SOCKET=os.path.join(tmp, "notify.sock"), WATCHDOG_USEC="1000000"),
               leaks=False)
    d, cg, sock, wedge, inact, logged, worker = g.d, g.cg, g.sock, g.wedge, g.inact, g.logged, g.worker

    wait_for(lambda: ("governing cgroup /db" in logged() and os.path.exists(sock)) or
             (d.poll() is not None and fail(f"the daemon exited ({d.returncode}):\n{logged()}")),
             "the daemon to find its target")
    t0 = time.monotonic()
    time.sleep(2.2)
    n = len(pings.since(t0))
    if n < 3:
        fail(f"{n} watchdog pings in 2.2 s with WATCHDOG_USEC=1s (expected one every 0.5 s)")
    r, _ = status("--probe", "--socket", sock)
    if r.returncode != 0 or r.stdout or r.stderr:
        fail(f"probe of a healthy daemon: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
    ok(f"healthy: {n} watchdog pings in 2.2 s, the probe exits 0 and prints nothing")

    # A daemon whose loop does not run (stopped): the kernel still queues the connection.
    d.send_signal(signal.SIGSTOP)
    try:
        r, took = status("--probe", "--socket", sock)
    finally:
        d.send_signal(signal.SIGCONT)
    if r.returncode == 0 or "no answer within 5s" not in r.stderr or took > 8:
        fail(f"probe of a stopped daemon: exit {r.returncode} after {took:.1f}s: {r.stderr!r}")
    ok(f"probe of a stopped daemon: exit {r.returncode} after {took:.1f}s")

    # From now on a memory.high job's open never returns; throttle to have one. (memgov set
    # memory.high to its calm value at startup, not wedged.)
    if not wait_for_quiet(worker):
        fail("the action thread is still busy before the wedge")
    open(wedge, "w").close()
    for ws in (140, 180):
        set_current(cg, ws * MB + inact)
        time.sleep(0.3)

    wait_for(lambda: worker().get("busy"), "the memory.high job to start")
    # When it started, from its running_s (whole seconds, rounded down): within [lo, hi].
    w = worker()
    started_hi = time.monotonic() - w["running_s"]
    started_lo = started_hi - 1
    wait_for(lambda: "still running after" in logged(), "the job to be counted as failed", timeout=15)
    # Past its timeout (10 s) but within the margin (10 s more): still pinging, the probe passes.
    time.sleep(max(0.0, started_hi + 12 - time.monotonic()))
    late = pings.since(started_hi + 10.5)
    if not late:
        fail("no watchdog ping while the job ran within its timeout and margin")
    r, _ = status("--probe", "--socket", sock)
    if time.monotonic() >= started_lo + 19.5:
        fail("too slow to probe within the margin")
    if r.returncode != 0:
        fail(f"probe within the margin: exit {r.returncode}: {r.stderr}")
    ok(f"a job past its timeout, within the margin: counted as failed, pings go on, the probe passes "
       f"(seen running for {w['running_s']}s)")

    wait_for(lambda: "the action thread is wedged" in logged(), "the wedge to be reported", timeout=15)
    wedged_at = time.monotonic()
    line = [x for x in logged().splitlines() if "the action thread is wedged" in x][0]
    time.sleep(3)
    after = pings.since(wedged_at + 0.1)
    if after:
        fail(f"{len(after)} watchdog pings after '{line}'")
    if logged().count("the action thread is wedged") != 1:
        fail("the wedge is not said exactly once")
    w = worker()
    if not w.get("overdue") or w.get("running_s", 0) < 20:
        fail(f"status does not say the thread is wedged: {w}")
    r, _ = status("--socket", sock)
    if "WEDGED: " not in r.stdout:
        fail(f"the status table does not say the thread is wedged:\n{r.stdout}")
    r, _ = status("--probe", "--socket", sock)
    if r.returncode == 0 or "the action thread is wedged" not in r.stderr:
        fail(f"probe of a wedged daemon: exit {r.returncode}: {r.stderr!r}")
    ok(f"wedged: said once ({line.strip()}), no watchdog ping for 3 s, status worker {w}, "
       f"probe exit {r.returncode}: {r.stderr.strip()}")

    d.send_signal(signal.SIGTERM)
    try:
        code = d.wait(timeout=5)
    except subprocess.TimeoutExpired:
        fail("no exit within 5 s of SIGTERM with the action thread wedged")
    if code != 0:
        fail(f"exit status {code} after SIGTERM:\n{logged()[-3000:]}")
    ok("SIGTERM with the thread wedged: exit 0")


def check_notify_escaped(tmp):
    """The server names itself: a command name with newlines (as /proc/PID/comm shows it, which
    any process may set for itself) would make more notify fields of systemd's STATUS= line,
    MAINPID= or WATCHDOG=1 sent as root."""
    tmp = os.path.join(tmp, "comm")
    os.mkdir(tmp)
    pings = Pings(os.path.join(tmp, "notify.sock"))
    g = Daemon(tmp, ["--dry-run"], dict(NOTIFY_SOCKET=os.path.join(tmp, "notify.sock")), leaks=True,
               comm="\nMAINPID=4321\n")
    wait_for(lambda: any(m.startswith("STATUS=") and "level" in m for m in pings.messages) or
             (g.d.poll() is not None and fail(f"the daemon exited ({g.d.returncode}):\n{g.logged()}")),
             "a STATUS= line with the level")
    g.d.send_signal(signal.SIGTERM)
    g.d.wait(timeout=10)
    fields = [f for m in pings.messages for f in m.split("\n")]
    bad = [f for f in fields if f.split("=", 1)[0] not in ("STATUS", "READY", "STOPPING", "RELOADING")]
    if bad:
        fail(f"fields the daemon never sends of its own: {bad} in {pings.messages}")
    status = [m for m in pings.messages if "level" in m][0]
    if "\\x0aMAINPID=4321\\x0a pid" not in status:
        fail(f"the name not shown escaped in {status!r}")
    if "\\x0aMAINPID=4321\\x0a pid" not in g.logged():
        fail(f"the name not shown escaped in the log:\n{g.logged()}")
    ok(f"a command name with newlines stays inside STATUS=, escaped: {status!r}")


def check_reload_behind_a_write(tmp, stop_first):
    """Back to a dry run by a reload while a memory.high write is under way (wedged for a few
    seconds): the loop goes on (the reload is said at once, status answers), and memory.high is
    put back as found after that write lands, not before it (where the write would stay). With
    stop_first, memgov stops before the write comes back: it writes the put-back itself on its
    way out (the lane's queue is not run then)."""
    tmp = os.path.join(tmp, "reload-stop" if stop_first else "reload")
    os.makedirs(tmp)
    g = Daemon(tmp, [], dict(MEMGOV_WEDGE_ONCE="1") if stop_first else {}, leaks=not stop_first)
    d, cg, sock, wedge, inact, logged, worker, policy = g.d, g.cg, g.sock, g.wedge, g.inact, g.logged, g.worker, g.policy
    high = os.path.join(cg, "db", "memory.high")
    wait_for(lambda: open(high).read().strip() != "max" or
             (d.poll() is not None and fail(f"the daemon exited ({d.returncode}):\n{logged()}")),
             "memory.high written once acting")
    if not wait_for_quiet(worker):
        fail("the action thread is still busy before the wedge")
    open(wedge, "w").close()
    set_current(cg, 180 * MB + inact)
    wait_for(lambda: worker().get("busy"), "a memory.high write to start")
    with open(policy, "a") as f:
        f.write("\n[governor]\ndry-run = yes\n")
    t0 = time.monotonic()
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload: dry run from now on" in logged(), "the reload, said while the write is under way",
             timeout=3)
    r, took = status("--socket", sock, timeout=5)
    if r.returncode != 0 or not worker().get("busy"):
        fail(f"status during the write under way: exit {r.returncode} after {took:.1f}s: {r.stderr}")
    said = time.monotonic() - t0
    if open(high).read().strip() == "max":
        fail("memory.high put back while the write before it was still under way")
    if stop_first:
        d.send_signal(signal.SIGTERM)
        if d.wait(timeout=5) != 0:
            fail(f"exit status {d.returncode} after SIGTERM:\n{logged()[-3000:]}")
        os.unlink(wedge)
        if open(high).read().strip() != "max":
            fail(f"memory.high is {open(high).read().strip()} after memgov stopped: the put-back was lost")
        if "memgov stops, not put back yet: a dry run from now on: memory.high" not in logged():
            fail("memory.high put back on the way out without a word")
        ok("a reload into a dry run, then a stop, with a memory.high write still under way: memgov put "
           "memory.high back as found on its way out")
        return
    os.unlink(wedge)
    wait_for(lambda: open(high).read().strip() == "max" and not worker().get("busy"), "memory.high put back as found")
    time.sleep(1)
    if open(high).read().strip() != "max":
        fail(f"memory.high is {open(high).read().strip()} after the put-back: the write before it landed last")
    if "a dry run from now on: memory.high" not in logged():
        fail("memory.high put back without a word")
    ok(f"a reload into a dry run behind a memory.high write under way: said {said:.1f}s after SIGHUP, "
       "status answered meanwhile, memory.high put back as found once the write landed")
    d.send_signal(signal.SIGTERM)
    if d.wait(timeout=5) != 0:
        fail(f"exit status {d.returncode} after SIGTERM:\n{logged()[-3000:]}")


def main():
    if os.geteuid() != 0:
        print("watchdog-probe: SKIP: needs root (the daemon's capabilities)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="memgov-watchdog-")
    try:
        check_replies(tmp)
        check_notify_escaped(tmp)
        check_reload_behind_a_write(tmp, False)
        check_reload_behind_a_write(tmp, True)
        check_watchdog(tmp)
    finally:
        for p in DAEMONS:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
