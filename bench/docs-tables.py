#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The tables of README.md and docs/benchmarks.md, made from the benchmarks' kept results
(bench/results/), so that no figure in them is typed by hand:

  docs-tables.py check SOURCE_ROOT   exit 1, saying where, when a table differs from its results
  docs-tables.py write SOURCE_ROOT   put the tables made from the results into the docs

In a document a table sits between a line '<!-- table NAME: made by bench/docs-tables.py from
PATH -->' and the line '<!-- end of table NAME -->'; everything between is replaced. Each NAME
below says which kept results it is made from and how."""
import glob
import importlib.util
import os
import re
import statistics
import sys

ROOT = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")


def load_report(name="outcome-report.py"):
    spec = importlib.util.spec_from_file_location(name.replace("-", "_")[:-3], os.path.join(ROOT, "bench", name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


report = load_report()
report2 = load_report("outcome2-report.py")
PASS2 = os.path.join(RESULTS, "outcome2-pass")
# Runs kept beside the pass for a comparison the docs make (memgov before a fix, or after one
# not in the pass's build): bench/results/outcome2-NAME, each with its build.txt.
BESIDE2 = sorted(d for d in glob.glob(os.path.join(RESULTS, "outcome2-*")) if os.path.isdir(d) and d != PASS2)
GOVERNOR_NAME = {"oomd": "systemd-oomd"}


def fmt_s(v):
    return "-" if v is None else f"{v:.1f}"


def spread(vals, f=fmt_s):
    """median (min-max) of a run's figures"""
    if not vals:
        return "-"
    med = statistics.median(vals)
    if len(vals) == 1 or min(vals) == max(vals):
        return f(med)
    return f"{f(med)} ({f(min(vals))}–{f(max(vals))})"


def killed(rs):
    return sum(1 for r in rs if r.get("oom_kills", "0") not in ("", "0"))


def failures(r):
    """What a client saw fail in one run: errors reported, and new connections refused (1040)."""
    try:
        return int(float(r.get("client_errors", "0"))) + int(float(r.get("refused", "0")))
    except ValueError:
        return 0


def build_of(pass_dir):
    path = os.path.join(pass_dir, "build.txt")
    if not os.path.exists(path):
        sys.exit(f"docs-tables: {path} is missing: which build made the runs")
    return open(path).read().strip()


def outcome_rows(pass_dir, scenario, extra=()):
    """The runs of one scenario by governor, in the report's order; extra: (label, pass dir)
    pairs of memgov's runs made apart (another build), as rows of their own."""
    runs = report.load(pass_dir)
    rows = [(GOVERNOR_NAME.get(g, g), runs[(scenario, g)]) for g in report.GOVERNORS if (scenario, g) in runs]
    for label, d in extra:
        other = report.load(os.path.join(RESULTS, d))
        if (scenario, "memgov") in other:
            rows.append((label, other[(scenario, "memgov")]))
    base = report.median(runs.get((scenario, "none"), []), "transactions")
    return rows, base


def tx_vs_none(rs, base):
    tx = report.median(rs, "transactions")
    return "-" if tx is None or not base else f"{tx / base:.2f}"


def table_outcome_summary():
    """README: every scenario and governor of the kept pass, the four figures a reader asks for."""
    d = os.path.join(RESULTS, "outcome-pass")
    out = ["| scenario | governor | runs OOM-killed | s not answering, median (range) | transactions vs none | "
           "client-visible failures, median (errors + refused) |",
           "| --- | --- | ---: | ---: | ---: | ---: |"]
    for s in report.SCENARIOS:
        rows, base = outcome_rows(d, s)
        for g, rs in rows:
            out.append(f"| {s} | {g} | {killed(rs)} of {len(rs)} | {spread(report.values(rs, 'down_seconds'))} | "
                       f"{tx_vs_none(rs, base)} | {statistics.median(failures(r) for r in rs):g} |")
    out.append("")
    out.append(f"Build: {build_of(d)}.")
    return out


def table_outcome(scenario):
    """docs/benchmarks.md: one scenario of the kept pass, with memgov's later storm runs."""
    d = os.path.join(RESULTS, "outcome-pass")
    extra = [("memgov, later build (3 runs apart)", "outcome-storm-no-wait")] if scenario == "storm" else []
    rows, base = outcome_rows(d, scenario, extra)
    out = ["| governor | runs OOM-killed | graceful restarts | s not answering, median (range) | transactions | "
           "vs none | client errors | refused (1040) | p99 s | peak MiB |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for g, rs in rows:
        tx = report.median(rs, "transactions")
        p99 = report.median(rs, "p99_ms")
        peak = report.median(rs, "peak_mib")
        out.append(f"| {g} | {killed(rs)} of {len(rs)} | {report.median(rs, 'graceful_restarts'):g} | "
                   f"{spread(report.values(rs, 'down_seconds'))} | {tx:g} | {tx_vs_none(rs, base)} | "
                   f"{report.median(rs, 'client_errors'):g} | {report.median(rs, 'refused'):g} | "
                   f"{p99 / 1000:.1f} | {peak:.0f} |")
    if extra:
        out.append("")
        out.append(f"Build: {build_of(d)}; the last row: {build_of(os.path.join(RESULTS, extra[0][1]))}.")
    return out


def table_outcome2(cell, pass_dir=PASS2):
    """docs/benchmarks.md: one cell (server, setting, scenario) of the second version's kept pass,
    as its report makes it: medians (min–max), judged against no governor only where apart."""
    cells = report2.load(pass_dir)
    return report2.table(cell, cells[cell]).split("\n") + ["", f"Build: {build_of(pass_dir)}."]


SERVER_NAME = {"mariadb-10.11": "MariaDB 10.11", "mysql-9.7": "MySQL 9.7", "mariadb-11.8": "MariaDB 11.8"}
# The figures a reader asks for first; the rest are in each cell's table in docs/benchmarks.md.
SUMMARY2 = ["down_seconds", "transactions", "p99_ms", "failures", "sessions_ended"]


def table_outcome2_summary(pass_dir):
    """README: every cell and governor of one kept pass of the second version, a row each, the
    figures a reader asks for first, judged against no governor as the cell's table does."""
    figures = {key: (heading, lower) for key, heading, lower in report2.FIGURES}
    cells = report2.load(pass_dir)
    out = ["| server, setting, scenario | governor | runs OOM-killed | " +
           " | ".join(figures[k][0] for k in SUMMARY2) + " |",
           "| --- | --- | ---: |" + " ---: |" * len(SUMMARY2)]
    for cell in sorted(cells):
        runs = cells[cell]
        for g in (g for g in report2.GOVERNORS if g in runs):
            out.append(f"| {SERVER_NAME.get(cell[0], cell[0])}, {cell[1]}, {cell[2]} | {GOVERNOR_NAME.get(g, g)} | "
                       f"{sum(1 for r in runs[g] if r.get('oom_kills', 0) > 0)} of {len(runs[g])} | " +
                       " | ".join(report2.figure(runs, g, k, figures[k][1]) for k in SUMMARY2) + " |")
    return out + ["", f"Build: {build_of(pass_dir)}."]


def kept(name):
    path = os.path.join(RESULTS, name)
    if not os.path.exists(path):
        sys.exit(f"docs-tables: {path} is missing")
    return open(path).read()


def grab(text, pattern, name):
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit(f"docs-tables: {name}: no line matching {pattern!r}")
    return m.groups()


def table_trim_vs_gdb():
    t = kept("trim-vs-gdb.txt")
    rounds, = grab(t, r"\((\d+) rounds, medians\)", "trim-vs-gdb")
    gstop, grun, gfreed = grab(t, r"gdb\s+process stopped\s+([\d.]+) ms \(all threads; gdb ran (\d+) ms\)\s+freed\s+([\d.]+) MiB", "trim-vs-gdb")
    held, tick, mfreed = grab(t, r"memgov\s+thread held\s+([\d.]+) ms \(one thread; the others did not stop: worst tick delay ([\d.]+) ms\)\s+freed\s+([\d.]+) MiB", "trim-vs-gdb")
    ratio, reclaim = grab(t, r"stop time ratio gdb/memgov: (\d+)x\s+reclaim ratio memgov/gdb: ([\d.]+)", "trim-vs-gdb")
    return ["| | stopped | freed |", "| --- | --- | ---: |",
            f"| gdb `call malloc_trim(0)` | {gstop} ms, every thread (gdb ran {grun} ms) | {gfreed} MiB |",
            f"| `memgov trim` | {held} ms, one thread (the others' worst tick delay {tick} ms) | {mfreed} MiB |",
            f"| ratio | **{ratio}x shorter** | **{reclaim}** |",
            "", f"Medians of {rounds} rounds."]


def pool_vs_reset_rows(name):
    t = kept(name)
    out = []
    for label, pat in (("pool", r"^\s+pool: (.+)$"), ("reset", r"^\s+reset: (.+)$")):
        line, = grab(t, pat, name)
        m = re.search(r"([\d.]+) MiB\s+([\d.]+) MiB\s+([\d.]+)s\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+\(([\d-]+)%\)\s+(-?\d+)\s+(\d+)\s+(\d+)\s+(\d+)", line)
        if not m:
            sys.exit(f"docs-tables: {name}: cannot read the {label} row: {line}")
        out.append((label, line.split("  ")[0].strip(), m.groups()))
    return t, out


def table_pool_vs_reset(name):
    t, rows = pool_vs_reset_rows(name)
    out = ["| | given back (RSS) | 30 s later | took | tps before → after | kept (range) | transactions lost | "
           "client errors / reconnects | sessions ended |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, what, g in rows:
        gb, later, took, before, after, keptp, rng, lost, err, rec, ended = g
        out.append(f"| {what} | {gb} MiB | {later} MiB | {took} s | {before} → {after} | {keptp}% ({rng.replace('-', '–')}%) | "
                   f"{lost} | {err} / {rec} | {ended} |")
    per = re.findall(r"per 100 MiB given back, (pool|reset)\s*:\s+(-?\d+) transactions lost \(([\d.]+) s of the rate before\), ([\d.]+) sessions ended, ([\d.]+) client errors", t)
    if len(per) == 2:
        out += ["", "| per 100 MiB given back | transactions lost (seconds of the rate before) | sessions ended | client errors |",
                "| --- | ---: | ---: | ---: |"]
        for label, lost, secs, ended, errs in per:
            out.append(f"| {label} | {lost} ({secs} s) | {ended} | {errs} |")
    rounds, = grab(t, r"\((\d+) rounds, medians\)", name)
    out += ["", f"Medians of {rounds} rounds (`bench/results/{name}`)."]
    return out


def table_event_latency():
    t = kept("vm-event-latency.txt")
    out = ["| event | events | p50 | p99 | vs a 1 s poll (p50) | vs a 5 s poll (p50) |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for kind, label in (("psi", "PSI trigger"), ("memory.events", "memory.events")):
        n, p50, p99, x1, x5 = grab(t, rf"^\s+{re.escape(kind)}\s+(\d+) events\s+p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms\s+vs sampling every 1 s:\s+(\d+)x sooner at p50; every 5 s:\s+(\d+)x", "vm-event-latency")
        out.append(f"| {label} | {n} | {p50} ms | {p99} ms | {x1}x sooner | {x5}x sooner |")
    return out


def table_idle_cost():
    t = kept("idle-cost.txt")
    secs, = grab(t, r"idle cost over (\d+) s", "idle-cost")
    out = ["| | CPU | wakeups | resident (anonymous) |", "| --- | ---: | ---: | ---: |"]
    for name in ("memgov", "earlyoom"):
        cpu, wake, rss, anon = grab(t, rf"^\s+{name}\s+CPU\s+([\d.]+) ms/min\s+wakeups\s+([\d.]+)/min\s+RSS\s+([\d.]+) MiB \(anonymous\s+([\d.]+) MiB", "idle-cost")
        out.append(f"| {name} | {cpu} ms/min | {wake}/min | {rss} MiB ({anon} MiB) |")
    cpu, wake, rss = grab(t, r"ratio memgov/earlyoom: CPU ([\d.na]+)\s+wakeups ([\d.na]+)\s+RSS ([\d.]+)", "idle-cost")
    out.append(f"| ratio memgov/earlyoom | **{cpu}** | **{wake}** | {rss} |")
    out += ["", f"Over {secs} s, one run."]
    return out


def table_replay_throughput():
    t = kept("replay-throughput.txt")
    out = ["| | time | samples/s | faster than real time |", "| --- | ---: | ---: | ---: |"]
    e = grab(t, r"engine alone\s+([\d.]+) s\s+(\d+) samples/s\s+(\d+)x real time", "replay-throughput")
    r = grab(t, r"reading the trace\s+([\d.]+) s\s+(\d+) samples/s", "replay-throughput")
    m = grab(t, r"memgov replay\s+([\d.]+) s\s+(\d+) samples/s\s+(\d+)x real time", "replay-throughput")
    ratio, = grab(t, r"ratio engine / reading the trace: ([\d.]+)", "replay-throughput")
    out.append(f"| engine alone | {e[0]} s | {e[1]} | {e[2]}x |")
    out.append(f"| reading the trace | {r[0]} s | {r[1]} | |")
    out.append(f"| `memgov replay` | {m[0]} s | {m[1]} | {m[2]}x |")
    out += ["", f"Engine against reading its input: {ratio}."]
    return out


def table_allocators(name="allocators.txt"):
    """bench/allocators.sh's kept output: one server per allocator, the study's loops."""
    t = kept(name)
    loops, runs = {}, {}
    for line in t.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        kv = dict(f.split("=", 1) for f in line.split())
        a = kv["allocator"]
        if "loop" in kv:
            loops.setdefault(a, []).append(kv)
        else:
            runs[a] = kv
    if not loops or set(loops) != set(runs):
        raise SystemExit(f"docs-tables: {name}: every allocator needs its loops and its trim line")
    mib = lambda v: f"{int(v) / 1048576:.0f}M"
    base_tps = statistics.median(int(x["tps"]) for x in loops["glibc"])
    out = ["| allocator | RSS after each loop | transactions/s (median; vs glibc) | p99 at 128 users (median) | "
           "memgov trim gave back | memgov explain after the last loop |",
           "| --- | --- | ---: | ---: | ---: | --- |"]
    for a, ls in loops.items():
        tps = statistics.median(int(x["tps"]) for x in ls)
        p99 = statistics.median(float(x["p99_ms"]) for x in ls)
        last = ls[-1]
        said = f"allocator free {mib(last['explain_free'])}"
        if int(last["explain_free_listed"]) > int(last["explain_free"]) + 1048576:
            said += f" ({mib(last['explain_free_listed'])} in free chunks)"
        findings = [f for f in last["explain_findings"].split("+") if f != "none"]
        said += "; " + (", ".join(findings) if findings else "no finding")
        out.append(f"| {a} | {' → '.join(mib(x['rss']) for x in ls)} | {tps:.0f} ({tps / base_tps:.2f}x) | "
                   f"{p99:.0f} ms | {mib(runs[a]['trim_freed'])} | {said} |")
    header = re.sub(r"\s+Ver\s+", " MariaDB ", t.splitlines()[0].lstrip("# "))
    out += ["", f"One invocation, the allocators in turn: {header}."]
    return out


TABLES = {
    "allocators": table_allocators,
    "allocators-range-2000": lambda: table_allocators("allocators-range-2000.txt"),
    "outcome-summary": table_outcome_summary,
    "trim-vs-gdb": table_trim_vs_gdb,
    "pool-vs-reset": lambda: table_pool_vs_reset("pool-vs-reset.txt"),
    "pool-vs-reset-1step": lambda: table_pool_vs_reset("pool-vs-reset-1step.txt"),
    "vm-event-latency": table_event_latency,
    "idle-cost": table_idle_cost,
    "replay-throughput": table_replay_throughput,
}
for _s in report.SCENARIOS:
    TABLES[f"outcome-{_s}"] = (lambda s: lambda: table_outcome(s))(_s)
# One table per cell of the second version's kept pass: outcome2-SERVER-SETTING-SCENARIO.
for _c in (report2.load(PASS2) if os.path.isdir(PASS2) else {}):
    TABLES["outcome2-" + "-".join(_c)] = (lambda c: lambda: table_outcome2(c))(_c)
for _d in BESIDE2:
    for _c in report2.load(_d):
        TABLES[os.path.basename(_d) + "-" + "-".join(_c)] = (lambda c, d: lambda: table_outcome2(c, d))(_c, _d)

# A summary of one kept pass, NAME-summary for bench/results/NAME: made wherever a document asks.
SUMMARY_TABLE = re.compile(r"^(outcome2-[a-z0-9-]+)-summary$")


def table_named(name):
    if name in TABLES:
        return TABLES[name]
    m = SUMMARY_TABLE.match(name)
    if m and os.path.isdir(os.path.join(RESULTS, m.group(1))):
        return lambda: table_outcome2_summary(os.path.join(RESULTS, m.group(1)))
    return None


DOCS = ["README.md", os.path.join("docs", "benchmarks.md")]
BEGIN = re.compile(r"^<!-- table (\S+): made by bench/docs-tables\.py from (\S+) -->$")


def process(path, write):
    lines = open(path).read().split("\n")
    out, problems, seen, i = [], [], [], 0
    while i < len(lines):
        out.append(lines[i])
        m = BEGIN.match(lines[i])
        if not m:
            i += 1
            continue
        name = m.group(1)
        make = table_named(name)
        if make is None:
            problems.append(f"{path}:{i + 1}: no table named {name} (known: {', '.join(sorted(TABLES))}, "
                            f"and KEPT-summary for a kept pass bench/results/outcome2-*)")
        end = f"<!-- end of table {name} -->"
        try:
            j = lines.index(end, i + 1)
        except ValueError:
            problems.append(f"{path}:{i + 1}: table {name} has no '{end}' line")
            return problems, seen
        have = lines[i + 1:j]
        want = make() if make else have
        if have != want:
            diff = next((k for k in range(max(len(have), len(want)))
                         if k >= len(have) or k >= len(want) or have[k] != want[k]), 0)
            problems.append(f"{path}:{i + 2 + diff}: table {name} is not what its results say: has "
                            f"{have[diff] if diff < len(have) else '(nothing)'!r}, the results say "
                            f"{want[diff] if diff < len(want) else '(nothing)'!r}")
        out.extend(want)
        out.append(end)
        seen.append(name)
        i = j + 1
    if write:
        with open(path, "w") as f:
            f.write("\n".join(out))
    return problems, seen


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("check", "write"):
        sys.exit("usage: docs-tables.py check|write SOURCE_ROOT")
    problems, seen = [], []
    for doc in DOCS:
        p, s = process(os.path.join(ROOT, doc), sys.argv[1] == "write")
        problems += p
        seen += s
    missing = sorted(set(TABLES) - set(seen))
    if missing:
        problems.append(f"tables in no document: {', '.join(missing)}")
    if sys.argv[1] == "check":
        for p in problems:
            print(f"docs-tables: {p}", file=sys.stderr)
        if problems:
            sys.exit(1)
    print(f"docs-tables: {len(seen)} table(s) {'checked' if sys.argv[1] == 'check' else 'written'}: {', '.join(seen)}")


if __name__ == "__main__":
    main()
