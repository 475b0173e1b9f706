#!/usr/bin/env python3
"""Tables for benches/peers/stream.sh: MB/s per arm (median of the rounds) and the issue 29
ratios, each the median of per-round ratios with its min-max, and their geometric means.

usage: stream_report.py RESULTS.tsv CASES.tsv ROUNDS
RESULTS.tsv lines: payload, arm, round, MB/s.
"""
import math
import statistics
import sys
from collections import defaultdict

results, cases, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
ARMS = ["stream", "tree", "tree_interp", "prost", "protozero"]
# (numerator, denominator, the goal for the ratio or None)
PAIRS = [
    ("stream", "protozero", "≥ 1.0 each, ≥ 1.3 geomean"),
    ("stream", "tree", "≥ 1.3"),
    ("tree", "prost", None),
    ("stream", "prost", None),
    ("tree", "protozero", None),
    ("tree_interp", "prost", None),
]

mbs = defaultdict(dict)  # (payload, arm) -> {round: MB/s}
for line in open(results):
    payload, arm, rnd, v = line.rstrip("\n").split("\t")
    mbs[(payload, arm)][int(rnd)] = float(v)
names = [line.split("\t")[0] for line in open(cases)]


def ratio(n, a, b):
    x, y = mbs[(n, a)], mbs[(n, b)]
    per = [x[r] / y[r] for r in x if r in y and y[r] > 0]
    return statistics.median(per), min(per), max(per)


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


print(f"Throughput, MB/s (10^6 B/s of payload), median of {rounds} interleaved rounds.")
print()
print("| payload | " + " | ".join(ARMS) + " |")
print("|---|" + "---:|" * len(ARMS))
for n in names:
    cells = [f"{statistics.median(mbs[(n, a)].values()):.0f}" for a in ARMS]
    print(f"| {n} | " + " | ".join(cells) + " |")
print()
print("Ratios (median of per-round ratios, min–max over the rounds; > 1: the first is faster).")
print()
print("| payload | " + " | ".join(f"{a} ÷ {b}" for a, b, _ in PAIRS) + " |")
print("|---|" + "---:|" * len(PAIRS))
meds = defaultdict(list)
for n in names:
    cells = []
    for a, b, _ in PAIRS:
        m, lo, hi = ratio(n, a, b)
        meds[(a, b)].append(m)
        cells.append(f"{m:.2f} ({lo:.2f}–{hi:.2f})")
    print(f"| {n} | " + " | ".join(cells) + " |")
for label, sel in [("geomean, OSM blocks", "osm_"), ("geomean, tiles", "mvt_"), ("**geomean, all 7**", "")]:
    cells = []
    for a, b, _ in PAIRS:
        v = [m for n, m in zip(names, meds[(a, b)]) if n.startswith(sel)]
        cells.append(f"{geomean(v):.2f}")
    print(f"| {label} | " + " | ".join(cells) + " |")
print()
print("Goals (issue 29):")
for a, b, goal in PAIRS:
    if goal is None:
        continue
    v = meds[(a, b)]
    below = [f"{n} {m:.2f}" for n, m in zip(names, v) if m < 1.0] if b == "protozero" else []
    print(f"- {a} ÷ {b} {goal}: per payload {min(v):.2f}–{max(v):.2f}, geomean {geomean(v):.2f}"
          + (f"; below 1.0: {', '.join(below)}" if below else ""))
