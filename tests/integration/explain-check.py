#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks `memgov explain --json` (on standard input) of a real server whose sessions fragmented
its heap: the parts add up to the total, the allocator's statistics are the expected allocator's,
the sessions' part is within 5% of what the server itself says its sessions hold, and there is an
allocator-retention finding. Prints what that finding says a trim gives back (bytes); a line on
standard error shows the parts.
usage: explain-check.py NAME ALLOCATOR SERVER_SESSIONS_BYTES"""
import json
import sys


def main():
    name, allocator, own = sys.argv[1], sys.argv[2], int(sys.argv[3])
    e = json.load(sys.stdin)

    def fail(m):
        sys.exit(f"{name}: FAIL: explain: {m}: {json.dumps(e)}")

    if sum(e["parts"].values()) != e["total"]:
        fail("the parts do not add up")
    if e.get("allocator", {}).get("allocator") != allocator:
        fail(f"no statistics of {allocator}")
    s = e.get("sessions", {}).get("total")
    if s is None or abs(s - own) > 0.05 * own:
        fail(f"the sessions hold {s}, the server says {own}")
    r = [f for f in e["findings"] if f["kind"] == "allocator-retention"]
    if not r:
        fail("no allocator-retention finding")
    g = r[0]["gives_back"]
    print(g)
    print(f"{name}: explain: " + ", ".join(f"{k} {v >> 20}M" for k, v in e["parts"].items()) +
          f"; sessions {s >> 20}M (the server: {own >> 20}M); a trim would give back {g >> 20}M", file=sys.stderr)


if __name__ == "__main__":
    main()
