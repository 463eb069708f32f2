#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Turns a text file into a C source defining `const char NAME[]` and `const size_t NAME_size`
(the length without the terminating NUL), so the build compiles the shipped file itself."""
import sys


def main() -> int:
    if len(sys.argv) != 4:
        print("usage: embed-text.py INPUT OUTPUT SYMBOL", file=sys.stderr)
        return 2
    src, out, name = sys.argv[1:]
    data = open(src, "rb").read()
    if b"\0" in data:
        print(f"{src}: contains a NUL byte", file=sys.stderr)
        return 1
    lines = [f"/* Generated from {src.split('/')[-1]} by embed-text.py. Do not edit. */",
             "#include <stddef.h>", "", f"const char {name}[] ="]
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        lines.append('        "' + "".join(f"\\x{b:02x}" for b in chunk) + '"')
    if not data:
        lines.append('        ""')
    lines[-1] += ";"
    lines.append(f"const size_t {name.removesuffix('_text')}_size = {len(data)};")
    open(out, "w").write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
