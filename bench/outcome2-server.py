#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What happened to the server in one run of bench/outcome2, from the logs the guest collected
(server.journal, kernel.log, governor.log on the guest's monotonic clock; memory.log), as
KEY=VALUE lines (server.env).

  outcome2-server.py RESULTS GOVERNOR MAX_BYTES SETTING

A kill's cost: from systemd's "Main process exited, code=killed" to the next "ready for
connections" (both flavours say it), and within it the storage engine's recovery: from InnoDB's
first line about recovering (MariaDB: "To recover:" or "Starting crash recovery"; MySQL:
"Starting crash recovery") to its last line that says recover/recovery before the server is ready.
"""
import re
import sys

results, governor, max_bytes, setting = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
STAMP = re.compile(r"^\[\s*([\d.]+)\]\s+\S+\s+(.*)$")


def lines(name):
    try:
        text = open(f"{results}/{name}", errors="replace").read()
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        m = STAMP.match(line)
        if m:
            out.append((float(m.group(1)), m.group(2)))
    return out


server = lines("server.journal")
kernel = lines("kernel.log")
gov = lines("governor.log")

kills = [t for t, m in server if "Main process exited, code=killed" in m or "Main process exited, code=dumped" in m]
sigkills = sum(1 for _, m in server if "code=killed, status=9/KILL" in m)
sigterms = sum(1 for _, m in server if "code=killed, status=15/TERM" in m)
ready = [t for t, m in server if "ready for connections" in m]
recovery, engine = [], []
for k in kills:
    r = next((t for t in ready if t > k), None)
    if r is None:
        continue
    recovery.append(r - k)
    rec = [t for t, m in server if k < t < r and re.search(r"recover", m, re.I)]
    engine.append(rec[-1] - rec[0] if len(rec) > 1 else 0.0)

mem = []
for line in open(f"{results}/memory.log"):
    f = line.split()
    if len(f) >= 4 and f[1].isdigit():
        mem.append((float(f[0]), int(f[1]), int(f[3]) * 1024))
peak = max((m for _, m, _ in mem), default=0)
avail_min = min((a for _, _, a in mem), default=0)
rest = {}
try:
    rest = dict(line.strip().split("=", 1) for line in open(f"{results}/rest.env") if "=" in line)
except FileNotFoundError:
    pass

text = "\n".join(m for _, m in gov)
if governor.startswith("memgov"):
    acted = len(re.findall(r"memgov\[\d+\]: (?:trim|set memory\.high|set memory\.max|set max_connections|reset|restart|resize pool) ", text))
    ended = sum(int(n) for n in re.findall(r"-> reset (\d+) of \d+ session", text))
    # Admission's lowering carried to a new server process ends the clients over it: "ended 35 of
    # the 47 client(s) in".
    ended += sum(int(n) for n in re.findall(r"ended (\d+) (?:connection|session|of the \d+ client)", text))
    lowered = len(re.findall(r"set max_connections", text))
    raised = len(re.findall(r"set memory\.max", text))
elif governor == "earlyoom":
    acted = len(re.findall(r"sending SIG[A-Z]+ to process", text))
    ended = lowered = raised = 0
elif governor == "nohang":
    acted = len(re.findall(r"corrective action|implement", text, re.I))
    ended = lowered = raised = 0
elif governor == "oomd":
    acted = len(re.findall(r"killed", text, re.I))
    ended = lowered = raised = 0
elif governor == "manual":
    acted = len(gov) or sum(1 for _ in open(f"{results}/governor.log"))
    ended = lowered = raised = 0
else:
    acted = ended = lowered = raised = 0

print(f"setting={setting}")
print(f"limit_bytes={max_bytes}")
print(f"rest_bytes={rest.get('rest_bytes', 0)}")
print(f"dirty_pages={rest.get('dirty_pages', 0)}")
print(f"oom_kills={sum(1 for _, m in kernel if 'oom-kill:' in m)}")
print(f"sigkills={sigkills}")
print(f"sigterms={sigterms}")
print(f"starts={len(ready)}")
print(f"crash_recoveries={len(recovery)}")
print(f"recovery_seconds={sum(recovery):.1f}")
print(f"recovery_max_seconds={max(recovery, default=0):.1f}")
print(f"engine_recovery_seconds={sum(engine):.1f}")
print(f"graceful_restarts={text.count('graceful restart done')}")
print(f"peak_bytes={peak}")
print(f"over_limit_bytes={max(0, peak - max_bytes) if setting == 'container' else 0}")
print(f"mem_available_min={avail_min}")
print(f"governor_actions={acted}")
print(f"sessions_ended={ended}")
print(f"admission_lowerings={lowered}")
print(f"limit_raises={raised}")
