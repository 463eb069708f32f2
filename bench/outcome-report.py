#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The report of bench/outcome: medians per scenario and governor, side by side, as a table on
standard output and in OUT/outcome.md, and a chart in OUT/outcome.svg.

  outcome-report.py OUT VERSIONS MEMORYMAX SCALE RUNS
  outcome-report.py --refused RUNDIR    (one run's refused connections, for outcome-keep.sh)
"""
import glob
import os
import statistics
import sys

GOVERNORS = ["none", "memgov", "earlyoom", "nohang", "oomd", "manual"]
SCENARIOS = ["ramp", "growth", "storm", "linear"]
FIELDS = [  # key, heading, format
    ("unfinished", "unfinished", "{:g}"),
    ("oom_kills", "OOM kills", "{:g}"),
    ("runs_killed", "runs OOM-killed", "{:g}"),
    ("sigkills", "SIGKILLs", "{:g}"),
    ("graceful_restarts", "graceful restarts", "{:g}"),
    ("crash_recoveries", "crash recoveries", "{:g}"),
    ("down_seconds", "s not answering", "{:g}"),
    ("down_worst", "worst run's s not answering", "{:g}"),  # a median of 3 hides one stuck server
    ("transactions", "transactions", "{:g}"),
    ("tx_ratio", "tx vs none", "{:.2f}"),
    ("storm_queries", "storm queries", "{:g}"),  # the storm's own clients' queries: its table only
    ("client_errors", "client errors", "{:g}"),
    ("refused", "connections refused (1040)", "{:g}"),
    ("client_restarts", "clients restarted", "{:g}"),
    ("p50_ms", "p50 ms", "{:g}"),
    ("p99_ms", "p99 ms", "{:g}"),
    ("peak_mib", "peak MiB", "{:.0f}"),
    ("governor_actions", "actions", "{:g}"),
]


def count_refused(rundir):
    """New connections the server refused with a clean "Too many connections" (admission, or
    max_connections reached): sysbench aborts the thread that could not connect."""
    refused = 0
    for log in glob.glob(os.path.join(rundir, "sb.*.log")):
        refused += open(log, errors="replace").read().count("FATAL: error 1040:")
    return refused


def load(out):
    runs = {}
    for f in glob.glob(os.path.join(out, "*", "*", "run-*", "result.env")):
        r = {}
        for line in open(f):
            k, _, v = line.strip().partition("=")
            r[k] = v
        try:
            r["peak_mib"] = int(r["peak_bytes"]) / 1048576
        except (KeyError, ValueError):
            pass
        # A kept pass (outcome-keep.sh) has the count in result.env, without the clients' logs.
        if "refused" not in r:
            r["refused"] = str(count_refused(os.path.dirname(f)))
        runs.setdefault((r.get("scenario"), r.get("governor")), []).append(r)
    return runs


def values(rs, key):
    """The runs' figures for key, those that have one."""
    vals = []
    for r in rs:
        try:
            vals.append(float(r[key]))
        except (KeyError, ValueError):
            pass
    return vals


def median(rs, key):
    vals = values(rs, key)
    return statistics.median(vals) if vals else None


def main():
    if sys.argv[1:2] == ["--refused"] and len(sys.argv) == 3:
        print(count_refused(sys.argv[2]))
        return
    out, versions, memmax, scale, nruns = sys.argv[1:6]
    vms = sys.argv[6] if len(sys.argv) > 6 else "1 VM at a time, 2 guest CPUs"
    runs = load(out)
    lines = [f"Medians of {nruns} run(s) per cell; MariaDB under MemoryMax {memmax}, one phase {scale}s; "
             f"{vms}; alternatives: {versions}. Unfinished: runs the VM did not finish within its "
             "timeout (a server stuck at its limit), counted with what their logs say; their time not "
             "answering is a lower bound (≥).", ""]
    table = {}
    for s in SCENARIOS:
        govs = [g for g in GOVERNORS if (s, g) in runs]
        if not govs:
            continue
        fields = [f for f in FIELDS if f[0] != "storm_queries" or s == "storm"]
        lines.append(f"### {s}")
        lines.append("")
        lines.append("| governor | runs | " + " | ".join(h for _, h, _ in fields) + " |")
        lines.append("| --- | --- | " + " | ".join("---" for _ in fields) + " |")
        base = median(runs.get((s, "none"), []), "transactions")
        for g in govs:
            rs = runs[(s, g)]
            cells = []
            unfinished = [r for r in rs if r.get("unfinished") == "1"]
            for key, _, fmt in fields:
                if key == "unfinished":
                    v = len(unfinished)
                elif key == "runs_killed":
                    v = sum(1 for r in rs if r.get("oom_kills", "0") not in ("", "0"))
                elif key == "down_worst":
                    v = max(values(rs, "down_seconds"), default=None)
                elif key == "tx_ratio":
                    tx = median(rs, "transactions")
                    v = tx / base if base and tx is not None else None
                else:
                    v = median(rs, key)
                table[(s, g, key)] = v
                cell = "-" if v is None else fmt.format(v)
                # An unfinished run's time not answering ends with its logs: at least that much.
                if key in ("down_seconds", "down_worst") and v is not None and unfinished:
                    cell = "≥" + cell
                cells.append(cell)
            lines.append(f"| {g} | {len(rs)} | " + " | ".join(cells) + " |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "outcome.md"), "w") as f:
        f.write(text + "\n")
    chart(out, table)


def chart(out, table):
    """OOM kills and seconds not answering per scenario and governor: two rows of grouped bars."""
    scen = [s for s in SCENARIOS if any((s, g, "oom_kills") in table for g in GOVERNORS)]
    if not scen:
        return
    colours = {"none": "#888888", "memgov": "#2a7ab0", "earlyoom": "#d08020", "nohang": "#a04090",
               "oomd": "#40a040", "manual": "#b03030"}
    w, h, pad, row = 860, 440, 50, 170  # the legend below the last row's scenario names
    group = (w - 2 * pad) / len(scen)
    bar = group / (len(GOVERNORS) + 1)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for i, (key, title) in enumerate([("oom_kills", "OOM kills (median)"), ("down_seconds", "seconds not answering (median)")]):
        top = 30 + i * (row + 20)
        vmax = max([table.get((s, g, key)) or 0 for s in scen for g in GOVERNORS] + [1])
        svg.append(f'<text x="{pad}" y="{top - 8}" font-weight="bold">{title}</text>')
        svg.append(f'<line x1="{pad}" y1="{top + row}" x2="{w - pad}" y2="{top + row}" stroke="black"/>')
        for j, s in enumerate(scen):
            x0 = pad + j * group
            svg.append(f'<text x="{x0 + group / 2}" y="{top + row + 14}" text-anchor="middle">{s}</text>')
            for k, g in enumerate(GOVERNORS):
                v = table.get((s, g, key))
                if v is None:
                    continue
                bh = row * v / vmax
                x = x0 + (k + 0.5) * bar
                svg.append(f'<rect x="{x:.1f}" y="{top + row - bh:.1f}" width="{bar * 0.9:.1f}" height="{bh:.1f}" '
                           f'fill="{colours[g]}"/>')
                svg.append(f'<text x="{x + bar * 0.45:.1f}" y="{top + row - bh - 2:.1f}" text-anchor="middle" '
                           f'font-size="9">{v:g}</text>')
    for k, g in enumerate(GOVERNORS):
        x = pad + k * 120
        svg.append(f'<rect x="{x}" y="{h - 22}" width="10" height="10" fill="{colours[g]}"/>')
        svg.append(f'<text x="{x + 14}" y="{h - 13}">{g}</text>')
    svg.append("</svg>")
    with open(os.path.join(out, "outcome.svg"), "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
