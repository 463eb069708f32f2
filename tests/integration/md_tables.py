# SPDX-License-Identifier: GPL-2.0-or-later
"""Markdown tables by heading, as the outcome benchmark's report and docs/benchmarks.md write them:
{heading: {first cell: {column: cell}}}, a heading being a '### HEADING' or '**HEADING**' line."""
import re


def tables(text):
    out, heading, header = {}, None, None
    for line in text.splitlines():
        m = re.match(r"^(?:### (.+)|\*\*(\w[\w ]*)\*\*)$", line)
        if m:
            heading, header = m.group(1) or m.group(2), None
        elif not line.startswith("|"):
            header = None
        elif heading is not None:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif not set(cells[0]) <= set("-: "):
                out.setdefault(heading, {})[cells[0]] = dict(zip(header, cells))
    return out
