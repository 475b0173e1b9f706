#!/usr/bin/env python3
"""Markdown tables for BENCHMARKS.md from one criterion run.

    python3 benches/report.py [TARGET_DIR]     # default: ./target

Reads target/criterion/**/benchmark.json + new/estimates.json (groups read/*, decode/*,
compile/*, osm/*, osm_blocks/*) and target/criterion/protojit-compile-stats.tsv. Times are
criterion's median per-iteration estimate; throughput is payload bytes / time in MB/s
(10^6 bytes per second). Ratios are arm / reference: above 1 the arm is faster.
"""
import json
import math
import os
import sys
from collections import defaultdict

target = sys.argv[1] if len(sys.argv) > 1 else "target"
root = os.path.join(target, "criterion")

# Payload order (benches/support SHARED_CASES, then protojit-corpus's order).
ORDER = [
    "gm1_proto2", "gm1_proto3", "gm2", "dataset_gm1_proto2", "dataset_gm1_proto3", "dataset_gm2",
    "osm_header", "osm_dense", "osm_ways", "osm_relations",
    "mvt_chicago", "mvt_sanfrancisco", "mvt_astana", "mvt_vtjs",
    "descriptor_fds", "descriptor_fds_srcinfo",
    "dataset", "emb_telemetry", "emb_batch", "emb_config", "emb_command", "emb_ack", "emb_firmware",
]
for size in ["1k", "1m"]:
    for k in ["varint1b", "varint10b", "varintmixed", "zigzag", "enum", "manytiny", "fewbig"]:
        ORDER.append(f"sw_{k}_{size}")
ORDER.append("chain10")


def family(name):
    if name.startswith(("gm", "dataset_gm")):
        return "google benchmarks"
    if name.startswith("osm"):
        return "OSM blocks"
    if name.startswith("mvt"):
        return "vector tiles"
    if name.startswith("descriptor"):
        return "descriptors"
    if name == "dataset":
        return "dataset"
    if name.startswith("emb"):
        return "embedded"
    if name.startswith("sw_") and name.endswith("_1k"):
        return "sweeps 1 KiB"
    if name.startswith("sw_"):
        return "sweeps 1 MiB"
    return "chain"


# results[group][function] = (median ns, bytes or None)
results = defaultdict(dict)
for dirpath, dirnames, filenames in os.walk(root):
    if "benchmark.json" in filenames and os.path.basename(dirpath) == "new":
        b = json.load(open(os.path.join(dirpath, "benchmark.json")))
        e = json.load(open(os.path.join(dirpath, "estimates.json")))
        tp = (b.get("throughput") or {}).get("Bytes")
        fid = b["function_id"] if b.get("value_str") is None else f'{b["function_id"]}/{b["value_str"]}'
        results[b["group_id"]][fid] = (e["median"]["point_estimate"], tp)


def mbps(group, arm):
    r = results.get(group, {}).get(arm)
    if not r or not r[1]:
        return None
    return r[1] / r[0] * 1e3  # bytes/ns * 1e9 / 1e6


def fmt(v):
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def ratio(a, b):
    return None if a is None or b is None else a / b


def rfmt(v):
    return "—" if v is None else f"{v:.2f}"


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def payloads(prefix):
    names = [g[len(prefix):] for g in results if g.startswith(prefix)]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def size_of(prefix, name):
    for _, (t, b) in results[prefix + name].items():
        if b:
            return b
    return None


def table(mode, arms, refs):
    prefix = f"{mode}/"
    names = payloads(prefix)
    if not names:
        return
    print(f"#### `{mode}`: MB/s\n")
    print("| payload | bytes | " + " | ".join(arms) + " |")
    print("|---|---:|" + "---:|" * len(arms))
    for n in names:
        row = [fmt(mbps(prefix + n, a)) for a in arms]
        print(f"| {n} | {size_of(prefix, n)} | " + " | ".join(row) + " |")
    print()
    print(f"#### `{mode}`: ratios, `×prost / ×prost_reflect` (arm MB/s over the reference's; above 1 = faster)\n")
    shown = [a for a in arms if a not in refs]
    print("| payload | " + " | ".join(shown) + " |")
    print("|---|" + "---:|" * len(shown))
    fam = defaultdict(lambda: defaultdict(list))
    for n in names:
        cells = []
        for a in shown:
            v = mbps(prefix + n, a)
            r1, r2 = ratio(v, mbps(prefix + n, refs[0])), ratio(v, mbps(prefix + n, refs[1]))
            fam[family(n)][(a, 0)].append(r1)
            fam[family(n)][(a, 1)].append(r2)
            fam["all payloads"][(a, 0)].append(r1)
            fam["all payloads"][(a, 1)].append(r2)
            cells.append(f"{rfmt(r1)} / {rfmt(r2)}")
        print(f"| {n} | " + " | ".join(cells) + " |")
    print()
    print(f"#### `{mode}`: geometric means of the ratios per family, `×prost / ×prost_reflect`\n")
    print("| family | " + " | ".join(shown) + " |")
    print("|---|" + "---:|" * len(shown))
    for f in list(dict.fromkeys(family(n) for n in names)) + ["all payloads"]:
        cells = [f"{rfmt(geomean(fam[f][(a, 0)]))} / {rfmt(geomean(fam[f][(a, 1)]))}" for a in shown]
        print(f"| {f} | " + " | ".join(cells) + " |")
    print()


READ_ARMS = ["jit", "jit_fresh", "interp", "interp_fresh", "prost", "prost_reuse", "prost_reflect", "protobuf"]
table("read", READ_ARMS, ["prost", "prost_reflect"])
DECODE_ARMS = READ_ARMS + ["scan"]
table("decode", DECODE_ARMS, ["prost", "prost_reflect"])

# scan floor: jit as a fraction of scan
names = payloads("decode/")
if names:
    print("#### `decode`: the JIT against the `scan` floor (jit MB/s ÷ scan MB/s)\n")
    print("| payload | jit ÷ scan | jit_fresh ÷ scan | prost ÷ scan |")
    print("|---|---:|---:|---:|")
    for n in names:
        s = mbps("decode/" + n, "scan")
        print(f"| {n} | " + " | ".join(rfmt(ratio(mbps("decode/" + n, a), s)) for a in ["jit", "jit_fresh", "prost"]) + " |")
    print()

# Compile cost.
stats_path = os.path.join(root, "protojit-compile-stats.tsv")
groups = [g for g in results if g.startswith("compile/")]
if groups or os.path.exists(stats_path):
    print("#### Compile cost per schema (criterion medians)\n")
    print("| schema | load | layout | JIT compile (all roots) | interpreter set-up (all roots) |")
    print("|---|---:|---:|---:|---:|")

    def t(g, f):
        r = results.get(g, {}).get(f)
        if not r:
            return "—"
        ns = r[0]
        return f"{ns / 1e6:.2f} ms" if ns >= 1e5 else f"{ns / 1e3:.1f} µs"

    order = []
    if os.path.exists(stats_path):
        for line in open(stats_path).read().splitlines()[1:]:
            s = line.split("\t")[0]
            if s not in order:
                order.append(s)
    for s in order or sorted(g[8:] for g in groups):
        g = "compile/" + s
        print(f"| {s} | {t(g, 'load')} | {t(g, 'layout')} | {t(g, 'jit')} | {t(g, 'interp_setup')} |")
    print()
    if os.path.exists(stats_path):
        print("#### Machine code per message type (`Decoder::stats`, one root each)\n")
        print("| schema | root | types | JIT'd | code bytes | bytes/type | largest type | compile ms (sum) | µs/type |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for line in open(stats_path).read().splitlines()[1:]:
            s, r, types, jit, code, mn, mx, us = line.split("\t")
            types, jit, code, mx, us = int(types), int(jit), int(code), int(mx), int(us)
            print(f"| {s} | `{r}` | {types} | {jit} | {code:,} | {code // max(jit, 1):,} | {mx:,} | {us / 1e3:.1f} | {us / max(types, 1):,.0f} |")
        print()

# OSM.
if "osm/liechtenstein" in results or "osm_blocks/liechtenstein" in results:
    print("#### OSM application (liechtenstein.osm.pbf)\n")
    print("| bench | what | MB/s | ratio |")
    print("|---|---|---:|---:|")
    e2e = mbps("osm/liechtenstein", "end_to_end")
    inf = mbps("osm/liechtenstein", "inflate_only")
    print(f"| osm/liechtenstein | end_to_end (frame, inflate, decode, walk), MB/s of the file | {fmt(e2e)} | 1.00 |")
    print(f"| osm/liechtenstein | inflate_only (frame, inflate), MB/s of the file | {fmt(inf)} | {rfmt(ratio(inf, e2e))} |")
    pj = mbps("osm_blocks/liechtenstein", "protojit")
    pr = mbps("osm_blocks/liechtenstein", "prost")
    print(f"| osm_blocks/liechtenstein | protojit decode + walk, MB/s of inflated blocks | {fmt(pj)} | ×prost {rfmt(ratio(pj, pr))} |")
    print(f"| osm_blocks/liechtenstein | prost decode + walk, MB/s of inflated blocks | {fmt(pr)} | 1.00 |")
    print()
