#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The exposition checker the metrics test relies on refuses what Prometheus would refuse."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exposition  # noqa: E402

GOOD = """# HELP a_total Things.
# TYPE a_total counter
a_total{x="1"} 3
# HELP h Stop time.
# TYPE h histogram
h_bucket{le="0.1"} 1
h_bucket{le="+Inf"} 2
h_sum 0.3
h_count 2
# TYPE g gauge
g{l="a\\"b\\\\c\\nd"} +Inf
"""
BAD = {
    "no final new line": GOOD.rstrip("\n"),
    "counter without _total": "# TYPE a counter\na 1\n",
    "negative counter": "# TYPE a_total counter\na_total -1\n",
    "bad escape": '# TYPE g gauge\ng{l="a\\q"} 1\n',
    "unterminated label": '# TYPE g gauge\ng{l="a} 1\n',
    "TYPE after samples": "g 1\n# TYPE g gauge\n",
    "family split": "# TYPE g gauge\ng 1\n# TYPE k gauge\nk 1\ng{a=\"1\"} 2\n",
    "duplicate series": "# TYPE g gauge\ng 1\ng 2\n",
    "histogram not cumulative": "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
    "histogram without +Inf": "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n",
    "histogram count mismatch": "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
    "bad value": "# TYPE g gauge\ng one\n",
    "bad name": "# TYPE 1g gauge\n",
    "empty line": "# TYPE g gauge\n\ng 1\n",
    "reserved label": '# TYPE g gauge\ng{__x="1"} 1\n',
}

fams = exposition.parse(GOOD)
assert exposition.value(fams, "g") == float("inf")
assert fams["g"]["samples"][0][1]["l"] == 'a"b\\c\nd'
assert exposition.value(fams, "h", name="h_count") == 2
for what, text in BAD.items():
    try:
        exposition.parse(text)
    except ValueError:
        continue
    print(f"exposition-selftest: FAIL: accepted: {what}", file=sys.stderr)
    sys.exit(1)
print(f"exposition-selftest: ok: a valid text parsed, {len(BAD)} malformed ones refused")
