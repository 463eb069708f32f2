#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The files memgov reads for a trim are named by the target (/proc/PID/maps) and live in the
target's root, which the target controls. Three targets in a mount namespace of their own, each
with the directory of its libc covered by another after it started:
  symlink   libc.so.6 is an absolute symlink. It must be resolved within the target's root (where
            it leads to a good copy of libc), never in memgov's (where the same path is a FIFO
            that would block an open forever): the trim succeeds, within seconds.
  fifo      libc.so.6 is a FIFO: memgov must not block on it, and refuses it (not a regular
            file) within seconds.
  truncate  libc.so.6 is a copy of libc that is truncated and written back again and again while
            memgov reads it: memgov must never die of it (it parses a private copy, not a
            mapping of the file that SIGBUS would kill it through).
  device    libc.so.6 is a character device: memgov must refuse it without opening it (a
            device's open has effects: /dev/watchdog's arms a reboot), seen by inotify on it.
  newline   the target's libc is mapped from a directory whose name holds a newline, which the
            kernel prints as "\012" (and a name may hold those four characters): a directory so
            named, its libc.so.6 a device, is never opened; the file mapped is reached through
            /proc/PID/map_files where memgov may (root), and the trim is refused, saying why,
            where it may not.
  escapes   the target's libc is mapped from a directory named with terminal controls (ESC,
            CSI as UTF-8), and the trim fails there: what memgov trim prints, as text or JSON,
            shows them as \\xNN, never as controls.
usage: inject-root.py MEMGOV INJECT_TARGET [CASE...]"""
import ctypes
import json
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from inject_target import Target  # noqa: E402

MEMGOV, BINARY = sys.argv[1], sys.argv[2]
BOUND = 10  # seconds a trim may take
TRUNCATE_TRIMS = 300


def fail(msg):
    print(f"inject-root: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def libc_of(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            path = line.split(maxsplit=5)[5].strip() if len(line.split(maxsplit=5)) == 6 else ""
            if os.path.basename(path) == "libc.so.6":
                return path
    fail(f"no libc.so.6 in /proc/{pid}/maps")


def in_namespace(pid, script):
    subprocess.run(["nsenter", "-t", str(pid), "-m", "sh", "-ec", script], check=True)


def trim(pid, dry_run=False):
    args = [MEMGOV, "trim", "--pid", str(pid), "--method", "ptrace", "--json"] + (["--dry-run"] if dry_run else [])
    t0 = time.monotonic()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=BOUND)
    except subprocess.TimeoutExpired:
        fail(f"memgov trim --pid {pid} did not return within {BOUND} s")
    rep = json.loads(r.stdout) if r.stdout.strip() else {}
    return r.returncode, rep, time.monotonic() - t0


def check_target(t, what):
    with open(f"/proc/{t.pid}/status") as f:
        st = dict(l.split(":", 1) for l in f if ":" in l)
    if st["TracerPid"].strip() != "0" or not t.alive():
        fail(f"{what}: the target was left traced or died")
    t.feed()
    if t.failures():
        fail(f"{what}: the target saw wrong results: {t.failures()[:3]}")


def start(tmp, name):
    """A target in a mount namespace of its own, and its libc's directory covered by a fresh one."""
    t = Target(BINARY, 300, 400, prefix=["unshare", "-m", "--propagation", "private"])
    libc = libc_of(t.pid)
    stage = os.path.join(tmp, name)
    os.mkdir(stage)
    return t, libc, stage


def symlink_case(tmp):
    t, libc, stage = start(tmp, "symlink")
    try:
        outside = os.path.join(tmp, "outside")
        inside = os.path.join(tmp, "inside")
        os.mkdir(outside)
        os.mkdir(inside)
        os.mkfifo(os.path.join(outside, "libc.so.6"))  # what memgov's namespace sees
        shutil.copy(libc, os.path.join(inside, "libc.so.6"))  # what the target's sees
        os.symlink(os.path.join(outside, "libc.so.6"), os.path.join(stage, "libc.so.6"))
        in_namespace(t.pid, f"mount --bind {inside} {outside}; mount --bind {stage} {os.path.dirname(libc)}")
        code, rep, took = trim(t.pid)
        if code != 0 or not rep.get("ok") or not rep.get("completed"):
            fail(f"symlink: the trim through libc's absolute symlink within the target's root failed: {rep}")
        check_target(t, "symlink")
        print(f"inject-root: ok: symlink: {libc} an absolute symlink, resolved in the target's root: "
              f"trimmed in {took:.2f} s")
        t.stop()
    finally:
        t.kill()


def fifo_case(tmp):
    t, libc, stage = start(tmp, "fifo")
    try:
        os.mkfifo(os.path.join(stage, "libc.so.6"))
        in_namespace(t.pid, f"mount --bind {stage} {os.path.dirname(libc)}")
        code, rep, took = trim(t.pid)
        if code == 0 or "not a regular file" not in (rep.get("error") or ""):
            fail(f"fifo: a FIFO as libc was not refused: {rep}")
        check_target(t, "fifo")
        print(f"inject-root: ok: fifo: refused in {took:.2f} s: {rep['error']}")
        t.stop()
    finally:
        t.kill()


def truncate_case(tmp):
    t, libc, stage = start(tmp, "truncate")
    stop = threading.Event()
    rounds = [0]
    try:
        copy = os.path.join(stage, "libc.so.6")
        shutil.copy(libc, copy)
        with open(libc, "rb") as f:
            data = f.read()
        in_namespace(t.pid, f"mount --bind {stage} {os.path.dirname(libc)}")

        def churn():
            # Whole for a random while (long enough for a reader to check it and start on it),
            # then cut short under the reader.
            rng = random.Random(20261201)
            with open(copy, "r+b", buffering=0) as f:
                while not stop.is_set():
                    time.sleep(rng.random() * 0.002)
                    f.truncate(4096)
                    f.seek(0)
                    f.write(data)
                    rounds[0] += 1

        th = threading.Thread(target=churn)
        th.start()
        ok = refused = 0
        for i in range(TRUNCATE_TRIMS):
            code, rep, took = trim(t.pid, dry_run=True)
            if code < 0 or (code != 0 and not rep):
                fail(f"truncate: memgov died (exit {code}) at trim {i} while libc was truncated under it")
            ok += code == 0
            refused += code != 0
        stop.set()
        th.join()
        check_target(t, "truncate")
        print(f"inject-root: ok: truncate: {TRUNCATE_TRIMS} plans while libc was truncated {rounds[0]} times: "
              f"{ok} done, {refused} refused, memgov never died")
        t.stop()
    finally:
        stop.set()
        t.kill()


IN_OPEN = 0x20


class OpenWatch:
    """inotify IN_OPEN on one file: whether anyone opened it (an O_PATH descriptor is no open)."""

    def __init__(self, path):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or self.libc.inotify_add_watch(self.fd, os.fsencode(path), IN_OPEN) < 0:
            fail(f"inotify on {path}: {os.strerror(ctypes.get_errno())}")

    def opened(self):
        try:
            return len(os.read(self.fd, 4096)) > 0
        except BlockingIOError:
            return False

    def close(self):
        os.close(self.fd)


def device_node(path):
    """/dev/null's numbers: an open by mistake does nothing, and shows."""
    os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    watch = OpenWatch(path)
    return watch


def opened_at_all(watch, path):
    """The positive control: our own open of the node is seen (the file system lets devices open)."""
    os.close(os.open(path, os.O_RDONLY))
    if not watch.opened():
        fail(f"inotify did not see an open of {path}: the check proves nothing here")


def device_case(tmp):
    t, libc, stage = start(tmp, "device")
    try:
        node = os.path.join(stage, "libc.so.6")
        watch = device_node(node)
        in_namespace(t.pid, f"mount --bind {stage} {os.path.dirname(libc)}")
        code, rep, took = trim(t.pid)
        if code == 0 or "not a regular file" not in (rep.get("error") or ""):
            fail(f"device: a character device as libc was not refused: {rep}")
        if watch.opened():
            fail("device: memgov opened the device node named like libc (as root) before refusing it")
        opened_at_all(watch, node)
        watch.close()
        check_target(t, "device")
        print(f"inject-root: ok: device: refused in {took:.2f} s without opening it: {rep['error']}")
        t.stop()
    finally:
        t.kill()


def newline_case(tmp):
    mapped = os.path.join(tmp, "lib\nx")        # what the target maps its libc from
    decoy = os.path.join(tmp, "lib\\012x")      # the path as /proc/PID/maps prints it
    os.mkdir(mapped)
    os.mkdir(decoy)
    shutil.copy("/lib/x86_64-linux-gnu/libc.so.6" if os.path.exists("/lib/x86_64-linux-gnu/libc.so.6")
                else libc_of(os.getpid()), os.path.join(mapped, "libc.so.6"))
    node = os.path.join(decoy, "libc.so.6")
    watch = device_node(node)
    env = dict(os.environ, LD_LIBRARY_PATH=mapped)
    t = Target(BINARY, 300, 400, env=env)
    try:
        if libc_of(t.pid) != os.path.join(decoy, "libc.so.6"):
            fail(f"newline: the target's libc is mapped as {libc_of(t.pid)!r}, expected the escaped name")
        code, rep, took = trim(t.pid)
        if code != 0 or not rep.get("ok"):
            fail(f"newline: the trim of a libc mapped from a name with a newline failed as root: {rep}")
        check_target(t, "newline")
        # Without the capability map_files needs: refused, and said why.
        args = ["setpriv", "--inh-caps=-all", "--bounding-set=-sys_admin,-checkpoint_restore", "--",
                MEMGOV, "trim", "--pid", str(t.pid), "--method", "ptrace", "--json"]
        r = subprocess.run(args, capture_output=True, text=True, timeout=BOUND)
        rep2 = json.loads(r.stdout) if r.stdout.strip() else {}
        if r.returncode == 0 or "map_files" not in (rep2.get("error") or ""):
            fail(f"newline: without CAP_SYS_ADMIN the trim was not refused with the reason: {r.stdout} {r.stderr}")
        if watch.opened():
            fail("newline: memgov opened the device at the path as /proc/PID/maps prints it")
        opened_at_all(watch, node)
        watch.close()
        check_target(t, "newline")
        print(f"inject-root: ok: newline: libc mapped from a name with a newline: trimmed through map_files in "
              f"{took:.2f} s; without the capability: {rep2['error']}; the decoy never opened")
        t.stop()
    finally:
        t.kill()


def escapes_case(tmp):
    name = "lib\x1b[2J\x07\u009b31mx"  # no ':' or ';': they part LD_LIBRARY_PATH
    mapped = os.path.join(tmp, name)
    os.mkdir(mapped)
    shutil.copy(libc_of(os.getpid()), os.path.join(mapped, "libc.so.6"))
    stage = os.path.join(tmp, "escapes-stage")
    os.mkdir(stage)
    os.mkfifo(os.path.join(stage, "libc.so.6"))
    t = Target(BINARY, 300, 400, env=dict(os.environ, LD_LIBRARY_PATH=mapped),
               prefix=["unshare", "-m", "--propagation", "private"])
    try:
        in_namespace(t.pid, f"mount --bind {stage} '{mapped}'")
        for mode in ([], ["--json"]):
            r = subprocess.run([MEMGOV, "trim", "--pid", str(t.pid), "--method", "ptrace"] + mode,
                               capture_output=True, timeout=BOUND)
            out = r.stdout + r.stderr
            if r.returncode == 0 or b"not a regular file" not in out:
                fail(f"escapes: the trim did not fail on the FIFO as expected: {out!r}")
            if any(c in out for c in (b"\x1b", b"\x07", b"\xc2\x9b")):
                fail(f"escapes: controls of the library's path reached the terminal ({' '.join(mode) or 'text'}): "
                     f"{out!r}")
            if b"lib\\x1b[2J\\x07\\xc2\\x9b31mx" not in out.replace(b"\\\\", b"\\"):
                fail(f"escapes: the path is not shown with its controls as \\xNN: {out!r}")
        check_target(t, "escapes")
        print("inject-root: ok: escapes: a library path with ESC, BEL and CSI in it shown as \\xNN by memgov trim, "
              "as text and as JSON")
        t.stop()
    finally:
        t.kill()


def main():
    if os.geteuid() != 0:
        fail("needs root (mount namespaces, ptrace)")
    tmp = tempfile.mkdtemp(prefix="memgov-inject-root-")
    try:
        cases = {"symlink": symlink_case, "fifo": fifo_case, "truncate": truncate_case, "device": device_case,
                 "newline": newline_case,
                 "escapes": escapes_case}
        for name in sys.argv[3:] or cases:
            cases[name](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
