#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The outcome benchmark's figures, on runs made up here (the benchmark itself needs the VM and
hours, and does not run in CI): the time a server did not answer counts a failed probe until the
next one starts (a probe with no answer waits out its 2 s timeout), the report takes medians per
scenario and governor, counts the connections refused with error 1040 in the clients' logs (or takes
the count a kept pass has in result.env), checks the guest's count of earlyoom's actions,
marks an unfinished run's time not answering as a lower bound and draws the chart; what
outcome-keep.sh keeps of a pass; and one run's logs as one timeline (outcome-timeline.py).
usage: outcome-report.py SOURCE_ROOT"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from md_tables import tables  # noqa: E402

SRC = sys.argv[1]
AWK = os.path.join(SRC, "bench", "outcome-down.awk")
REPORT = os.path.join(SRC, "bench", "outcome-report.py")


def fail(msg):
    print(f"outcome-report: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def down(lines):
    with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
        f.write("".join(lines))
        f.flush()
        return float(subprocess.run(["awk", "-f", AWK, f.name], check=True, capture_output=True,
                                    text=True).stdout)


# Up, then three probes without an answer 2.5 s apart, then up again: 7.5 s, not 3 x 0.5 s.
got = down(["10.0 up\n", "10.5 down\n", "13.0 down\n", "15.5 down\n", "18.0 up\n", "18.5 up\n"])
if abs(got - 7.5) > 1e-9:
    fail(f"three failed probes 2.5 s apart counted {got} s down, not 7.5")
# A log that ends down: the last probe counts half a second; never down: 0.
if down(["1.0 up\n", "1.5 down\n", "4.0 down\n"]) != 3.0 or down(["1.0 up\n", "1.5 up\n"]) != 0.0:
    fail("a log ending down, or never down, counted wrong")
print("outcome-report: ok: time not answering from the probes' timestamps")


def run(out, scenario, governor, n, env, logs=None):
    d = os.path.join(out, scenario, governor, f"run-{n}")
    os.makedirs(d)
    with open(os.path.join(d, "result.env"), "w") as f:
        f.write(f"scenario={scenario}\ngovernor={governor}\n")
        for k, v in env.items():
            f.write(f"{k}={v}\n")
    for name, text in (logs or {}).items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)


refusal = "FATAL: unable to connect to MySQL server on socket '/run/mysqld/mysqld.sock', aborting...\n" \
          "FATAL: error 1040: Too many connections\n"
with tempfile.TemporaryDirectory() as out:
    base = {"oom_kills": 0, "sigkills": 0, "graceful_restarts": 0, "crash_recoveries": 0, "client_errors": 0,
            "client_restarts": 0, "p50_ms": 10, "p99_ms": 100, "governor_actions": 0}
    for n, (tx, down_s, kills) in enumerate([(100, 10, 1), (300, 30, 2), (200, 20, 1)], 1):
        run(out, "storm", "none", n, dict(base, transactions=tx, down_seconds=down_s, oom_kills=kills,
                                          peak_bytes=384 << 20))
    for n, tx in enumerate([400, 500, 600], 1):
        run(out, "storm", "memgov", n, dict(base, transactions=tx, down_seconds=5, graceful_restarts=1,
                                            peak_bytes=390 << 20, storm_queries=10 * n),
            {"sb.storm-4.log": refusal * n, "sb.storm-5.log": refusal})
    run(out, "linear", "none", 1, dict(base, transactions=50, down_seconds=0, peak_bytes=200 << 20, storm_queries=0))
    # The guest counts earlyoom's kills (not the settings line it prints at start): the report
    # takes the count from result.env, whatever the log says. These runs are as outcome-keep.sh
    # keeps them: the refusals counted in result.env, no clients' logs.
    banner = "vm earlyoom[220]: sending SIGTERM when mem <= 10.00% and swap <= 10.00%,\n"
    kill = 'vm earlyoom[220]: sending SIGTERM to process 243 uid 103 "mariadbd": badness 900, VmRSS 360 MiB\n'
    for n in (1, 2, 3):
        run(out, "storm", "earlyoom", n, dict(base, transactions=100, down_seconds=9, peak_bytes=384 << 20,
                                              governor_actions=n - 1, refused=n), {"governor.log": banner * 5})
    # The guest's own pattern for earlyoom's actions: its kills, not its settings line.
    guest = open(os.path.join(SRC, "bench", "outcome-guest.sh")).read()
    pattern = re.search(r"^earlyoom\) acted=\$\(grep -cE '([^']+)'", guest, re.M)
    if not pattern:
        fail("outcome-guest.sh has no earlyoom count")
    counted = subprocess.run(["grep", "-cE", pattern.group(1)], input=banner + kill + kill + banner,
                             capture_output=True, text=True).stdout.strip()
    if counted != "2":
        fail(f"the guest counts {counted} earlyoom actions in its settings and two kills, not 2")
    # Unfinished: the VM timed out with the server stuck; only the probe's and memory's figures.
    run(out, "storm", "oomd", 1, {"unfinished": 1, "down_seconds": 600, "peak_bytes": 384 << 20})
    r = subprocess.run([sys.executable, REPORT, out, "earlyoom 1.7", "384M", "10", "3"], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"the report failed: {r.stderr}")
    report = tables(r.stdout)
    rows = report.get("storm", {})
    heads = {scenario: list(next(iter(t.values()))) for scenario, t in report.items()}
    # The storm's own queries: a column of the storm's table only.
    if "storm queries" not in heads.get("storm", []) or "storm queries" in heads.get("linear", ["storm queries"]):
        fail(f"the storm queries column is not the storm's alone\n{r.stdout}")
    want = {
        ("none", "OOM kills"): "1", ("none", "transactions"): "200", ("none", "s not answering"): "20",
        ("none", "worst run's s not answering"): "30", ("none", "runs OOM-killed"): "3",
        ("memgov", "runs OOM-killed"): "0", ("memgov", "worst run's s not answering"): "5",
        ("memgov", "transactions"): "500", ("memgov", "tx vs none"): "2.50", ("memgov", "graceful restarts"): "1",
        ("memgov", "connections refused (1040)"): "3", ("none", "connections refused (1040)"): "0",
        ("oomd", "unfinished"): "1", ("oomd", "s not answering"): "≥600", ("memgov", "peak MiB"): "390",
        ("memgov", "storm queries"): "20", ("earlyoom", "actions"): "1",
        ("earlyoom", "connections refused (1040)"): "2",
    }
    for (g, col), v in want.items():
        if rows.get(g, {}).get(col) != v:
            fail(f"{g} {col}: {rows.get(g, {}).get(col)!r}, not {v!r}\n{r.stdout}")
    svg = open(os.path.join(out, "outcome.svg")).read()
    # The background, seven bars for the storm (oomd has no OOM kill figure), two for the linear
    # scenario, and six legend keys.
    if svg.count("<rect") != 1 + 7 + 2 + 6 or "seconds not answering" not in svg:
        fail("the chart lacks its bars or titles")
    if open(os.path.join(out, "outcome.md")).read().strip() != r.stdout.strip():
        fail("outcome.md differs from what the report printed")
    # A kept pass: each run's figures, the refusals counted from the clients' logs (memgov's
    # runs: 1 + 1, 2 + 1, 3 + 1), and a count already in result.env left alone (earlyoom's).
    with tempfile.TemporaryDirectory() as kept:
        k = subprocess.run(["bash", os.path.join(SRC, "bench", "outcome-keep.sh"), out, kept],
                           capture_output=True, text=True)
        if k.returncode != 0:
            fail(f"outcome-keep.sh failed: {k.stderr}")
        for g, n, want_refused in (("memgov", 1, "2"), ("memgov", 3, "4"), ("earlyoom", 2, "2")):
            env = open(os.path.join(kept, "storm", g, f"run-{n}", "result.env")).read()
            got = re.findall(r"^refused=(.*)$", env, re.M)
            if got != [want_refused]:
                fail(f"outcome-keep.sh kept {g} run {n} with refused {got}, not [{want_refused!r}]")
            if os.path.exists(os.path.join(kept, "storm", g, f"run-{n}", "sb.storm-4.log")):
                fail("outcome-keep.sh kept a client's log")
print("outcome-report: ok: medians, the ratio to none, refusals, an unfinished run, the chart, a kept pass")

# One run as one timeline (outcome-timeline.py): the probe's changes only, memory.current at
# each change of 2% of the limit, the journals' lines on the same clock, in order.
TIMELINE = os.path.join(SRC, "bench", "outcome-timeline.py")
with tempfile.TemporaryDirectory() as d:
    logs = {
        "probe.log": "10.0 up\n10.5 up\n11.0 down\n13.5 down\n16.0 up\n",
        "memory.log": "10.2 100000000 41 0\n11.2 101000000 41 0\n12.2 200000000 41 0\n",
        "governor.log": "[   12.500000] vm memgov[7]: restart: graceful restart (1 of at most 1 in 24h)\n"
                        "-- Boot 0123 --\n",
        "mariadb.journal": "[   14.000000] vm mariadbd[90]: 2026-12-05 10:00:00 0 [Note] /usr/sbin/mariadbd: "
                           "ready for connections.\n"
                           "[   13.000000] vm mariadbd[41]: 2026-12-05 10:00:00 0 [Note] InnoDB: Buffer pool(s) "
                           "load completed\n",
    }
    for name, text in logs.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    r = subprocess.run([sys.executable, TIMELINE, d, "--max", str(400 << 20)], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"outcome-timeline.py failed: {r.stderr}")
    got = [(float(l.split()[0]), l.split()[1]) for l in r.stdout.splitlines()]
    want = [(10.0, "probe"), (10.2, "memory"), (11.0, "probe"), (12.2, "memory"), (12.5, "governor"),
            (14.0, "server"), (16.0, "probe")]
    if got != want:
        fail(f"outcome-timeline.py gave {got}, not {want}\n{r.stdout}")
print("outcome-report: ok: a run's timeline")
