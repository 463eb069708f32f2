#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks docs/grafana-dashboard.json against the metrics memgov produces.

    check-dashboard.py [DASHBOARD [METRICS_C]]

DASHBOARD defaults to docs/grafana-dashboard.json and METRICS_C to src/core/metrics.c, both
relative to the source tree this script is in. The metric names memgov produces are the
"memgov_..." string literals of METRICS_C (a family declared "histogram" also has _bucket, _sum
and _count series); its label names are those written as name=\"...\" there. Fails when:

- the dashboard is not valid JSON, or lacks what it is meant to have (schemaVersion, a
  "datasource" variable of type datasource for prometheus, a "target" variable taken from
  label_values(memgov_build_info, target));
- a query (a panel's or an annotation's "expr", a variable's query) names a memgov_ metric that
  METRICS_C does not produce, or matches or groups by a label memgov does not write (Prometheus'
  own "instance" and "job" labels, and "le" of histograms, are allowed);
- a panel has no query, or a query uses a data source other than the "datasource" variable.

Exit status 0 when all is well, 1 with one line per problem otherwise.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
METRIC = re.compile(r"\bmemgov_[A-Za-z0-9_]+")
# A label matcher inside {...}: name op "value".
MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*\"")
# by (...), without (...), on (...), ignoring (...), group_left (...), group_right (...)
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
PROMETHEUS_LABELS = {"instance", "job", "le", "__name__"}


def produced(metrics_c):
    """Metric names and label names memgov's exposition writes, from the C source."""
    text = metrics_c.read_text()
    names = set(re.findall(r"\"(memgov_[A-Za-z0-9_]+)\"", text))
    for name in re.findall(r"family\s*\(\s*[^,]+,\s*\"(memgov_[A-Za-z0-9_]+)\"\s*,\s*\"histogram\"", text):
        names |= {name + "_bucket", name + "_sum", name + "_count"}
    labels = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=\\\"", text))
    return names, labels


def queries(node, where="dashboard"):
    """Yields (where, query) for every PromQL query in the dashboard."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "expr" and isinstance(value, str):
                yield where, value
            elif key == "templating" and isinstance(value, dict):
                for var in value.get("list", []):
                    if var.get("type") == "query":
                        q = var.get("query")
                        q = q.get("query", "") if isinstance(q, dict) else q
                        yield f"variable {var.get('name')}", q or ""
                        yield f"variable {var.get('name')}", var.get("definition", "")
            else:
                inner = where
                if isinstance(value, dict) and "title" in value and "type" in value:
                    inner = f"panel '{value['title']}'"
                yield from queries(value, inner)
    elif isinstance(node, list):
        for item in node:
            inner = where
            if isinstance(item, dict) and "title" in item and "type" in item:
                inner = f"panel '{item['title']}'"
            yield from queries(item, inner)


def strip_strings(expr):
    """The query without the contents of its string literals (label values, regexes)."""
    return re.sub(r"\"(?:[^\"\\]|\\.)*\"", '""', expr)


def check(dashboard_path, metrics_c):
    problems = []
    try:
        dashboard = json.loads(dashboard_path.read_text())
    except (OSError, ValueError) as e:
        return [f"{dashboard_path}: not valid JSON: {e}"]

    names, labels = produced(metrics_c)
    if not names:
        return [f"{metrics_c}: no memgov_ metric names found"]
    labels |= PROMETHEUS_LABELS

    if not isinstance(dashboard.get("schemaVersion"), int):
        problems.append("no schemaVersion")
    variables = {v.get("name"): v for v in dashboard.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append("no 'datasource' variable of type datasource for prometheus")
    tv = variables.get("target")
    tq = tv.get("query") if tv else None
    tq = tq.get("query") if isinstance(tq, dict) else tq
    if not tv or tv.get("type") != "query" or "label_values(memgov_build_info, target)" not in (tq or ""):
        problems.append("no 'target' variable with the query label_values(memgov_build_info, target)")

    count = 0
    for where, expr in queries(dashboard):
        count += 1
        bare = strip_strings(expr)
        for name in sorted(set(METRIC.findall(bare))):
            if name not in names:
                problems.append(f"{where}: {name} is not a metric memgov produces ({metrics_c.name}): {expr!r}")
        for label, _ in MATCHER.findall(expr):
            if label not in labels:
                problems.append(f"{where}: label '{label}' is not one memgov writes: {expr!r}")
        for _, group in GROUPING.findall(bare):
            for label in (x.strip() for x in group.split(",")):
                if label and label not in labels:
                    problems.append(f"{where}: grouping label '{label}' is not one memgov writes: {expr!r}")
    if count == 0:
        problems.append("no queries at all")

    def panels(node):
        for p in node.get("panels", []):
            yield p
            yield from panels(p)

    for p in panels(dashboard):
        if p.get("type") == "row":
            continue
        title = p.get("title", "?")
        targets = p.get("targets") or []
        if not targets:
            problems.append(f"panel '{title}': no query")
        for t in targets:
            uid = (t.get("datasource") or p.get("datasource") or {}).get("uid")
            if uid != "${datasource}":
                problems.append(f"panel '{title}': data source {uid!r}, not ${{datasource}}")
            if not t.get("expr"):
                problems.append(f"panel '{title}': a query without expr")
    return problems


def main(argv):
    dashboard = Path(argv[1]) if len(argv) > 1 else ROOT / "docs" / "grafana-dashboard.json"
    metrics_c = Path(argv[2]) if len(argv) > 2 else ROOT / "src" / "core" / "metrics.c"
    problems = check(dashboard, metrics_c)
    for p in problems:
        print(f"{dashboard.name}: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"{dashboard.name}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
