#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Client workloads for a MariaDB server, through the mariadb command-line client (one process
per session, kept open: a session is a connection).

  sessions.py SOCKET leaky USER PASSWORD COUNT MB_PER_STEP SECONDS
      COUNT sessions that each add MB_PER_STEP MiB of user variables every second: memory only
      the end of the session frees. Prints "leaky ended N" as sessions end (killed or done).
  sessions.py SOCKET normal USER PASSWORD SECONDS
      one session asking a small query ten times a second, checking every answer; reconnects
      if its session ends. Prints "normal ok=N errors=M reconnects=K" at the end.
  sessions.py SOCKET still USER PASSWORD MB SECONDS
      one session that sets MB MiB of user variables at once, then holds them, idle; at the end
      (or SIGTERM) asks one query. Prints "still set" once they are set, then "still alive" or
      "still ended".
  sessions.py SOCKET reader USER PASSWORD SECONDS TABLE ROWS
      as normal, but each query counts 100 rows of TABLE (ids 1 to ROWS) at a random place, so
      that the answers come from the buffer pool or, once evicted, from disk.
SIGTERM ends the normal and reader sessions early, with their line printed.
SESSIONS_CLIENT, if set, is the client's command line up to its options (split as a shell would),
e.g. a server's own client run in its root with nsenter; SOCKET is then the socket as that client
sees it. By default it is the host's mariadb client.
"""
import os
import random
import shlex
import signal
import subprocess
import sys
import time


def client(sock, user, password):
    command = shlex.split(os.environ.get("SESSIONS_CLIENT", "mariadb"))
    return subprocess.Popen(command + ["--no-defaults", "-S", sock, "-u", user, f"-p{password}", "-N", "-B", "-n"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            bufsize=1)


def leaky(sock, user, password, count, mb, seconds):
    procs = [client(sock, user, password) for _ in range(count)]
    ended = set()
    end = time.monotonic() + seconds
    step = 0
    while time.monotonic() < end and len(ended) < count:
        for i, p in enumerate(procs):
            if i in ended:
                continue
            try:
                p.stdin.write("".join(f"SET @v{step}_{j} = REPEAT('x', 1048576 + {j});" for j in range(mb)) + "\n")
                p.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
            if p.poll() is not None:
                ended.add(i)
                print(f"leaky ended {len(ended)}", flush=True)
        step += 1
        time.sleep(1)
    for p in procs:
        if p.poll() is None:
            p.kill()
    print(f"leaky done, {len(ended)} of {count} ended by the server", flush=True)


def still(sock, user, password, mb, seconds):
    p = client(sock, user, password)
    p.stdin.write("".join(f"SET @s{j} = REPEAT('x', 1048576 + {j});" for j in range(mb)) + "SELECT 'set';\n")
    p.stdin.flush()
    if p.stdout.readline().strip() != "set":
        print("still not set", flush=True)
        sys.exit(1)
    print("still set", flush=True)
    end = time.monotonic() + seconds
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while time.monotonic() < end and not stop and p.poll() is None:
        time.sleep(0.1)
    try:
        p.stdin.write("SELECT 6 * 7;\n")
        p.stdin.flush()
        alive = p.stdout.readline().strip() == "42"
    except (BrokenPipeError, OSError):
        alive = False
    p.kill()
    print("still alive" if alive else "still ended", flush=True)


def normal(sock, user, password, seconds, table=None, rows=0):
    ok = errors = reconnects = 0
    p = client(sock, user, password)
    end = time.monotonic() + seconds
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    while time.monotonic() < end and not stop:
        try:
            if table:
                n = random.randint(0, rows - 100)
                p.stdin.write(f"SELECT COUNT(*) FROM {table} WHERE id > {n} AND id <= {n + 100};\n")
                expect = "100"
            else:
                p.stdin.write("SELECT 6 * 7;\n")
                expect = "42"
            p.stdin.flush()
            line = p.stdout.readline().strip()
            if line == expect:
                ok += 1
            else:
                raise OSError("no answer")
        except (BrokenPipeError, OSError):
            errors += 1
            p.kill()
            time.sleep(0.5)
            p = client(sock, user, password)
            reconnects += 1
        time.sleep(0.1)
    p.kill()
    print(f"normal ok={ok} errors={errors} reconnects={reconnects}", flush=True)


if __name__ == "__main__":
    sock, mode = sys.argv[1], sys.argv[2]
    if mode == "leaky":
        leaky(sock, sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7]))
    elif mode == "still":
        still(sock, sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
    elif mode == "reader":
        normal(sock, sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6], int(sys.argv[7]))
    else:
        normal(sock, sys.argv[3], sys.argv[4], float(sys.argv[5]))
