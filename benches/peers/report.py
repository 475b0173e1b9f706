#!/usr/bin/env python3
"""Tables for benches/peers/run.sh: MB/s per arm (median of the rounds) and protojit's
ratios to the C/C++ arms, each the median of per-round ratios with its min-max.

usage: report.py RESULTS.tsv CASES.tsv ROUNDS
RESULTS.tsv lines: payload, arm, round, MB/s or '-' (the arm cannot decode the payload).
"""
import math
import os
import statistics
import sys
from collections import defaultdict

results, cases, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
ARMS = ["protojit_jit", "protojit_fresh", "protojit_interp", "cpp_new", "cpp_arena", "cpp_reuse", "cpp_dynamic", "protobuf_c"]
CPP = ["cpp_new", "cpp_arena", "cpp_reuse"]
WRAPPERS = {"dataset_gm1_proto2", "dataset_gm1_proto3", "dataset_gm2"}
# (numerator, denominator): like with like. "cpp_best" is, per round, the fastest of the
# generated-code configurations (new, Arena, reused message).
PAIRS = [
    ("protojit_jit", "cpp_reuse"),
    ("protojit_jit", "cpp_best"),
    ("protojit_fresh", "cpp_arena"),
    ("protojit_fresh", "cpp_new"),
    ("protojit_interp", "cpp_reuse"),
    ("protojit_jit", "cpp_dynamic"),
    ("protojit_jit", "protobuf_c"),
]

mbs = defaultdict(dict)  # (payload, arm) -> {round: MB/s}
for line in open(results):
    payload, arm, rnd, v = line.rstrip("\n").split("\t")
    if v not in ("-", ""):
        mbs[(payload, arm)][int(rnd)] = float(v)
names, sizes = [], {}
for line in open(cases):
    name, path = line.split("\t")[:2]
    names.append(name)
    try:
        sizes[name] = os.path.getsize(path)
    except OSError:
        sizes[name] = 0
for n in names:
    best = {}
    for arm in CPP:
        for r, v in mbs.get((n, arm), {}).items():
            best[r] = max(best.get(r, 0.0), v)
    if best:
        mbs[(n, "cpp_best")] = best


def ratio(n, a, b):
    x, y = mbs.get((n, a), {}), mbs.get((n, b), {})
    per = [x[r] / y[r] for r in x if r in y and y[r] > 0]
    if not per:
        return None
    return statistics.median(per), min(per), max(per)


print(f"Decode-only throughput, MB/s (10^6 B/s), median of {rounds} interleaved rounds.")
print()
print("| payload | bytes | " + " | ".join(ARMS) + " |")
print("|---|---:|" + "---:|" * len(ARMS))
for n in names:
    cells = []
    for a in ARMS:
        v = mbs.get((n, a))
        cells.append(f"{statistics.median(v.values()):.0f}" if v else "—")
    print(f"| {n} | {sizes[n]} | " + " | ".join(cells) + " |")
print()
print(f"protojit over the peers (above 1 = protojit faster): median of the per-round ratios [min–max over {rounds} rounds].")
print()
print("| payload | " + " | ".join(f"{a} ÷ {b}" for a, b in PAIRS) + " |")
print("|---|" + "---:|" * len(PAIRS))
for n in names:
    cells = []
    for a, b in PAIRS:
        r = ratio(n, a, b)
        cells.append(f"{r[0]:.2f} [{r[1]:.2f}–{r[2]:.2f}]" if r else "—")
    print(f"| {n} | " + " | ".join(cells) + " |")
print()
print("Geometric means of the per-payload medians (min: the lowest payload; below 1: payloads where protojit is slower).")
print()
print("| payloads | " + " | ".join(f"{a} ÷ {b}" for a, b in PAIRS) + " |")
print("|---|" + "---:|" * len(PAIRS))
# The 13 payloads of the public corpus (DESIGN.md "Performance method").
public = {
    "gm1_proto2", "gm1_proto3", "gm2", "osm_header", "osm_dense", "osm_ways", "osm_relations", "mvt_chicago",
    "mvt_sanfrancisco", "mvt_astana", "mvt_vtjs", "descriptor_fds", "descriptor_fds_srcinfo",
}
groups = [
    ("public corpus, without the wrappers", [n for n in names if n in public]),
    ("the `dataset_*` wrappers", [n for n in names if n in WRAPPERS]),
    ("generated corpus", [n for n in names if n not in public and n not in WRAPPERS]),
]
for label, ns in groups:
    if not ns:
        continue
    cells = []
    for a, b in PAIRS:
        v = [r[0] for r in (ratio(n, a, b) for n in ns) if r]
        if not v:
            cells.append("—")
            continue
        g = math.exp(sum(math.log(x) for x in v) / len(v))
        cells.append(f"{g:.2f} (min {min(v):.2f}; {sum(x < 1 for x in v)} below 1)")
    print(f"| {label} ({len(ns)}) | " + " | ".join(cells) + " |")
