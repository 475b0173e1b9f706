#!/usr/bin/env python3
"""Tables for BENCHMARKS.md "Read path (issue 10)" from criterion's results of `--bench decode -- read/` and `--bench read`.

    python3 benches/read_report.py [TARGET_DIR]

Times are criterion's median per-iteration estimates; ratios are speeds (reference time ÷
arm time): above 1 the arm is faster than the reference.
"""
import json
import math
import os
import sys

target = sys.argv[1] if len(sys.argv) > 1 else "target"
root = os.path.join(target, "criterion")
PUBLIC = ["gm1_proto2", "gm1_proto3", "gm2", "osm_header", "osm_dense", "osm_ways", "osm_relations",
          "mvt_chicago", "mvt_sanfrancisco", "mvt_astana", "mvt_vtjs", "descriptor_fds", "descriptor_fds_srcinfo"]


def median_ns(group, arm):
    path = os.path.join(root, group.replace("/", "_"), arm, "new", "estimates.json")
    if not os.path.exists(path):
        path = os.path.join(root, *group.split("/"), arm, "new", "estimates.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


arms = ["jit_visit", "jit", "interp_visit", "prost_reflect"]
print("| payload | prost µs | " + " | ".join(f"{a} ×prost" for a in arms) + " |")
print("|---|---|" + "---|" * len(arms))
ratios = {a: [] for a in arms}
for p in PUBLIC:
    prost = median_ns(f"read/{p}", "prost")
    if prost is None:
        continue
    row = [p, f"{prost / 1000:.1f}"]
    for a in arms:
        t = median_ns(f"read/{p}", a)
        r = prost / t if t else None
        ratios[a].append(r)
        row.append(f"{r:.2f}" if r else "–")
    print("| " + " | ".join(row) + " |")
print("| **geomean** | | " + " | ".join(f"**{geomean(ratios[a]):.2f}**" for a in arms) + " |")
print()

for group, ref in [("handle/gm1_field2", "prost_field"), ("slices/osm_dense", "prost"), ("slices/mvt_chicago", "prost"),
                   ("slices/mvt_sanfrancisco", "prost"), ("slices/mvt_astana", "prost"), ("slices/mvt_vtjs", "prost"),
                   ("map/string_10k", None)]:
    d = os.path.join(root, group.replace("/", "_"))
    if not os.path.isdir(d):
        continue
    base = median_ns(group, ref) if ref else None
    for arm in sorted(os.listdir(d)):
        t = median_ns(group, arm)
        if t is None:
            continue
        extra = f", {base / t:.2f}× {ref}" if base else ""
        per = ""
        if group.startswith("handle/"):
            per = f" ({t / 1e6:.2f} ns per read)"
        if group.startswith("map/") and arm not in ("index_build", "decode_only"):
            per = f" ({t / 1e4:.1f} ns per lookup or entry)"
        print(f"- `{group}/{arm}`: {t / 1000:.1f} µs{per}{extra}")
    print()

for p in ["gm2", "osm_dense", "osm_ways", "osm_relations", "mvt_sanfrancisco", "descriptor_fds_srcinfo"]:
    for arm in ["text", "json"]:
        t = median_ns(f"write/{p}", arm)
        if t:
            size = os.path.getsize(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                                                "corpus", {"gm2": "google_message2.payload0.bin",
                                                           "osm_dense": "liechtenstein.block1.primitiveblock-dense.bin",
                                                           "osm_ways": "liechtenstein.block40.primitiveblock-ways.bin",
                                                           "osm_relations": "liechtenstein.block45.primitiveblock-relations.bin",
                                                           "mvt_sanfrancisco": "mvt-sanfrancisco-15-5238-12666.mvt",
                                                           "descriptor_fds_srcinfo": "descriptor_with_source_info.fds.bin"}[p]))
            print(f"- `write/{p}/{arm}`: {t / 1e6:.2f} ms ({size / t * 1000:.0f} MB/s of payload)")
