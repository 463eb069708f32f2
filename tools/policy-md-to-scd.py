#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes docs/memgov.ini.5.scd (the man page) from docs/policy.md, so that the two policy
references cannot drift. Run by the build; the unit tests check both name every key."""
import re
import sys


def inline(text):
    return re.sub(r"`([^`]+)`", r"*\1*", text)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    md = open(src).read()
    parts = re.split(r"\n## ", md)
    head = parts[0].split("\n", 2)[2].strip() if parts[0].startswith("#") else parts[0].strip()
    out = ["memgov.ini(5)", "", "# NAME", "", "memgov.ini - policy files of the memgov memory governor", "",
           "# SYNOPSIS", "", "/etc/memgov/*INSTANCE*.ini, /usr/share/memgov/policies/\\*.ini", "",
           "# DESCRIPTION", "", inline(head), ""]
    for part in parts[1:]:
        title, _, body = part.partition("\n")
        out.append("# " + (title if title.startswith("[") else title.upper()))
        out.append("")
        code = False
        for line in body.strip("\n").split("\n"):
            if line.startswith("```"):
                code = not code
                out.append("```")
                continue
            if code:
                out.append(line)
                continue
            if line.startswith("| key") or line.startswith("| ---"):
                continue
            if line.startswith("| `"):
                cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
                key, default, meaning = cells[0].strip("`"), cells[1], cells[2] if len(cells) > 2 else ""
                out.append(f"*{key}* = {inline(default)}")
                out.append("\t" + (inline(meaning) if meaning else "Whether the step is used."))
                out.append("")
                continue
            out.append(inline(line))
        out.append("")
    out += ["# SEE ALSO", "", "*memgov*(8)", ""]
    open(dst, "w").write("\n".join(out))


if __name__ == "__main__":
    main()
