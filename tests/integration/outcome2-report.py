#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/outcome2's figures, on runs made up here (the benchmark needs the VM and hours, and
does not run in CI): the probe's three states over time, the clients' transactions, errors,
refusals and restarts, the server's kills and their recovery from its journal, what a
governor ended, and the report's judgement: medians with min–max, "better"/"worse" than no
governor only where the ranges do not overlap.
usage: outcome2-report.py SOURCE_ROOT"""
import os
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
REPORT = os.path.join(SRC, "bench", "outcome2-report.py")
SERVER = os.path.join(SRC, "bench", "outcome2-server.py")


def fail(msg):
    print(f"outcome2-report: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def env(text):
    return dict(line.split("=", 1) for line in text.strip().splitlines())


def write(d, name, text):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


SB = """[ 1s ] thds: 8 tps: 100.00 qps: 2000.00 (r/w/o: 1400.00/400.00/200.00) lat (ms,99%): 20.00 err/s: 0.00 reconn/s: 0.00
[ 2s ] thds: 8 tps: 50.00 qps: 1000.00 (r/w/o: 700.00/200.00/100.00) lat (ms,99%): 80.00 err/s: 3.00 reconn/s: 2.00
FATAL: error 1040: Too many connections
"""

with tempfile.TemporaryDirectory() as tmp:
    # ---- one run's clients.
    d = os.path.join(tmp, "clients")
    write(d, "sb.normal.log", SB + "CLIENT RESTART\n")
    write(d, "sb.storm-1.log", "[ 1s ] thds: 25 tps: 0.00 qps: 40.00 (r/w/o: 40.00/0.00/0.00) lat (ms,99%): 900.00 err/s: 1.00 reconn/s: 0.00\n"
          "FATAL: error 1040: Too many connections\nCLIENT RESTART\n")
    write(d, "growth.log", "growth calls=10 errors=2 reconnects=2 bytes=100\n")
    # Up, refused for 2 s, down for 5 s (two probes waiting out their timeout), up.
    write(d, "probe.log", "10.0 up\n10.5 refused\n11.5 refused\n12.5 down\n15.0 down\n17.5 up\n18.0 up\n")
    c = env(subprocess.run([sys.executable, REPORT, "--clients", d], check=True, capture_output=True, text=True).stdout)
    want = {"transactions": "150", "storm_queries": "40", "client_errors": "6", "reconnects": "4",
            "client_restarts": "2", "refused": "2", "down_seconds": "5.0", "refused_seconds": "2.0",
            "probes_down": "2", "probes_refused": "2",
            # The normal load's 3 errors, refusal and restart, and the growing sessions' 2 errors:
            # the storm's error, refusal and restart are not the ordinary load's.
            "ordinary_failures": "7"}
    for k, v in want.items():
        if c.get(k) != v:
            fail(f"clients: {k} is {c.get(k)}, expected {v} (all: {c})")
    if float(c["p99_ms"]) != 80.0:
        fail(f"clients: p99 {c['p99_ms']}, expected the report lines' 80 ms without a histogram")
    print("outcome2-report: ok: a run's clients (transactions, errors, refusals, restarts, the probe's states)")

    # ---- one run's server: a kill, its recovery, what memgov did.
    d = os.path.join(tmp, "server")
    write(d, "server.journal", "\n".join([
        "[   20.000000] guest mariadbd[300]: 2026-12-06 10:00:00 0 [Note] mariadbd: ready for connections.",
        "[  100.000000] guest systemd[1]: mariadb.service: Main process exited, code=killed, status=9/KILL",
        "[  103.000000] guest mariadbd[400]: 2026-12-06 10:01:23 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=123",
        "[  105.000000] guest mariadbd[400]: 2026-12-06 10:01:25 0 [Note] InnoDB: To recover: 500 pages",
        "[  109.500000] guest mariadbd[400]: 2026-12-06 10:01:29 0 [Note] InnoDB: Crash recovery finished.",
        "[  112.000000] guest mariadbd[400]: 2026-12-06 10:01:32 0 [Note] mariadbd: ready for connections.",
    ]) + "\n")
    write(d, "kernel.log", "[   99.900000] guest kernel: oom-kill:constraint=CONSTRAINT_MEMCG,...\n")
    write(d, "governor.log", "\n".join([
        "[   60.000000] guest memgov[200]: set max_connections 400 -> 42 (admission)",
        "[   70.000000] guest memgov[200]: -> reset 3 of 5 session(s): a@b",
        "[   80.000000] guest memgov[200]: set memory.max 536870912 -> 563714457 (admission)",
        "[   90.000000] guest memgov[200]: -> lowered max_connections 400 -> 13 (3 client(s) before the storm on "
        "the process before the restart, plus 10); ended 35 of the 47 client(s) in, the newest first (#23 to #60)",
    ]) + "\n")
    write(d, "memory.log", "1.0 200000000 300 900000\n2.0 560000000 300 500000\n3.0 300000000 400 800000\n")
    write(d, "rest.env", "rest_bytes=200000000\ndirty_pages=5000\n")
    s = env(subprocess.run([sys.executable, SERVER, d, "memgov", str(512 << 20), "container"], check=True,
                           capture_output=True, text=True).stdout)
    want = {"oom_kills": "1", "sigkills": "1", "crash_recoveries": "1", "recovery_seconds": "12.0",
            "engine_recovery_seconds": "6.5", "starts": "2", "peak_bytes": "560000000",
            "over_limit_bytes": str(560000000 - (512 << 20)), "mem_available_min": str(500000 * 1024),
            "sessions_ended": "38", "admission_lowerings": "1", "limit_raises": "1", "rest_bytes": "200000000", "dirty_pages": "5000"}
    for k, v in want.items():
        if s.get(k) != v:
            fail(f"server: {k} is {s.get(k)}, expected {v} (all: {s})")
    s = env(subprocess.run([sys.executable, SERVER, d, "memgov", str(512 << 20), "host"], check=True,
                           capture_output=True, text=True).stdout)
    if s["over_limit_bytes"] != "0":
        fail("server: over the limit counted on the host setting, where no memory.max binds")
    print("outcome2-report: ok: a run's server (a kill and its recovery, what memgov ended, lowered, raised)")

    # ---- the report: ranges apart, ranges overlapping.
    out = os.path.join(tmp, "pass")

    def run(gov, n, **fig):
        base = {"oom_kills": 0, "down_seconds": 1.0, "transactions": 1000, "p99_ms": 50, "client_errors": 0,
                "refused": 0, "client_restarts": 0, "peak_bytes": 400 << 20}
        base.update(fig)
        write(os.path.join(out, "mariadb-10.11", "container", "storm", gov, f"run-{n}"), "result.env",
              "".join(f"{k}={v}\n" for k, v in base.items()))
    for n, tx in enumerate([1000, 1100, 900, 1050, 950], 1):
        run("none", n, transactions=tx, oom_kills=1, down_seconds=30 + n)
        run("control", n, transactions=tx + 20, oom_kills=1, down_seconds=29 + n)
        # memgov: fewer transactions but within none's range; never down long; more errors.
        run("memgov", n, transactions=tx - 10, down_seconds=1 + n / 10, client_errors=5 + n)
    run("memgov", 6, transactions=1000, down_seconds=1.0, client_errors=6, unfinished=1)
    # A control run whose storm never started (no storm query answered): left out, and said. A
    # memgov run whose storm got no query answered because memgov refused it is a measurement.
    run("control", 6, transactions=5000, down_seconds=0.0, storm_queries=0, scenario="storm")
    run("memgov", 7, transactions=1000, down_seconds=1.0, client_errors=6, storm_queries=0, refused=40,
        governor_actions=3, scenario="storm")
    run("none", 6, transactions=1000, down_seconds=33, oom_kills=1, storm_queries=149, scenario="storm")
    # Killed as the run ended: no recovery in its logs (the other runs' kills are made up without
    # sigkills, so this is the one).
    run("oomd", 1, transactions=1000, down_seconds=200, oom_kills=1, sigkills=1, crash_recoveries=0)
    # One run, apart from none's range on every figure: one run is no range, nothing is judged;
    # and it did no transaction: no latency (not 0 ms, which would read as the best).
    run("manual", 1, transactions=0, p99_ms=0, down_seconds=250)
    r = subprocess.run([sys.executable, REPORT, out, "a note"], check=True, capture_output=True, text=True).stdout
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in r.splitlines() if line.startswith("| ") and not line.startswith("| figure")}
    head = next(line for line in r.splitlines() if line.startswith("| figure"))
    if "Left out: control 1 run(s) where the storm did not take place" not in r:
        fail("a run without its storm is not said to be left out")
    void = os.path.join(out, "mariadb-10.11", "container", "storm", "control", "run-6", "result.env")
    if subprocess.run([sys.executable, REPORT, "--void", void]).returncode != 0:
        fail("--void does not name a run without its storm (outcome2.sh would keep it on --resume)")
    for other in ("control/run-1", "memgov/run-7", "none/run-6"):
        if subprocess.run([sys.executable, REPORT, "--void", void.replace("control/run-6", other)]).returncode != 1:
            fail(f"--void names {other}, a run that had its storm or one kept out by its governor")
    if "Killed with no recovery before the run ended: oomd 1 run(s);" not in r:
        fail("a run killed as it ended is not said to leave its kill to ready uncounted")
    if "none (6)" not in head or "control (5)" not in head or "memgov (7)" not in head:
        fail(f"the heading does not count the runs: {head}")
    if not rows["s not answering"][2].endswith("(better)") or "(" not in rows["s not answering"][2][:-9]:
        fail(f"memgov's time not answering, apart from none's and lower, is not called better: {rows['s not answering']}")
    if "better" in rows["transactions"][2] or "worse" in rows["transactions"][2]:
        fail(f"transactions whose ranges overlap are judged: {rows['transactions']}")
    if not rows["client errors"][2].endswith("(worse)"):
        fail(f"memgov's errors, apart and higher, are not called worse: {rows['client errors']}")
    if "better" in rows["OOM kills"][1] or "worse" in rows["OOM kills"][1]:
        fail(f"the control, as none, is judged on OOM kills: {rows['OOM kills']}")
    if not rows["OOM kills"][2].endswith("(better)"):
        fail(f"no kill against one each run is not better: {rows['OOM kills']}")
    manual = head.split("|")[1:-1].index(" manual (1) ") - 1
    if any(w in rows[k][manual] for k in ("s not answering", "transactions") for w in ("better", "worse")):
        fail(f"a governor of one run is judged: {rows['s not answering'][manual]}, {rows['transactions'][manual]}")
    if rows["p99 ms"][manual] != "–":
        fail(f"a run with no transaction has a p99: {rows['p99 ms'][manual]}")
    if rows["s not answering"][0] != "33 (31–35)":
        fail(f"none's median and range: {rows['s not answering'][0]}, expected 33 (31–35)")
    if "1 run(s) unfinished" not in r:
        fail("an unfinished run is not said")
    if not os.path.exists(os.path.join(out, "outcome2.md")) or "a note" not in open(os.path.join(out, "outcome2.md")).read():
        fail("outcome2.md is missing or without the note")
    if "**memgov**" not in r or "**earlyoom**" in r:
        fail("what each governor watches: not said for the governors of the pass only")
    print("outcome2-report: ok: medians with ranges, judged only where the ranges are apart, the control not judged better")
