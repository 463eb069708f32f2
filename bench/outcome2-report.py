#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/outcome2's figures and report.

  outcome2-report.py --clients RUNDIR   one run's clients (KEY=VALUE lines, for clients.env)
  outcome2-report.py OUT [NOTE]         the pass in OUT: OUT/outcome2.md and a table per cell on
                                        standard output

A pass is OUT/SERVER/SETTING/SCENARIO/GOVERNOR/run-N/result.env. Per cell (server, setting,
scenario) and governor: the median of each figure with its minimum and maximum over the runs.
A governor is called better or worse than no governor on a figure only where the two ranges do
not overlap ("~" otherwise); `control` is a second set of runs without a governor, interleaved
with the others: how far apart two identical configurations land (the noise).
"""
import glob
import os
import re
import statistics
import sys

GOVERNORS = ["none", "control", "memgov", "memgov-eq", "earlyoom", "nohang", "oomd", "manual"]
WATCHES = {  # what each governor watches and how it acts
    "none": "nothing (the kernel's OOM killer at the limit)",
    "control": "nothing: a second set of runs without a governor (the noise)",
    "memgov": "the server's cgroup (memory.current, memory.stat, PSI) and the server over SQL; trims, memory.high, admission, resets, a graceful restart; may raise memory.max for a while",
    "memgov-eq": "as memgov, with memory.max never raised (the same limit as everyone)",
    "earlyoom": "the machine's available memory and swap; kills the largest process",
    "nohang": "the machine's available memory, swap and PSI; kills the worst process",
    "oomd": "the unit's cgroup memory pressure (PSI) and the machine's swap; kills the cgroup",
    "manual": "nothing: the server's own limits, a static MemoryHigh at 90%, an allocator release by cron",
}
LATENCY = ("p50_ms", "p99_ms")
# key, heading, lower is better (None: not judged)
FIGURES = [
    ("oom_kills", "OOM kills", True),
    ("sigkills", "SIGKILLs", True),
    ("crash_recoveries", "crash recoveries", True),
    ("recovery_seconds", "s kill to ready", True),
    ("engine_recovery_seconds", "s InnoDB recovery", True),
    ("graceful_restarts", "graceful restarts", None),
    ("stuck_at_end", "stuck at the end (a lower bound)", True),
    ("down_seconds", "s not answering", True),
    ("refused_seconds", "s refusing the probe", True),
    ("transactions", "transactions", False),
    ("p99_ms", "p99 ms", True),
    ("failures", "client-visible failures", True),
    ("ordinary_failures", "of them the ordinary load's", True),
    ("client_errors", "client errors", True),
    ("refused", "connections refused", True),
    ("sessions_ended", "sessions ended by the governor", None),
    ("peak_mib", "peak MiB", None),
    ("over_limit_mib", "MiB over the limit", True),
    ("governor_actions", "actions", None),
]


def clients(rundir):
    """The clients' figures of one run: sysbench's report lines and histograms, the growing
    sessions' summary, the probe's log."""
    tx = storm = errors = reconnects = restarts = refused = 0
    ordinary = 0  # the failures of every client but the storm's (what admission exists to refuse)
    hist, lat99 = {}, []
    report = re.compile(r"^\[ *\d+s \] thds: \d+ tps: ([\d.]+) qps: ([\d.]+) .*lat \(ms,99%\): ([\d.]+) err/s: ([\d.]+) reconn/s: ([\d.]+)")
    for f in sorted(glob.glob(os.path.join(rundir, "sb.*.log"))):
        text = open(f, errors="replace").read()
        is_storm = "/sb.storm-" in f
        seen = (text.count("CLIENT RESTART"), text.count("FATAL: error 1040:"),
                len(re.findall(r"^FATAL: .*returned error", text, re.M)))
        restarts += seen[0]
        refused += seen[1]
        errors += seen[2]
        if not is_storm:
            ordinary += sum(seen)
        for line in text.splitlines():
            m = report.match(line)
            if m:
                # The normal load's transactions (and latency); the storm's own queries apart.
                if is_storm:
                    storm += float(m.group(2))
                else:
                    tx += float(m.group(1))
                    lat99.append(float(m.group(3)))
                errors += float(m.group(4))
                reconnects += float(m.group(5))
                if not is_storm:
                    ordinary += float(m.group(4))
                continue
            m = re.match(r"\s+([\d.]+)\s+\|\*+\s+(\d+)$", line)
            if m and not is_storm:
                hist[float(m.group(1))] = hist.get(float(m.group(1)), 0) + int(m.group(2))
    growth = os.path.join(rundir, "growth.log")
    if os.path.exists(growth):
        m = re.search(r"errors=(\d+) reconnects=(\d+)", open(growth).read())
        if m:
            errors += int(m.group(1))
            reconnects += int(m.group(2))
            ordinary += int(m.group(1))

    def pct(p):
        total, seen = sum(hist.values()), 0
        for v in sorted(hist):
            seen += hist[v]
            if seen >= total * p:
                return v
        return 0
    p99 = max(pct(0.99), sorted(lat99)[int(len(lat99) * 0.99)] if lat99 else 0)
    # The probe: each probe's state holds until the next one starts; the last for half a second.
    spent = {"up": 0.0, "down": 0.0, "refused": 0.0}
    probes = {"up": 0, "down": 0, "refused": 0}
    prev = None
    for line in open(os.path.join(rundir, "probe.log")):
        f = line.split()
        if len(f) < 2 or f[1] not in spent:
            continue
        t = float(f[0])
        probes[f[1]] += 1
        if prev:
            spent[prev[1]] += t - prev[0]
        prev = (t, f[1])
    if prev:
        spent[prev[1]] += 0.5
    return {
        "transactions": f"{tx:.0f}", "storm_queries": f"{storm:.0f}", "client_errors": f"{errors:.0f}",
        "reconnects": f"{reconnects:.0f}", "client_restarts": restarts, "refused": refused,
        "ordinary_failures": f"{ordinary:.0f}",
        "p50_ms": pct(0.5), "p99_ms": p99,
        "down_seconds": f"{spent['down']:.1f}", "refused_seconds": f"{spent['refused']:.1f}",
        "probes": sum(probes.values()), "probes_down": probes["down"], "probes_refused": probes["refused"],
    }


# A run whose scenario did not take place measures nothing of it: the storm's, when no storm
# client ever got a query answered (each start failed to open its connections in sysbench's 30 s,
# seen in one run of 15), with no connection refused and no governor action, so that a governor
# that kept the storm out is never what leaves its run out. Left out of the cell, and said under
# its table; outcome2.sh makes it again on --resume. An unfinished run (the VM timed out) has no
# server figures to judge by: it stays, its figures lower bounds.
SCENARIO_RAN = {"storm": "storm_queries"}
VOID = {}  # (server, setting, scenario) -> {governor: runs left out}


def scenario_void(scenario, num):
    key = SCENARIO_RAN.get(scenario)
    return (key is not None and num.get("unfinished", 0) != 1 and num.get(key, 1) == 0 and
            num.get("refused", 0) == 0 and num.get("governor_actions", 0) == 0)


def read_run(f):
    """A run's cell and governor (from its path, OUT/SERVER/SETTING/SCENARIO/GOVERNOR/run-N) and the
    numeric figures of its result.env."""
    num = {}
    for line in open(f):
        k, _, v = line.strip().partition("=")
        try:
            num[k] = float(v)
        except ValueError:
            pass
    return tuple(f.split(os.sep)[-6:-2]), num


def load(out):
    cells = {}
    VOID.clear()
    for f in glob.glob(os.path.join(out, "*", "*", "*", "*", "run-*", "result.env")):
        (server, setting, scenario, governor), num = read_run(f)
        num["peak_mib"] = num.get("peak_bytes", 0) / 1048576
        num["over_limit_mib"] = num.get("over_limit_bytes", 0) / 1048576
        # What a client saw fail: its errors (queries and connections lost), the connections
        # the server refused, and the clients that had to be started again.
        num["failures"] = num.get("client_errors", 0) + num.get("refused", 0) + num.get("client_restarts", 0)
        num["unfinished"] = num.get("unfinished", 0)
        if scenario_void(scenario, num):
            v = VOID.setdefault((server, setting, scenario), {})
            v[governor] = v.get(governor, 0) + 1
            continue
        cells.setdefault((server, setting, scenario), {}).setdefault(governor, []).append(num)
    return cells


def spread(values):
    return statistics.median(values), min(values), max(values)


def fmt(v):
    v = round(v, 1)
    return f"{v:.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.1f}"


def judge(key, lower, mine, base):
    """better/worse only where the ranges [min, max] do not overlap, of two runs or more each (one
    run is no range)."""
    if lower is None or len(mine) < 2 or len(base) < 2:
        return ""
    _, lo, hi = spread(mine)
    _, blo, bhi = spread(base)
    if hi < blo:
        return " (better)" if lower else " (worse)"
    if lo > bhi:
        return " (worse)" if lower else " (better)"
    return ""


def figure_values(rs, key):
    # A run with no transaction has no latency to tell (not 0 ms).
    return [r[key] for r in rs if key in r and not (key in LATENCY and not r.get("transactions"))]


def figure(runs, governor, key, lower):
    """One governor's figure in a cell: "median (min–max)", judged against no governor."""
    vals = figure_values(runs[governor], key)
    if not vals:
        return "–"
    med, lo, hi = spread(vals)
    text = fmt(med) if fmt(lo) == fmt(hi) else f"{fmt(med)} ({fmt(lo)}–{fmt(hi)})"
    if governor != "none":
        text += judge(key, lower, vals, figure_values(runs.get("none", []), key))
    return text


def table(cell, runs):
    govs = [g for g in GOVERNORS if g in runs]
    lines = ["| figure | " + " | ".join(f"{g} ({len(runs[g])})" for g in govs) + " |",
             "| --- |" + " --- |" * len(govs)]
    for key, heading, lower in FIGURES:
        lines.append(f"| {heading} | " + " | ".join(figure(runs, g, key, lower) for g in govs) + " |")
    # A kill with no "ready for connections" after it in the run's logs (the kill came as the run
    # ended): its kill to ready is not in the figures, which are lower bounds there.
    late = {g: sum(1 for r in runs[g] if r.get("sigkills", 0) > r.get("crash_recoveries", 0)) for g in govs}
    late = {g: n for g, n in late.items() if n}
    if late:
        lines += ["", "Killed with no recovery before the run ended: " + ", ".join(f"{g} {n} run(s)" for g, n in late.items())
                  + "; their time from kill to ready is not counted (a lower bound)."]
    void = VOID.get(cell, {})
    if void:
        lines += ["", "Left out: " + ", ".join(f"{g} {n} run(s)" for g, n in sorted(void.items(), key=lambda i: GOVERNORS.index(i[0])))
                  + f" where the {cell[2]} did not take place (no query of it answered)."]
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: outcome2-report.py OUT [NOTE] | --clients RUNDIR | --void RESULT_ENV")
    if sys.argv[1] == "--void":  # exit 0 when the run of this result.env did not have its scenario
        (_, _, scenario, _), num = read_run(os.path.abspath(sys.argv[2]))
        sys.exit(0 if scenario_void(scenario, num) else 1)
    if sys.argv[1] == "--clients":
        for k, v in clients(sys.argv[2]).items():
            print(f"{k}={v}")
        return
    out = sys.argv[1]
    note = sys.argv[2] if len(sys.argv) > 2 else ""
    cells = load(out)
    if not cells:
        sys.exit(f"outcome2-report: no runs in {out}")
    doc = ["# bench/outcome2", ""]
    if note:
        doc += [note, ""]
    doc += ["Medians, (min–max) over the runs; the number of runs beside each governor. "
            "\"better\"/\"worse\" than no governor only where the ranges do not overlap.", ""]
    seen = sorted({g for runs in cells.values() for g in runs}, key=GOVERNORS.index)
    doc += ["What each governor watches:", ""] + [f"- **{g}**: {WATCHES[g]}" for g in seen] + [""]
    for cell in sorted(cells):
        runs = cells[cell]
        unfinished = sum(r["unfinished"] for rs in runs.values() for r in rs)
        doc += [f"## {cell[0]}, {cell[1]}, {cell[2]}", ""]
        if unfinished:
            doc += [f"{unfinished:.0f} run(s) unfinished (the VM timed out): their figures are lower bounds.", ""]
        doc += [table(cell, runs), ""]
    text = "\n".join(doc)
    open(os.path.join(out, "outcome2.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    main()
