#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""memgov trim on a fragmented heap, for each allocator memgov knows: glibc (malloc_trim),
jemalloc (preloaded; mallctl arena.<all>.purge) and tcmalloc (preloaded; ReleaseFreeMemory).
Four threads fill their arenas with small blocks and free 63 in 64: RSS must fall by more than
half, and the workload must keep running. Before the trim, memgov explain asks the allocator
what it holds free: its parts must add up to the resident set, and what it says a trim gives
back must be within 20% of what the trim then gives back.
usage: trim-allocators.py MEMGOV MEMHOG"""
import json
import os
import subprocess
import sys
import time

MEMGOV, MEMHOG = sys.argv[1], sys.argv[2]
LIBS = {"glibc": None, "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
        "tcmalloc": "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"}


def fail(msg):
    print(f"trim-allocators: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    for name, lib in LIBS.items():
        if lib and not os.path.exists(lib):
            fail(f"{lib} is missing (scripts/setup-deps.sh --test installs it)")
        env = dict(os.environ)
        if lib:
            env["LD_PRELOAD"] = lib
        p = subprocess.Popen([MEMHOG, "fragment", "4", "48", "64"], stdout=subprocess.PIPE, text=True, env=env)
        try:
            line = p.stdout.readline()
            if not line.startswith("fragmented"):
                fail(f"{name}: the workload did not start: {line!r}")
            rep = None
            # The workload's threads wait in pause(); its main thread wakes every second:
            # a thread may be busy at the very moment, memgov retries.
            r = subprocess.run([MEMGOV, "explain", "--pid", str(p.pid), "--json"], capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"{name}: memgov explain failed: {r.stderr}")
            ex = json.loads(r.stdout)
            if ex.get("allocator", {}).get("allocator") != name:
                fail(f"{name}: explain read no statistics of {name}: {ex.get('not_measured')}")
            if sum(ex["parts"].values()) != ex["total"]:
                fail(f"{name}: the parts {ex['parts']} do not add up to {ex['total']}")
            retention = [f for f in ex["findings"] if f["kind"] == "allocator-retention"]
            if not retention:
                fail(f"{name}: no allocator-retention finding: {ex['findings']}")
            predicted = retention[0]["gives_back"]
            r = subprocess.run([MEMGOV, "trim", "--pid", str(p.pid), "--json"], capture_output=True, text=True)
            rep = json.loads(r.stdout)
            if r.returncode != 0 or not rep["ok"]:
                fail(f"{name}: {rep.get('error')}")
            if rep["allocator"] != name:
                fail(f"{name}: detected {rep['allocator']}")
            before, after = rep["rss_before"], rep["rss_after"]
            if not after or after > before / 2:
                fail(f"{name}: RSS {before >> 20}M -> {after >> 20}M, expected to fall by more than half")
            freed = before - after
            if abs(predicted - freed) > 0.2 * freed:
                fail(f"{name}: explain said a trim gives back {predicted >> 20}M, the trim gave back {freed >> 20}M")
            time.sleep(1.2)
            if p.poll() is not None or not p.stdout.readline().startswith("rss"):
                fail(f"{name}: the workload did not keep running")
            print(f"trim-allocators: ok: {name}: {rep['function']} in thread {rep['thread']} ({rep['syscall']}), "
                  f"held {rep['held_us']} us, call {rep['call_us'] / 1000:.1f} ms, RSS {before >> 20}M -> {after >> 20}M; "
                  f"explain said {predicted >> 20}M ({ex['allocator']['source']}, {ex['allocator']['calls']} calls)")
        finally:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
