#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's own trust boundaries, played by an attacker, on a fake cgroup and proc tree with
the embedded default policy (docs/security.md):
- every thread of the running governor has the same, dropped, capability sets;
- the control socket: a member of the socket's group is let in whatever number of groups it has
  (256 made the kernel write past the buffer, more were refused), a stranger is refused before
  anything it sent is read, and clients that connect and say nothing do not hold the loop;
- the metrics textfile: a FIFO or someone's file at the old temporary name is neither opened nor
  touched, and the file is still written;
- the state directory: a state file that is a symbolic link is not followed; one that others
  may write (a Kubernetes emptyDir, 0777, or 2777 with the pod's fsGroup) is used through a
  directory of memgov's own inside it, "private" (0700), and one planted there by another user,
  or as a symbolic link, is refused.
usage: security-daemon.py MEMGOV SOURCE_ROOT"""
import grp
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_tree import Checks, MB, make_tree  # noqa: E402

MEMGOV, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")
DAEMONS = []
CHECKS = Checks("security-daemon")
fail, ok, wait_for = CHECKS.fail, CHECKS.ok, CHECKS.wait_for
CAP_SETS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


def main():
    if os.geteuid() != 0:
        print("security-daemon: SKIP: needs root (the attacker runs as other users)")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="memgov-security-")
    os.chmod(tmp, 0o755)
    try:
        run(tmp)
    finally:
        for p in DAEMONS:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def thread_caps(pid):
    caps = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        sets = {}
        for line in open(f"/proc/{pid}/task/{tid}/status"):
            key = line.split(":")[0]
            if key in CAP_SETS:
                sets[key] = int(line.split(":")[1], 16)
        caps[int(tid)] = sets
    return caps


def status_json(sock, timeout=10):
    r = subprocess.run([MEMGOV, "status", "--json", "--socket", sock], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        fail(f"memgov status: {r.returncode} {r.stderr}")
    return json.loads(r.stdout)


def as_user(uid, gid, groups, code):
    """Runs python code as uid/gid with exactly these supplementary groups; returns its output."""
    def become():
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
    r = subprocess.run(["/usr/bin/python3", "-c", code], preexec_fn=become, capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


ASK = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1] if len(sys.argv) > 1 else %r)
s.sendall(b"status\\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.decode()[:200])
"""


def run(tmp):
    cg, proc = make_tree(DATA, tmp, 100 * MB)
    # The embedded default policy, plus a metrics textfile (the one key a fake tree needs).
    prom_dir = os.path.join(tmp, "textfile")
    os.mkdir(prom_dir)
    prom = os.path.join(prom_dir, "memgov.prom")
    policy = os.path.join(tmp, "policy.ini")
    with open(policy, "w") as f:
        f.write(f"[metrics]\ntextfile = {prom}\n")
    os.chmod(policy, 0o644)
    # The old temporary name: a FIFO there blocked the loop in open(); a file there was
    # truncated and made world-readable.
    os.mkfifo(prom + ".tmp", 0o600)
    planted = os.path.join(prom_dir, "other.tmp")
    with open(planted, "w") as f:
        f.write("someone's data\n")
    os.chmod(planted, 0o600)
    # The state directory: the instance's state file is a symbolic link to a file the attacker
    # wants read (and, at the next restart, overwritten).
    state = os.path.join(tmp, "state")
    os.mkdir(state, 0o755)
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.symlink(victim, os.path.join(state, "cgroup-db.state"))

    sock = os.path.join(tmp, "memgov.sock")
    log_path = os.path.join(tmp, "memgov.log")
    d = subprocess.Popen([MEMGOV, "run", "--dry-run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db",
                          "--policy", policy, "--socket", sock, "--state-dir", state], stderr=open(log_path, "w"))
    DAEMONS.append(d)

    def logged():
        return open(log_path).read()

    wait_for(lambda: "governing cgroup /db" in logged() and os.path.exists(sock), "the daemon to govern /db")

    # 1. Capabilities: every thread, all five sets, the same; none of them more than the kept set.
    caps = thread_caps(d.pid)
    if len(caps) < 2:
        fail(f"expected the event loop and the action thread, found threads {sorted(caps)}")
    first = next(iter(caps.values()))
    for tid, sets in caps.items():
        if sets != first:
            fail(f"thread {tid} has capabilities { {k: hex(v) for k, v in sets.items()} }, thread "
                 f"{next(iter(caps))} { {k: hex(v) for k, v in first.items()} }")
    if first["CapEff"] != first["CapPrm"] or first["CapInh"] or first["CapAmb"] or first["CapEff"] >> 20:
        fail(f"the sets are not the dropped ones: { {k: hex(v) for k, v in first.items()} }")
    if first["CapBnd"] != first["CapEff"]:
        fail(f"the bounding set is not reduced: {hex(first['CapBnd'])} vs {hex(first['CapEff'])}")
    ok(f"{len(caps)} threads, each with effective = permitted = bounding = {hex(first['CapEff'])}, no "
       f"inheritable or ambient capabilities")

    # 9. The textfile is written; the FIFO at the old temporary name and the planted file untouched.
    wait_for(lambda: os.path.exists(prom), "the metrics textfile")
    st = status_json(sock, timeout=5)
    if "memgov_samples_total" not in open(prom).read():
        fail("the textfile holds no metrics")
    if not stat.S_ISFIFO(os.lstat(prom + ".tmp").st_mode):
        fail("the FIFO at memgov.prom.tmp was replaced")
    if open(planted).read() != "someone's data\n" or stat.S_IMODE(os.stat(planted).st_mode) != 0o600:
        fail("a file beside the textfile was changed")
    leftovers = [n for n in os.listdir(prom_dir) if n not in ("memgov.prom", "memgov.prom.tmp", "other.tmp")]
    if leftovers:
        fail(f"temporary files left in the textfile directory: {leftovers}")
    if stat.S_IMODE(os.stat(prom).st_mode) != 0o644:
        fail(f"textfile mode {oct(os.stat(prom).st_mode)}")
    ok(f"textfile written ({st['samples']} samples) beside a FIFO at its old temporary name; the loop answers")

    # 10. The state file: not followed, the victim unchanged and unread.
    if "cgroup-db.state: a symbolic link; ignored" not in logged():
        fail("the symbolic link in the state directory was not refused:\n" + logged())
    if open(victim).read() != "precious\n":
        fail("the symlink's target was changed")
    ok("the state file, a symbolic link, was refused and not followed")

    # 3. The control socket's group: a member with 256 and with 300 supplementary groups.
    gid = 64000
    while True:
        try:
            grp.getgrgid(gid)
            gid += 1
        except KeyError:
            break
    os.chown(sock, 0, gid)
    os.chmod(sock, 0o660)
    nobody = pwd.getpwnam("nobody")
    for count in (256, 300):
        groups = list(range(20000, 20000 + count - 1)) + [gid]  # the socket's group last (the kernel sorts them)
        code, out = as_user(nobody.pw_uid, nobody.pw_gid, groups, ASK % sock)
        if code != 0 or '"target"' not in out:
            fail(f"a member of the socket's group with {count} groups was refused: {code} {out}")
        if d.poll() is not None:
            fail(f"the daemon died answering a peer with {count} groups")
    ok("a member of the socket's group is answered with 256 and with 300 supplementary groups")
    os.chmod(sock, 0o666)
    code, out = as_user(nobody.pw_uid, nobody.pw_gid, [], ASK % sock)
    if "permission denied" not in out:
        fail(f"a stranger was not refused: {code} {out}")
    ok("a stranger is refused")

    # 10. Silent clients: each used to hold the loop for a second in a blocking recv.
    silent = []
    for _ in range(6):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        silent.append(s)
    t0 = time.monotonic()
    status_json(sock, timeout=10)
    took = time.monotonic() - t0
    if took > 1.5:
        fail(f"with 6 silent clients connected, status took {took:.2f}s")
    for s in silent:
        s.close()
    ok(f"6 silent clients connected: status answered in {took * 1000:.0f} ms")

    # The daemon took every attack and still runs, then stops cleanly.
    d.terminate()
    if d.wait(timeout=10) != 0:
        fail(f"exit status {d.returncode}:\n{logged()}")
    ok("clean exit after all of it")

    state_dir_writable_by_others(tmp, cg, proc, policy)
    control_socket_never_accepting(tmp, cg, proc, policy)


def control_socket_never_accepting(tmp, cg, proc, policy):
    """A listener at the control socket's path that never accepts, its queue full: memgov's check
    for a running memgov there used to wait in connect() for ever."""
    path = os.path.join(tmp, "held.sock")
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    held.bind(path)
    held.listen(0)
    waiting = []
    while True:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(path)
            waiting.append(c)
        except BlockingIOError:
            c.close()
            break
    t0 = time.monotonic()
    r = subprocess.run([MEMGOV, "run", "--dry-run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db",
                        "--policy", policy, "--socket", path, "--state-dir", ""], capture_output=True, text=True,
                       timeout=30)
    took = time.monotonic() - t0
    if r.returncode == 0 or "accepts no connection within 1s" not in r.stderr or took > 10:
        fail(f"a control socket path held by a listener that never accepts: exit {r.returncode} after {took:.1f}s:\n"
             f"{r.stderr}")
    ok(f"a listener that never accepts at the control socket's path: refused in {took:.1f}s, not waited for")
    held.close()
    for c in waiting:
        c.close()


def state_dir_writable_by_others(tmp, cg, proc, policy):
    """A state directory others may write, as a kubelet makes an emptyDir."""
    nobody = pwd.getpwnam("nobody")

    def start(state, name):
        log_path = os.path.join(tmp, name + ".log")
        d = subprocess.Popen([MEMGOV, "run", "--dry-run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db",
                              "--policy", policy, "--socket", "", "--state-dir", state], stderr=open(log_path, "w"))
        DAEMONS.append(d)
        text = lambda: open(log_path).read()
        wait_for(lambda: "governing cgroup /db" in text(), f"the daemon ({name}) to govern /db")
        d.terminate()
        d.wait(timeout=10)
        return text()

    for mode, gid, what in ((0o777, 0, "everyone (mode 0777)"), (0o2777, 2000, "everyone (mode 2777)"),
                            (0o2775, 2000, "its group (mode 2775)")):
        state = os.path.join(tmp, f"emptydir-{mode:o}")
        os.mkdir(state)
        os.chown(state, 0, gid)
        os.chmod(state, mode)
        log = start(state, f"emptydir-{mode:o}")
        private = os.path.join(state, "private")
        want = f"state directory {state} is writable by {what}: the state is kept in {private}, root's alone"
        if want not in log:
            fail(f"with the state directory at mode {mode:o}: expected '{want}' in:\n{log}")
        st = os.lstat(private)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or stat.S_IMODE(st.st_mode) & 0o077:
            fail(f"{private}: uid {st.st_uid} mode {oct(st.st_mode)}, expected root's, 0700")
        if "kept in memory only" in log:
            fail(f"the state was kept in memory only:\n{log}")
        ok(f"a state directory writable by {what}: the state kept in private/ (0700, root's)")

    # What another user can do there first: plant "private" as their own directory, or as a link.
    for plant in ("dir", "link"):
        state = os.path.join(tmp, f"emptydir-planted-{plant}")
        os.mkdir(state)
        os.chmod(state, 0o777)
        private = os.path.join(state, "private")
        elsewhere = os.path.join(tmp, f"elsewhere-{plant}")
        os.mkdir(elsewhere, 0o700)
        if plant == "dir":
            os.mkdir(private, 0o700)
            os.chown(private, nobody.pw_uid, nobody.pw_gid)
        else:
            os.symlink(elsewhere, private)
        log = start(state, f"planted-{plant}")
        if "are kept in memory only" not in log or f"{private}" not in log:
            fail(f"a 'private' planted as a {plant} by another user was not refused:\n{log}")
        if os.listdir(elsewhere):
            fail(f"memgov wrote through the planted link: {os.listdir(elsewhere)}")
        ok(f"'private' planted by another user as a {'directory' if plant == 'dir' else 'symbolic link'}: refused")


if __name__ == "__main__":
    main()
