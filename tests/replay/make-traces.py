#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Writes the synthetic traces of the replay golden tests. Deterministic (fixed seeds): rerun it
only to change a trace on purpose, then regenerate the expected outputs with
run-golden.sh --update and read the diff."""
import datetime
import random

MB = 1 << 20
GB = 1 << 30

COLUMNS = ("mono_us,wall_us,utc_offset,memory_current,memory_high,memory_max,anon,file,"
           "inactive_file,active_file,shmem,events_low,events_high,events_max,events_oom,"
           "events_oom_kill,events_oom_group_kill,psi_some_avg10,psi_some_avg60,psi_some_avg300,"
           "psi_some_total,psi_full_avg10,psi_full_avg60,psi_full_avg300,psi_full_total,pid,rss,"
           "rss_anon,anon_maps,threads,uptime_us,host_total,ws,failed,trim_freed,reset_freed").split(",")


def dba_log(path):
    """The MariaDB retention test: RSS grows ~850 MB/h from 8.9 GB, one line a minute."""
    rng = random.Random(1)
    t0 = datetime.datetime(2026, 8, 10, 23, 9, 57)
    with open(path, "w") as f:
        f.write("Timestamp, RSS_MB\n")
        for i in range(27 * 60):
            t = t0 + datetime.timedelta(minutes=i)
            v = 8935 + 850 * i / 60 + rng.gauss(0, 25)
            f.write(f"{t:%Y-%m-%d %H:%M:%S}, {v:.0f}\n")


def epoch_kb(path):
    """Epoch seconds and kB, tab separated, a log line every 5 minutes over two days, with
    a plateau: rises 300 MB/h for 20h then levels off."""
    rng = random.Random(2)
    start = 1786320000  # 2026-08-10 00:00:00 UTC
    with open(path, "w") as f:
        f.write("epoch\trss_kb\n")
        for i in range(0, 48 * 12):
            h = i / 12
            v = 4 * GB + min(h, 20) * 300 * MB + rng.gauss(0, 8 * MB)
            f.write(f"{start + i * 300}\t{int(v) // 1024}\n")


def row(d):
    return ",".join(str(d.get(c, "")) for c in COLUMNS)


def cron_trim_sawtooth(path):
    """memgov's own format, recorded in dry run: a fragmenting heap grows 2 G/h under
    memory.max 8G while a cron job outside memgov calls malloc_trim every 10 minutes and gets
    back 70 % of what accumulated: a sawtooth that must not fool the trend."""
    rng = random.Random(3)
    wall0 = 1786363200 * 10**6  # Monday 2026-08-10 12:00:00 UTC
    anon = 5.2 * GB
    step = 5
    with open(path, "w") as f:
        f.write("# memgov trace\n" + ",".join(COLUMNS) + "\n")
        for i in range(0, 3 * 3600 // step):
            t = i * step
            anon += 2.0 * GB / 3600 * step + rng.gauss(0, 2 * MB)
            if t > 0 and t % 600 == 0:
                anon -= 0.7 * max(0.0, anon - 5.0 * GB)
            d = {"mono_us": 50 * 10**6 + t * 10**6, "wall_us": wall0 + t * 10**6, "utc_offset": 0}
            inactive = 300 * MB + rng.randint(0, 20) * MB
            cur = int(anon + inactive + 200 * MB)
            d.update({"memory_current": cur, "memory_high": "max", "memory_max": 8 * GB,
                      "anon": int(anon), "file": int(inactive + 200 * MB), "inactive_file": int(inactive),
                      "active_file": 200 * MB, "shmem": 0,
                      "events_low": 0, "events_high": 0, "events_max": 0, "events_oom": 0,
                      "events_oom_kill": 0, "events_oom_group_kill": 0,
                      "psi_some_avg10": "0.00", "psi_some_avg60": "0.00", "psi_some_avg300": "0.00",
                      "psi_some_total": 1000 + i, "psi_full_avg10": "0.00", "psi_full_avg60": "0.00",
                      "psi_full_avg300": "0.00", "psi_full_total": 500 + i,
                      "pid": 4242, "rss": int(anon + 150 * MB), "rss_anon": int(anon), "anon_maps": 120 + i // 100,
                      "threads": 48, "uptime_us": (7200 + t) * 10**6, "host_total": 16 * GB})
            f.write(row(d) + "\n")


def session_growth(path):
    """memgov's own format: per-session memory grows 3 G/h under memory.max 16G with nothing
    acting (a dry-run recording); memory.high events and PSI rise near the limit, the kernel
    OOM-kills the server, which comes back with a new pid."""
    rng = random.Random(4)
    wall0 = 1786363200 * 10**6
    step = 10
    ws = 9 * GB
    pid, uptime0 = 3100, 0
    ev_high = ev_max = oom = oom_kill = 0
    psi_total = 0
    with open(path, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for i in range(0, 4 * 3600 // step):
            t = i * step
            ws += 3.0 * GB / 3600 * step + rng.gauss(0, 5 * MB)
            share = ws / (16 * GB)
            full = max(0.0, (share - 0.90) * 400) if share > 0.9 else 0.0
            if share > 0.95:
                ev_high += 40
                ev_max += 5
            if ws >= 16 * GB:
                oom += 1
                oom_kill += 1
                pid += 1
                uptime0 = t
                ws = 2.5 * GB
                full = 0.0
            psi_total += int(full * 10000)
            inactive = 100 * MB
            d = {"mono_us": t * 10**6, "wall_us": wall0 + t * 10**6, "utc_offset": 7200,
                 "memory_current": int(ws + inactive), "memory_high": "max", "memory_max": 16 * GB,
                 "anon": int(ws), "file": int(inactive), "inactive_file": int(inactive), "active_file": 0,
                 "shmem": 0, "events_low": 0, "events_high": ev_high, "events_max": ev_max,
                 "events_oom": oom, "events_oom_kill": oom_kill, "events_oom_group_kill": 0,
                 "psi_some_avg10": f"{min(full * 1.5, 100):.2f}", "psi_some_avg60": f"{min(full, 100):.2f}",
                 "psi_some_avg300": "0.00", "psi_some_total": psi_total * 2,
                 "psi_full_avg10": f"{min(full, 100):.2f}", "psi_full_avg60": f"{min(full * 0.6, 100):.2f}",
                 "psi_full_avg300": "0.00", "psi_full_total": psi_total,
                 "pid": pid, "rss": int(ws), "rss_anon": int(ws), "anon_maps": 300, "threads": 80,
                 "uptime_us": (86400 + t - uptime0) * 10**6 if uptime0 == 0 else (t - uptime0) * 10**6,
                 "host_total": 32 * GB}
            f.write(row(d) + "\n")


def connection_storm(path):
    """memgov's own format with the server's connection count (recorded in dry run), a sample
    every 2 s, under memory.max 2G: 1.48G and 30 connections; a storm of new sessions from the
    third minute, one every 5 s, each holding 1M (0.7G/h); the storm ends fifteen minutes later at
    210 connections (as it would once admission refuses the rest), the sessions leave five minutes
    later (the working set back to 1.3G), and it stays calm for forty minutes more."""
    rng = random.Random(5)
    wall0 = 1786363200 * 10**6
    columns = COLUMNS + ["connections"]
    conns = 30
    step = 2
    with open(path, "w") as f:
        f.write("# memgov trace\n" + ",".join(columns) + "\n")
        for t in range(0, 3600, step):
            if 120 <= t < 1020 and t % 5 < step:
                conns += 1
            elif t == 1320:
                conns = 30
            base = 1.48 * GB if t < 1320 else 1.3 * GB
            ws = base + (conns - 30) * MB + rng.gauss(0, 0.5 * MB)
            inactive = 50 * MB
            d = {"mono_us": 50 * 10**6 + t * 10**6, "wall_us": wall0 + t * 10**6, "utc_offset": 0,
                 "memory_current": int(ws + inactive), "memory_high": "max", "memory_max": 2 * GB,
                 "anon": int(ws), "file": int(inactive), "inactive_file": int(inactive), "active_file": 0,
                 "shmem": 0, "events_low": 0, "events_high": 0, "events_max": 0, "events_oom": 0,
                 "events_oom_kill": 0, "events_oom_group_kill": 0,
                 "psi_some_avg10": "0.00", "psi_some_avg60": "0.00", "psi_some_avg300": "0.00",
                 "psi_some_total": 1000 + t, "psi_full_avg10": "0.00", "psi_full_avg60": "0.00",
                 "psi_full_avg300": "0.00", "psi_full_total": 500 + t,
                 "pid": 5150, "rss": int(ws), "rss_anon": int(ws), "anon_maps": 40, "threads": 20 + conns,
                 "uptime_us": (86400 + t) * 10**6, "host_total": 8 * GB, "connections": conns + 1}
            f.write(",".join(str(d.get(c, "")) for c in columns) + "\n")

def allocator_retention(path):
    """memgov's own format as the daemon records it with memgov explain's figures (explain.every
    5 minutes: they change every tenth row): a MariaDB under memory.max 4G, a sample every 30 s
    for four hours, its buffer pool 1G, its sessions 600M, its own count 300M, and glibc holding
    free memory that grows 200 MB/h from 50M (retention: nothing in use grows). memory.high is
    where the acting daemon set it: the budget less throttle.calm-headroom (3%)."""
    rng = random.Random(6)
    wall0 = 1786363200 * 10**6
    columns = COLUMNS + ["server_pool", "server_accounted", "server_sessions", "allocator_free", "allocator_in_use"]
    step = 30
    with open(path, "w") as f:
        f.write("# memgov trace\n# memgov: acting\n" + ",".join(columns) + "\n")
        measured = None
        for t in range(0, 4 * 3600, step):
            free = 50 * MB + 200 * MB * t / 3600 + rng.gauss(0, 2 * MB)
            sessions = 600 * MB + rng.gauss(0, 4 * MB)
            anon = 1 * GB + sessions + 300 * MB + free + 40 * MB
            inactive, active = 60 * MB, 40 * MB
            if t % 300 == 0:
                measured = {"server_pool": 1 * GB, "server_accounted": int(sessions + 300 * MB),
                            "server_sessions": int(sessions), "allocator_free": int(free),
                            "allocator_in_use": int(sessions + 300 * MB + 20 * MB)}
            d = {"mono_us": 10**6 + t * 10**6, "wall_us": wall0 + t * 10**6, "utc_offset": 0,
                 "memory_current": int(anon + inactive + active + 8 * MB), "memory_high": 4166115328,
                 "memory_max": 4 * GB, "anon": int(anon), "file": inactive + active,
                 "inactive_file": inactive, "active_file": active, "shmem": 0,
                 "pid": 4242, "rss": int(anon + 30 * MB), "rss_anon": int(anon), "anon_maps": 60,
                 "threads": 80, "uptime_us": (86400 + t) * 10**6, "host_total": 16 * GB}
            d.update(measured)
            f.write(",".join(str(d.get(c, "")) for c in columns) + "\n")


if __name__ == "__main__":
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    dba_log(os.path.join(here, "mariadb-retention.csv"))
    epoch_kb(os.path.join(here, "plateau-epoch-kb.tsv"))
    cron_trim_sawtooth(os.path.join(here, "cron-trim-sawtooth.csv"))
    session_growth(os.path.join(here, "session-growth.csv"))
    connection_storm(os.path.join(here, "connection-storm.csv"))
    allocator_retention(os.path.join(here, "allocator-retention.csv"))
