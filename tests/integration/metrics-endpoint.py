#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The Prometheus endpoint and the node_exporter textfile, with a real HTTP client against the
daemon on a fake cgroup and proc tree: the exposition is well-formed (tests/integration/
exposition.py), its values are those of the tree and of the decisions taken, other paths and
methods are refused, the textfile holds the same families and is readable by others, a reload
moves the endpoint to a new port, and a port in use is a clear startup error.
usage: metrics-endpoint.py MEMGOV SOURCE_ROOT"""
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exposition  # noqa: E402
from fake_tree import Checks, MB, PID, inactive_file, make_tree, set_current  # noqa: E402

MEMGOV, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data")
DAEMONS = []


CHECKS = Checks("metrics-endpoint")
fail, ok, wait_for = CHECKS.fail, CHECKS.ok, CHECKS.wait_for


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, path="/metrics", method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def write_policy(path, port, textfile):
    base = open(os.path.join(SRC, "tests", "vm", "policies", "fast.ini")).read()
    with open(path, "w") as f:
        f.write(base + f"\n[metrics]\nlisten = 127.0.0.1:{port}\ntextfile = {textfile}\n")
    os.chmod(path, 0o644)


def main():
    tmp = tempfile.mkdtemp(prefix="memgov-metrics-")
    try:
        run(tmp)
    finally:
        for p in DAEMONS:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    current = 100 * MB
    cg, proc = make_tree(DATA, tmp, current)
    port, textfile, policy = free_port(), os.path.join(tmp, "memgov.prom"), os.path.join(tmp, "policy.ini")
    write_policy(policy, port, textfile)
    log_path = os.path.join(tmp, "memgov.log")
    cmd = [MEMGOV, "run", "--dry-run", "--cgroup-root", cg, "--proc-root", proc, "--cgroup", "/db", "--policy", policy,
           "--socket", "", "--state-dir", ""]
    d = subprocess.Popen(cmd, stderr=open(log_path, "w"))
    DAEMONS.append(d)

    def logged():
        return open(log_path).read()

    wait_for(lambda: f"serving http://127.0.0.1:{port}/metrics" in logged(), "the endpoint")
    for _ in range(30):
        current += 4 * MB
        set_current(cg, current)
        time.sleep(0.2)
    wait_for(lambda: "would trim" in logged(), "a trim decision")
    wait_for(lambda: "trim: would call" in logged() or "would trim" in logged(), "the trim result")
    time.sleep(0.5)

    status, ctype, text = scrape(port)
    if status != 200 or ctype != "text/plain; version=0.0.4; charset=utf-8":
        fail(f"GET /metrics: {status} {ctype}")
    try:
        fams = exposition.parse(text)
    except ValueError as e:
        fail(f"the exposition is malformed: {e}\n{text}")
    ok(f"GET /metrics: 200, {len(fams)} well-formed families, {len(text)} bytes")

    for name in ("memgov_working_set_bytes", "memgov_memory_current_bytes", "memgov_memory_high_bytes",
                 "memgov_memory_max_bytes", "memgov_budget_bytes", "memgov_eta_seconds", "memgov_level",
                 "memgov_pressure_avg10_ratio", "memgov_memory_events_total", "memgov_actions_total",
                 "memgov_reclaimed_bytes_total", "memgov_injection_stop_seconds"):
        if name not in fams:
            fail(f"{name} is missing:\n{text}")
        if any(s[1].get("target") != "cgroup-db" for s in fams[name]["samples"]):
            fail(f"{name}: a series without target=\"cgroup-db\"")
    v = lambda fam, **kw: exposition.value(fams, fam, **kw)  # noqa: E731
    if v("memgov_memory_max_bytes") != 256 * MB:
        fail(f"memory.max {v('memgov_memory_max_bytes')}")
    if v("memgov_memory_high_bytes") != float("inf"):
        fail(f"memory.high {v('memgov_memory_high_bytes')} (the tree says max)")
    cur = v("memgov_memory_current_bytes")
    if cur != current:
        fail(f"memory.current {cur}, the tree holds {current}")
    if v("memgov_working_set_bytes") != current - inactive_file(DATA):
        fail(f"working set {v('memgov_working_set_bytes')} != memory.current - inactive_file")
    if v("memgov_budget_bytes") != 256 * MB or v("memgov_dry_run") != 1 or v("memgov_target_up") != 1:
        fail("budget, dry_run or target_up")
    levels = [s for s in fams["memgov_level"]["samples"] if s[2] == 1]
    names = [s[1]["level"] for s in fams["memgov_level"]["samples"]]
    # Every level, in the ladder's order, as the policy's table of levels names them.
    table = re.findall(r'^        \[LEVEL_\w+\] = "(\w+)",', open(os.path.join(SRC, "src", "core", "policy.c")).read(), re.M)
    if len(table) < 7 or len(levels) != 1 or names != table:
        fail(f"memgov_level is not a state set with one level on: {fams['memgov_level']['samples']}")
    trims = v("memgov_actions_total", action="trim", result="dry_run")
    if trims < 1 or v("memgov_actions_total", action="trim", result="done") != 0:
        fail(f"trim actions: dry_run {trims}")
    if v("memgov_reclaimed_bytes_total", action="trim") != 0:
        fail("a dry run reclaimed bytes")
    if v("memgov_samples_total") < 10 or v("memgov_decisions_total", kind="trim") < 1:
        fail("samples or decisions")
    if v("memgov_injection_stop_seconds", name="memgov_injection_stop_seconds_count") != 0:
        fail("a dry run counted an injection")
    ok(f"values: memory.current {cur / MB:.0f}M, working set, budget 256M, memory.high +Inf, "
       f"level {levels[0][1]['level']}, {trims:.0f} dry-run trim(s), nothing reclaimed")

    status, _, _ = scrape(port, "/nothing")
    if status != 404:
        fail(f"GET /nothing: {status}")
    status, _, _ = scrape(port, "/metrics", "POST")
    if status != 405:
        fail(f"POST /metrics: {status}")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("HEAD", "/metrics")
    r = conn.getresponse()
    if r.status != 200 or r.read() != b"":
        fail(f"HEAD /metrics: {r.status}")
    conn.close()
    ok("GET /nothing: 404, POST: 405, HEAD: 200 without a body")

    # One client holding idle connections (the endpoint has no authentication) takes at most a
    # few of them: the scraper, from another address, is still answered at once.
    idle = []
    for _ in range(20):
        c = socket.socket()
        c.bind(("127.0.0.3", 0))
        c.settimeout(2)
        try:
            c.connect(("127.0.0.1", port))
        except OSError:
            c.close()
            continue
        idle.append(c)
    scraper = http.client.HTTPConnection("127.0.0.1", port, timeout=5, source_address=("127.0.0.2", 0))
    t0 = time.monotonic()
    try:
        scraper.request("GET", "/metrics")
        status = scraper.getresponse().status
    except OSError as e:
        status = f"{type(e).__name__}"
    took = time.monotonic() - t0
    scraper.close()
    for c in idle:
        c.close()
    if status != 200 or took > 2:
        fail(f"with 20 idle connections from 127.0.0.3, a scrape from 127.0.0.2: {status} after {took:.1f}s")
    ok(f"20 idle connections from one address: a scrape from another answered in {took * 1000:.0f} ms")

    # Clients that trickle a byte every 2 s (each well within an inactivity timeout) from four
    # addresses, four each: every slot of the endpoint taken. Each connection's whole life is
    # bounded: once they are ended, a scrape is answered.
    trickle = []
    for a in range(4, 8):
        for _ in range(4):
            c = socket.socket()
            c.bind((f"127.0.0.{a}", 0))
            c.settimeout(2)
            c.connect(("127.0.0.1", port))
            c.sendall(b"GET /metrics HTTP/1.1\r\n")
            trickle.append(c)
    t0 = time.monotonic()
    ended = set()
    while time.monotonic() - t0 < 20 and len(ended) < len(trickle):
        for i, c in enumerate(trickle):
            if i in ended:
                continue
            try:
                c.sendall(b"X")
            except OSError:
                ended.add(i)
        time.sleep(2)
    took = time.monotonic() - t0
    if len(ended) < len(trickle):
        fail(f"{len(trickle) - len(ended)} of {len(trickle)} trickling connections still open after {took:.0f}s")
    status = scrape(port, "/metrics")[0]
    for c in trickle:
        c.close()
    if status != 200:
        fail(f"after the trickling connections: a scrape got {status}")
    ok(f"16 connections trickling a byte every 2 s from four addresses: all ended within {took:.0f}s, "
       f"then a scrape answered")

    st = os.stat(textfile)
    if st.st_mode & 0o777 != 0o644:
        fail(f"textfile mode {oct(st.st_mode & 0o777)}")
    tfams = exposition.parse(open(textfile).read())
    if set(tfams) != set(fams):
        fail(f"textfile families differ: {set(fams) ^ set(tfams)}")
    if os.path.exists(textfile + ".tmp"):
        fail("the temporary textfile was left behind")
    ok(f"textfile: mode 0644, the same {len(tfams)} families")

    # A reload moving the endpoint.
    port2 = free_port()
    write_policy(policy, port2, textfile)
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: f"serving http://127.0.0.1:{port2}/metrics" in logged(), "the endpoint on the new port")
    if scrape(port2)[0] != 200:
        fail("nothing on the new port")
    try:
        scrape(port)
        fail("the old port still answers")
    except (ConnectionRefusedError, urllib.error.URLError):
        pass
    ok(f"SIGHUP: moved from port {port} to {port2}")

    # The port in use: a second daemon says so and exits.
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if r.returncode == 0 or f"cannot listen on 127.0.0.1:{port2}: Address already in use" not in r.stderr:
        fail(f"a second daemon on the same port: {r.returncode} {r.stderr}")
    ok("a port in use is a startup error: 'cannot listen on 127.0.0.1:PORT: Address already in use'")

    d.send_signal(signal.SIGTERM)
    if d.wait(timeout=5) != 0:
        fail("exit status after SIGTERM")
    if PID != 4242:
        fail("fake tree")


if __name__ == "__main__":
    main()
