#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Charts of `memgov plot` and `memgov replay --plot` on the replay golden traces.

    check-plot.py MEMGOV REPLAY_DIR PLOT_H

For every replay case that succeeds, draws the chart as PNG and as SVG and checks them against
what `memgov replay --json` says happened: the PNG's signature, header and CRCs; in its pixels,
each series' colour along the time axis (and none of a series the trace does not have); a
vertical marker in the colour of each kind of action that was decided (and no pixel of a kind
that was not); the SVG is well-formed and strokes the same series and markers. The colours are
read from plot.h. Then: replay --plot prints what replay prints and draws the same PNG, a
dry-run policy draws dashed markers, and the errors (unknown extension, unwritable file, a trace
that fails) exit non-zero with a message and leave no file behind. A trace with memgov explain's
figures has its parts filled where they are a pixel high or more; the others have no pixel of
them. A marker under one of a higher rank in the same column shows in the legend only. The
working set's line is unbroken on every golden trace (the daemon's own trace samples every 5 s
while calm and in bursts under pressure), and broken at a synthetic trace's hole only. Standard
library only."""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

WIDTH, HEIGHT = 1280, 800

failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)
    return cond


def run(memgov, args, cwd):
    return subprocess.run([memgov] + args, cwd=cwd, capture_output=True, text=True, timeout=120)


# ---- colours --------------------------------------------------------------------------------

SERIES = ["WORKING_SET", "MEMORY_CURRENT", "MEMORY_HIGH", "MEMORY_MAX", "BUDGET", "ETA"]
# memgov explain's parts a trace with its figures has (a pool, sessions, the allocator's free memory).
PARTS = ["PART_POOL", "PART_SESSIONS", "PART_ALLOCATOR_FREE"]
# The actions' markers take their colours from the registry of actions (src/core/action.c), the
# OOM kill's and the series' from plot.h. Which actions there are comes from that registry too
# (read_actions).
ACTIONS = {}
EVENTS = []
# Where markers share a pixel column, the one of the highest chart_rank shows (the OOM kill's
# above all).
RANKS = {"EVENT_OOM_KILL": 1 << 30}


def read_actions(action_c):
    """ACTION_X -> its marker, EVENT_X, for every row of the registry."""
    with open(action_c) as f:
        names = re.findall(r"^        \[ACTION_(\w+)\] = \{", f.read(), re.M)
    ACTIONS.update({n: "EVENT_" + n for n in names})
    EVENTS[:] = list(ACTIONS.values()) + ["EVENT_OOM_KILL"]


def read_colours(plot_h, action_c):
    with open(plot_h) as f:
        text = f.read()
    colours = {m.group(1): int(m.group(2), 16)
               for m in re.finditer(r"#define\s+PLOT_RGB_(\w+)\s+0x([0-9a-fA-F]{6})\b", text)}
    with open(action_c) as f:
        text = f.read()
    for m in re.finditer(r"\[ACTION_(\w+)\] = \{(.*?)\n        \},", text, re.S):
        c = re.search(r"\.chart_rgb = 0x([0-9a-fA-F]{6})\b", m.group(2))
        if m.group(1) in ACTIONS and c:
            colours[ACTIONS[m.group(1)]] = int(c.group(1), 16)
        rank = re.search(r"\.chart_rank = (\d+)", m.group(2))
        if m.group(1) in ACTIONS and rank:
            RANKS[ACTIONS[m.group(1)]] = int(rank.group(1))
    for name in SERIES + EVENTS + PARTS:
        if not check(name in colours, f"plot.h or the registry of actions defines the colour of {name}"):
            sys.exit(1)
    every = SERIES + EVENTS + [n for n in colours if n.startswith("PART_")]
    check(len(set(colours[n] for n in every)) == len(every), "the colours are all different")
    return colours


def rgb_tuple(c):
    return ((c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff)


# ---- PNG ------------------------------------------------------------------------------------

class Image:
    def __init__(self, width, height, rows):
        self.width, self.height, self.rows = width, height, rows  # rows: bytes, 3 per pixel

    def columns_with(self, rgb):
        """{x: [y, ...]} of the pixels of exactly this colour."""
        want = bytes(rgb)
        found = {}
        for y, row in enumerate(self.rows):
            i = row.find(want)
            while i >= 0:
                if i % 3 == 0:
                    found.setdefault(i // 3, []).append(y)
                i = row.find(want, i + 1)
        return found


def longest_run(ys):
    best = run_len = 0
    prev = None
    for y in sorted(ys):
        run_len = run_len + 1 if prev is not None and y == prev + 1 else 1
        best = max(best, run_len)
        prev = y
    return best


def gaps(img, rgb):
    """The runs of columns without a series' pixel between its first and last in the panels
    (below the legend, which ends above y 100), widest first."""
    xs = sorted(x for x, ys in img.columns_with(rgb_tuple(rgb)).items() if any(y > 100 for y in ys))
    return sorted((b - a - 1 for a, b in zip(xs, xs[1:]) if b - a > 1), reverse=True)


def widest_gap(img, rgb):
    return (gaps(img, rgb) or [0])[0]


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def decode_png(path, what):
    """Checks the signature, the chunks' CRCs, IHDR and IEND; returns an Image or None."""
    with open(path, "rb") as f:
        data = f.read()
    if not check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{what}: PNG signature"):
        return None
    pos, chunks = 8, []
    while pos + 12 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc, = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if not check(zlib.crc32(ctype + body) & 0xffffffff == crc, f"{what}: CRC of chunk {ctype!r}"):
            return None
        chunks.append((ctype, body))
        pos += 12 + length
    if not check(chunks and chunks[0][0] == b"IHDR", f"{what}: IHDR first"):
        return None
    check(chunks[-1][0] == b"IEND" and pos == len(data), f"{what}: IEND last, nothing after it")
    width, height, depth, ctype, comp, filt, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    check((width, height) == (WIDTH, HEIGHT), f"{what}: {width}x{height}, expected {WIDTH}x{HEIGHT}")
    if not check((depth, ctype, comp, filt, interlace) == (8, 2, 0, 0, 0),
                 f"{what}: 8-bit RGB, not interlaced (got depth {depth}, colour type {ctype}, interlace {interlace})"):
        return None
    raw = zlib.decompress(b"".join(body for t, body in chunks if t == b"IDAT"))
    stride, bpp = width * 3, 3
    if not check(len(raw) == height * (stride + 1), f"{what}: image data of {height} rows"):
        return None
    rows, prev = [], bytearray(stride)
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xff
        elif ftype == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 0xff
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xff
        elif ftype == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                upleft = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + paeth(left, prev[i], upleft)) & 0xff
        elif not check(ftype == 0, f"{what}: row {y} filter type {ftype}"):
            return None
        rows.append(bytes(line))
        prev = line
    return Image(width, height, rows)


# ---- SVG ------------------------------------------------------------------------------------

SVG_NS = "{http://www.w3.org/2000/svg}"


def parse_svg_colour(value):
    """'rgb(12.1%,46.6%,70.5%)' or 'rgb(31,119,180)' or '#1f77b4' -> (r, g, b)."""
    value = value.strip()
    if value.startswith("#") and len(value) == 7:
        return rgb_tuple(int(value[1:], 16))
    m = re.fullmatch(r"rgb\(([^)]*)\)", value)
    if not m:
        return None
    out = []
    for part in m.group(1).split(","):
        part = part.strip()
        out.append(round(float(part[:-1]) * 255 / 100) if part.endswith("%") else int(part))
    return tuple(out)


def svg_strokes(path, what):
    """[(rgb, style dict, width along x)] of the stroked paths, or None if not an SVG."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(False, f"{what}: well-formed XML ({e})")
        return None
    check(True, f"{what}: well-formed XML")
    if not check(root.tag == SVG_NS + "svg", f"{what}: root element is svg (got {root.tag})"):
        return None
    check(root.get("viewBox") == f"0 0 {WIDTH} {HEIGHT}", f"{what}: viewBox 0 0 {WIDTH} {HEIGHT} (got {root.get('viewBox')})")
    strokes = []
    for el in root.iter(SVG_NS + "path"):
        style = dict(kv.split(":", 1) for kv in (el.get("style") or "").split(";") if ":" in kv)
        stroke = style.get("stroke") or el.get("stroke")
        if not stroke or stroke == "none":
            continue
        rgb = parse_svg_colour(stroke)
        # cairo writes absolute M, L, C and Z commands: every other number is an x.
        xs = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", el.get("d") or "")][0::2]
        strokes.append((rgb, style, max(xs) - min(xs) if xs else 0))
    return strokes


# ---- what happened, from replay --json --------------------------------------------------------

JSON_KIND_TO_EVENT = {
    "trim": "EVENT_TRIM",
    "memory.high": "EVENT_SET_HIGH",
    "memory.max": "EVENT_SET_MAX",
    "reset": "EVENT_RESET",
    "restart": "EVENT_RESTART",
    "pool": "EVENT_POOL",
    "admission": "EVENT_ADMIT",
}


def expectations(memgov, args, cwd, trace):
    r = run(memgov, ["replay", "--json"] + args, cwd)
    if not check(r.returncode == 0, f"replay --json {' '.join(args)} exits 0 (got {r.returncode}: {r.stderr})"):
        return None
    doc = json.loads(r.stdout)
    events = set()
    times = {}
    eta = False
    for d in doc["decisions"]:
        kind = JSON_KIND_TO_EVENT.get(d["kind"])
        if d["kind"] == "event" and "OOM killer" in d["reason"]:
            kind = "EVENT_OOM_KILL"
        if kind:
            events.add(kind)
            times.setdefault(kind, []).append(d["time"]["mono_us"])
        if d.get("eta_s") is not None:
            eta = True
    # A kind's vertical marker shows where no marker of a higher rank shares its pixel column
    # (a pixel either way, of the time axis' 1170 or so).
    near = max(doc["summary"]["duration_us"], 60_000_000) / 1170
    shown = {k for k in events
             if any(all(abs(t - u) > near for h in events if RANKS.get(h, 0) > RANKS.get(k, 0)
                        for u in times.get(h, []))
                    for t in times.get(k, []))}
    with open(os.path.join(cwd, trace)) as f:
        lines = [line for line in f if line.strip() and not line.startswith("#")]
    columns = lines[0].strip().split(",")
    cgroup = "memory_current" in columns
    series = {"WORKING_SET", "BUDGET"} | ({"MEMORY_CURRENT", "MEMORY_HIGH", "MEMORY_MAX"} if cgroup else set())
    # memgov explain's parts: stacked under memory.current in a trace with its figures, as wide as
    # the figures a part has that are a pixel high or more: along the time axis where they all
    # are, somewhere where some are.
    parts = {}
    if "allocator_retention" in doc["summary"]:
        column_of = {"PART_POOL": "server_pool", "PART_SESSIONS": "server_sessions",
                     "PART_ALLOCATOR_FREE": "allocator_free"}
        rows = [dict(zip(columns, line.strip().split(","))) for line in lines[1:]]
        top = max(int(r["memory_current"]) for r in rows if r.get("memory_current", "").isdigit())
        pixel = top / 400  # the memory panel is 430 px high, its axis a little above the top
        for part, col in column_of.items():
            values = [int(r[col]) for r in rows if r.get(col, "").isdigit()]
            high = [v for v in values if v >= 2 * pixel]
            parts[part] = "along" if values and len(high) == len(values) else "some" if high else "none"
    return {"events": events, "shown": shown, "series": series, "eta": eta, "parts": parts}


# ---- the checks -------------------------------------------------------------------------------

def check_png(path, what, colours, exp):
    img = decode_png(path, what)
    if img is None:
        return
    for name in SERIES:
        cols = img.columns_with(rgb_tuple(colours[name]))
        if name == "ETA":
            if exp["eta"]:
                check(len(cols) >= 40, f"{what}: time-left line drawn ({len(cols)} columns)")
            continue
        if name in exp["series"]:
            # A legend swatch takes 26 columns; a series runs along the time axis (where memory.max
            # lies under the dashed budget, only the dashes' gaps show it whole).
            check(len(cols) >= 250, f"{what}: {name} drawn along the time axis ({len(cols)} columns)")
        else:
            check(len(cols) == 0, f"{what}: no {name} pixel (the trace has none; found {len(cols)} columns)")
    # None of the golden traces has a hole: the working set's line is unbroken, whatever the
    # cadence (a daemon's trace: every 5 s while calm, bursts many times a second under pressure).
    gap = widest_gap(img, colours["WORKING_SET"])
    check(gap == 0, f"{what}: the working set's line unbroken (widest gap {gap} px)")
    for name in EVENTS:
        cols = img.columns_with(rgb_tuple(colours[name]))
        run_len = max((longest_run(ys) for ys in cols.values()), default=0)
        if name in exp["shown"]:
            # The legend's swatch is 14 px high; a marker crosses both panels, but lines drawn
            # over it (a working set dropping at an OOM kill) cut it.
            check(run_len >= 50, f"{what}: a vertical {name} marker (longest run {run_len} px)")
        elif name in exp["events"]:
            # Under a marker of a higher rank each time: its legend swatch only.
            check(len(cols) > 0, f"{what}: {name} in the legend")
        else:
            check(len(cols) == 0, f"{what}: no {name} pixel (no such action; found {len(cols)} columns)")
    for name in PARTS:
        cols = img.columns_with(rgb_tuple(colours[name]))
        where = exp["parts"].get(name)
        if where == "along":
            # A band along the time axis (the legend's swatch is 10 px wide).
            check(len(cols) >= 250, f"{what}: {name} filled along the time axis ({len(cols)} columns)")
        elif where == "some":
            check(len(cols) > 20, f"{what}: {name} filled where it is a pixel high ({len(cols)} columns)")
        elif where is None:
            check(len(cols) == 0, f"{what}: no {name} pixel (the trace has no explain figures; found {len(cols)})")


def check_svg(path, what, colours, exp):
    strokes = svg_strokes(path, what)
    if strokes is None:
        return
    for name in SERIES:
        rgb = rgb_tuple(colours[name])
        widest = max((w for c, _, w in strokes if c == rgb), default=0)
        if name == "ETA":
            if exp["eta"]:
                check(widest >= 40, f"{what}: time-left path ({widest:.0f} wide)")
            continue
        if name in exp["series"]:
            # The legend's swatch is 26 wide; a series runs along the time axis.
            check(widest >= WIDTH / 2, f"{what}: {name} path along the time axis ({widest:.0f} wide)")
        else:
            check(widest == 0, f"{what}: no {name} stroke")
    for name in EVENTS:
        rgb = rgb_tuple(colours[name])
        n = sum(1 for c, _, _ in strokes if c == rgb)
        if name in exp["events"]:
            check(n >= 2, f"{what}: {name} markers and legend stroked ({n})")
        else:
            check(n == 0, f"{what}: no {name} stroke ({n})")


def cases(replay_dir):
    """(name, arguments) of the replay golden cases that exit 0, without the output flags."""
    out = []
    for fn in sorted(os.listdir(replay_dir)):
        if not fn.endswith(".case"):
            continue
        name = fn[:-5]
        with open(os.path.join(replay_dir, fn)) as f:
            args = f.read().split()
        with open(os.path.join(replay_dir, name + ".expected")) as f:
            if not f.read().rstrip().endswith("--- exit status 0"):
                continue
        out.append((name, [a for a in args if a not in ("--json", "-j", "--summary", "-s")]))
    return out


def main():
    memgov, replay_dir, plot_h, action_c = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3], sys.argv[4]
    read_actions(action_c)
    check(len(ACTIONS) >= 7, f"the registry of actions read: {sorted(ACTIONS)}")
    colours = read_colours(plot_h, action_c)
    all_cases = cases(replay_dir)
    check(len(all_cases) >= 4, f"at least 4 replay cases to draw (found {len(all_cases)})")

    with tempfile.TemporaryDirectory(prefix="memgov-plot-") as tmp:
        with_actions = without_actions = 0
        for name, args in all_cases:
            trace = args[-1]
            exp = expectations(memgov, args, replay_dir, trace)
            if exp is None:
                continue
            if exp["events"]:
                with_actions += 1
            else:
                without_actions += 1

            png, svg = os.path.join(tmp, name + ".png"), os.path.join(tmp, name + ".svg")
            for out in (png, svg):
                r = run(memgov, ["plot", "-o", out] + args, replay_dir)
                check(r.returncode == 0, f"plot {name} -> {os.path.basename(out)} exits 0 (got {r.returncode}: {r.stderr})")
                check(r.stdout == "" and r.stderr == "", f"plot {name}: silent (stdout {r.stdout[:80]!r}, stderr {r.stderr[:80]!r})")
            if os.path.exists(png):
                check_png(png, f"{name}.png", colours, exp)
            else:
                check(False, f"{name}.png written")
            if os.path.exists(svg):
                check_svg(svg, f"{name}.svg", colours, exp)
            else:
                check(False, f"{name}.svg written")

            # replay --plot: the same text as replay, the same chart as plot.
            plain = run(memgov, ["replay"] + args, replay_dir)
            png2 = os.path.join(tmp, name + "-replay.png")
            r = run(memgov, ["replay", "--plot", png2] + args, replay_dir)
            check(r.returncode == 0, f"replay --plot {name} exits 0 (got {r.returncode}: {r.stderr})")
            check(r.stdout == plain.stdout and plain.stdout.startswith("memgov replay of"),
                  f"replay --plot {name} prints what replay prints")
            if os.path.exists(png2) and os.path.exists(png):
                with open(png, "rb") as a, open(png2, "rb") as b:
                    check(a.read() == b.read(), f"replay --plot {name} draws the chart plot draws")
            else:
                check(False, f"replay --plot {name} writes {png2}")
        check(with_actions >= 2, f"cases with actions drawn ({with_actions})")
        check(without_actions >= 1, f"cases without actions drawn ({without_actions})")

        # An upper-case extension is the same format.
        upper = os.path.join(tmp, "upper.PNG")
        r = run(memgov, ["plot", "-o", upper, "cron-trim-sawtooth.csv"], replay_dir)
        check(r.returncode == 0 and os.path.exists(upper), f"plot -o X.PNG works (exit {r.returncode}: {r.stderr})")
        if os.path.exists(upper):
            check(decode_png(upper, "upper.PNG") is not None, "upper.PNG is a PNG")

        # Dry run: the same markers, dashed.
        policy = os.path.join(tmp, "dry-run.ini")
        with open(policy, "w") as f:
            f.write("[governor]\ndry-run = yes\n")
        exp = expectations(memgov, ["session-growth.csv"], replay_dir, "session-growth.csv")
        dry_png, dry_svg = os.path.join(tmp, "dry.png"), os.path.join(tmp, "dry.svg")
        for out in (dry_png, dry_svg):
            r = run(memgov, ["plot", "--policy", policy, "-o", out, "session-growth.csv"], replay_dir)
            check(r.returncode == 0, f"plot with a dry-run policy exits 0 (got {r.returncode}: {r.stderr})")
        if exp and check(os.path.exists(dry_png) and os.path.exists(dry_svg), "dry-run charts written"):
            img = decode_png(dry_png, "dry.png")
            strokes = svg_strokes(dry_svg, "dry.svg") or []
            check(len(exp["events"] - {"EVENT_OOM_KILL"}) >= 3, "session-growth has actions of several kinds")
            for name in exp["events"] - {"EVENT_OOM_KILL"}:
                rgb = rgb_tuple(colours[name])
                if img:
                    cols = img.columns_with(rgb)
                    run_len = max((longest_run(ys) for ys in cols.values()), default=0)
                    check(cols and run_len < 20, f"dry.png: {name} markers dashed (longest run {run_len} px)")
                markers = [st for c, st, _ in strokes if c == rgb and "stroke-dasharray" in st]
                check(len(markers) >= 1, f"dry.svg: {name} markers with a dash pattern")
            rgb = rgb_tuple(colours["EVENT_OOM_KILL"])
            if img:
                cols = img.columns_with(rgb)
                run_len = max((longest_run(ys) for ys in cols.values()), default=0)
                check(run_len >= 50, f"dry.png: the OOM kill, observed, stays solid ({run_len} px)")

        # Holes: a plain log every 5 s for 25 minutes with 10 minutes missing after the first 5,
        # and a burst of samples 5 times a second for a minute: the line breaks at the hole (two
        # fifths of the time axis: 470 px or so), nowhere else.
        log = os.path.join(tmp, "holes.csv")
        with open(log, "w") as f:
            f.write("Timestamp, RSS_MB\n")
            t = 0.0
            while t <= 1500:
                if not 300 < t < 900:
                    f.write(f"{t:.1f}, {2000 + t / 10:.0f}\n")
                t += 0.2 if 1000 <= t < 1060 else 5
        holes_png = os.path.join(tmp, "holes.png")
        r = run(memgov, ["plot", "--budget", "4G", "-o", holes_png, log], tmp)
        if check(r.returncode == 0 and os.path.exists(holes_png), f"plot holes.csv exits 0 ({r.stderr})"):
            img = decode_png(holes_png, "holes.png")
            if img:
                found = gaps(img, colours["WORKING_SET"])
                check(len(found) >= 1 and 440 <= found[0] <= 500 and all(g <= 3 for g in found[1:]),
                      f"holes.png: the working set's line broken at the hole only (gaps {found[:4]} px)")

        # Errors.
        for verb_args in (["plot", "-o", os.path.join(tmp, "chart.jpg")],
                          ["replay", "--plot", os.path.join(tmp, "chart.jpg")],
                          ["plot", "-o", os.path.join(tmp, "chart")]):
            r = run(memgov, verb_args + ["cron-trim-sawtooth.csv"], replay_dir)
            what = " ".join(verb_args[:2]) + " " + os.path.basename(verb_args[2])
            check(r.returncode == 2, f"{what}: exit status 2 (got {r.returncode})")
            check(os.path.basename(verb_args[2]) in r.stderr and ".svg" in r.stderr and ".png" in r.stderr,
                  f"{what}: says which file and which formats are supported ({r.stderr.strip()!r})")
            check(r.stdout == "", f"{what}: prints nothing on stdout")
            check(not os.path.exists(verb_args[2]), f"{what}: writes no file")

        missing = os.path.join(tmp, "no-such-dir", "chart.png")
        for verb_args in (["plot", "-o", missing], ["replay", "--plot", missing]):
            r = run(memgov, verb_args + ["cron-trim-sawtooth.csv"], replay_dir)
            what = " ".join(verb_args[:2]) + " into a missing directory"
            check(r.returncode == 1, f"{what}: exit status 1 (got {r.returncode})")
            check(missing in r.stderr and os.strerror(2) in r.stderr,
                  f"{what}: names the file and says why ({r.stderr.strip()!r})")
            check(r.stdout == "", f"{what}: no replay output before the error ({r.stdout[:60]!r})")

        a_dir = os.path.join(tmp, "dir.png")
        os.mkdir(a_dir)
        r = run(memgov, ["plot", "-o", a_dir, "cron-trim-sawtooth.csv"], replay_dir)
        check(r.returncode == 1 and a_dir in r.stderr and os.strerror(21) in r.stderr,
              f"plot -o DIRECTORY.png: exit 1 and why (got {r.returncode}: {r.stderr.strip()!r})")

        r = run(memgov, ["plot", "cron-trim-sawtooth.csv"], replay_dir)
        check(r.returncode == 2 and "-o" in r.stderr, f"plot without -o: exit 2 and says so (got {r.returncode}: {r.stderr.strip()!r})")

        # A trace that fails (no budget) leaves no chart behind.
        failed = os.path.join(tmp, "failed.png")
        r = run(memgov, ["plot", "-o", failed, "mariadb-retention.csv"], replay_dir)
        check(r.returncode == 1 and "no budget" in r.stderr, f"plot of a trace without a budget: exit 1 (got {r.returncode}: {r.stderr.strip()!r})")
        check(not os.path.exists(failed), "plot of a failing trace leaves no file")
        with open(failed, "w") as f:
            f.write("an older chart\n")
        r = run(memgov, ["replay", "--plot", failed, "mariadb-retention.csv"], replay_dir)
        with open(failed) as f:
            check(r.returncode == 1 and f.read() == "an older chart\n",
                  f"replay --plot of a failing trace keeps the file that was there (exit {r.returncode})")
        leftovers = [fn for fn in os.listdir(tmp) if re.search(r"\.(png|svg|jpg|PNG)\.", fn)]
        check(not leftovers, f"no temporary file left behind ({leftovers})")
        mode = os.stat(upper).st_mode & 0o777 if os.path.exists(upper) else 0
        umask = os.umask(0)
        os.umask(umask)
        check(mode == 0o666 & ~umask, f"the chart has the permissions of a new file ({oct(mode)})")

    print(f"{checks} checks, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
