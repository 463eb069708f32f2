# SPDX-License-Identifier: GPL-2.0-or-later
"""A strict reader of the Prometheus text exposition format (version 0.0.4), for the tests:
every line is a HELP, a TYPE or a sample; a family's HELP and TYPE come before its samples and
once; names and label names are valid; label values are properly escaped; counters end in
_total; a histogram's buckets are cumulative, end with le="+Inf" and agree with _count.
parse(text) returns {family: {"type":..., "help":..., "samples": [(name, labels, value)]}} or
raises ValueError("line N: what is wrong")."""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def _value(s, n):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    try:
        return float(s)
    except ValueError:
        raise ValueError(f"line {n}: '{s}' is not a sample value") from None


def _labels(s, n):
    """s: the text between the braces. Returns a dict."""
    out, i = {}, 0
    while i < len(s):
        m = re.match(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"", s[i:])
        if not m:
            raise ValueError(f"line {n}: bad label at '{s[i:]}'")
        name = m.group(1)
        i += m.end()
        val = []
        while True:
            if i >= len(s):
                raise ValueError(f"line {n}: unterminated label value of {name}")
            c = s[i]
            if c == "\\":
                if i + 1 >= len(s) or s[i + 1] not in '\\"n':
                    raise ValueError(f"line {n}: bad escape in label {name}")
                val.append({"\\": "\\", '"': '"', "n": "\n"}[s[i + 1]])
                i += 2
                continue
            if c == '"':
                i += 1
                break
            if c == "\n":
                raise ValueError(f"line {n}: raw new line in label {name}")
            val.append(c)
            i += 1
        if name in out:
            raise ValueError(f"line {n}: label {name} twice")
        out[name] = "".join(val)
        if i < len(s):
            if s[i] != ",":
                raise ValueError(f"line {n}: expected ',' between labels at '{s[i:]}'")
            i += 1
    return out


def _family_of(name, families):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in families:
            base = name[: -len(suffix)]
            if families[base]["type"] in ("histogram", "summary"):
                return base
    return name


def parse(text):
    if not text.endswith("\n"):
        raise ValueError("the text does not end with a new line")
    families, done, current = {}, set(), None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if not line:
            raise ValueError(f"line {n}: empty line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"):
                continue  # a plain comment
            kind, name = parts[1], parts[2]
            if not NAME.match(name):
                raise ValueError(f"line {n}: bad metric name '{name}'")
            if name in done:
                raise ValueError(f"line {n}: family {name} appears again after other families")
            fam = families.setdefault(name, {"type": "untyped", "help": None, "samples": [], "typed": False})
            if fam["samples"]:
                raise ValueError(f"line {n}: {kind} for {name} after its samples")
            if kind == "HELP":
                if fam["help"] is not None:
                    raise ValueError(f"line {n}: second HELP for {name}")
                fam["help"] = parts[3] if len(parts) > 3 else ""
            else:
                if fam["typed"]:
                    raise ValueError(f"line {n}: second TYPE for {name}")
                if len(parts) < 4 or parts[3] not in TYPES:
                    raise ValueError(f"line {n}: bad type for {name}")
                fam["type"], fam["typed"] = parts[3], True
            if current and current != name:
                done.add(current)
            current = name
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( (-?\d+))?$", line)
        if not m:
            raise ValueError(f"line {n}: not a sample: '{line}'")
        name, labels, value = m.group(1), _labels(m.group(3) or "", n), _value(m.group(4), n)
        base = _family_of(name, families)
        if base in done:
            raise ValueError(f"line {n}: sample of {base} after other families")
        if base not in families:
            families[base] = {"type": "untyped", "help": None, "samples": [], "typed": False}
        if current and current != base:
            done.add(current)
        current = base
        fam = families[base]
        for key in labels:
            if not LABEL.match(key) or key.startswith("__"):
                raise ValueError(f"line {n}: bad label name '{key}'")
        if fam["type"] == "counter" and not name.endswith("_total"):
            raise ValueError(f"line {n}: counter {name} does not end in _total")
        if fam["type"] == "counter" and (value < 0 or math.isnan(value)):
            raise ValueError(f"line {n}: counter {name} is {value}")
        key = (name, tuple(sorted(labels.items())))
        if any((s[0], tuple(sorted(s[1].items()))) == key for s in fam["samples"]):
            raise ValueError(f"line {n}: the same series twice: {line}")
        fam["samples"].append((name, labels, value))
    for name, fam in families.items():
        if fam["type"] == "histogram":
            _check_histogram(name, fam)
    return families


def _check_histogram(name, fam):
    buckets = [(s[1], s[2]) for s in fam["samples"] if s[0] == name + "_bucket"]
    count = [s[2] for s in fam["samples"] if s[0] == name + "_count"]
    if not buckets or len(count) != 1 or not any(s[0] == name + "_sum" for s in fam["samples"]):
        raise ValueError(f"histogram {name}: expected buckets, one _sum and one _count")
    prev_le, prev = -math.inf, 0
    for labels, v in buckets:
        le = _value(labels.get("le", ""), 0)
        if le <= prev_le:
            raise ValueError(f"histogram {name}: le={labels.get('le')} does not increase")
        if v < prev:
            raise ValueError(f"histogram {name}: bucket le={labels.get('le')} is not cumulative")
        prev_le, prev = le, v
    if prev_le != math.inf:
        raise ValueError(f"histogram {name}: the last bucket is not le=\"+Inf\"")
    if prev != count[0]:
        raise ValueError(f"histogram {name}: +Inf bucket {prev} != _count {count[0]}")


def value(families, family, name=None, **labels):
    """The one sample of family (or of its series name) whose labels include labels."""
    found = [s[2] for s in families[family]["samples"]
             if (name is None or s[0] == name) and all(s[1].get(k) == v for k, v in labels.items())]
    if len(found) != 1:
        raise KeyError(f"{name or family}{labels}: {len(found)} samples")
    return found[0]
