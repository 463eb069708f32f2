#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The docs say what the code and the kept results say:
- every table of README.md and docs/benchmarks.md made from kept results is what they say
  (bench/docs-tables.py check);
- docs/troubleshooting.md's contents list names every section, in order, with its anchor;
- docs/operator-guide.md's table of the default ladder has one row per rung of
  policies/default.ini (every section with an `at` and an `eta`), in its order, with its at and eta.
usage: check-docs.py SOURCE_ROOT"""
import configparser
import os
import re
import subprocess
import sys

SRC = sys.argv[1]
problems = []


def anchor(title):
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    a = re.sub(r"[^\w\- ]", "", title.lower())
    return a.replace(" ", "-")


# 1. The tables made from the kept results.
r = subprocess.run([sys.executable, os.path.join(SRC, "bench", "docs-tables.py"), "check", SRC],
                   capture_output=True, text=True)
if r.returncode != 0:
    problems.append(r.stderr.strip())
else:
    print(r.stdout.strip())

# 2. The troubleshooting contents.
text = open(os.path.join(SRC, "docs", "troubleshooting.md")).read()
sections = re.findall(r"^## (.+)$", text, re.M)
listed = re.findall(r"^- \[(.+?)\]\(#(.+?)\)$", text.split("\n## ", 1)[0], re.M)
if [t for t, _ in listed] != sections:
    missing = [s for s in sections if s not in [t for t, _ in listed]]
    problems.append(f"docs/troubleshooting.md: the contents list {len(listed)} sections, the page has {len(sections)}"
                    f"{' (not listed: ' + '; '.join(missing) + ')' if missing else ' (not in order)'}")
for title, a in listed:
    if a != anchor(title):
        problems.append(f"docs/troubleshooting.md: '{title}' links to #{a}, its anchor is #{anchor(title)}")
print(f"check-docs: troubleshooting.md lists its {len(sections)} sections")

# 3. The default ladder in the operator guide.
ini = configparser.ConfigParser(interpolation=None)
ini.read(os.path.join(SRC, "policies", "default.ini"))
rungs = [(s, ini[s]["at"], ini[s]["eta"]) for s in ini.sections() if "at" in ini[s] and "eta" in ini[s]]
guide = open(os.path.join(SRC, "docs", "operator-guide.md")).read()
m = re.search(r"<!-- rungs of policies/default.ini.*?-->\n(.*?)<!-- end of rungs -->", guide, re.S)
if not m:
    problems.append("docs/operator-guide.md: no table of the default ladder (<!-- rungs of policies/default.ini ... -->)")
else:
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in m.group(1).strip().split("\n")[2:]]
    have = [(r[0], r[1], r[2]) for r in rows]
    if have != rungs:
        problems.append(f"docs/operator-guide.md: the default ladder's table says {have}, policies/default.ini {rungs}")
    print(f"check-docs: operator-guide.md's ladder has the {len(rungs)} rungs of default.ini: "
          f"{', '.join(r[0] for r in rungs)}")

for p in problems:
    print(f"check-docs: FAIL: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
