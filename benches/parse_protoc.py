#!/usr/bin/env python3
"""Text format to binary, whole process: `protojit encode --from text` against `protoc --encode`, per file.

Usage: python3 benches/parse_protoc.py PROTOJIT [RUNS]

Each public-corpus payload is rendered as text format once (`PROTOJIT decode -o text`);
then, on that file, both commands run RUNS times alternately (A B, then B A, ...), each
reading the file on stdin and writing binary to a pipe that is discarded, with the same
descriptor set (`protoc --include_imports -o`, or the corpus's `descriptor.fds.bin`):

  protoc --encode=T --descriptor_set_in=SET < FILE.txtpb
  PROTOJIT encode --descriptor-set SET --type T --from text < FILE.txtpb

Before timing, both outputs must be the same bytes. Whole-process wall time includes each
tool's start-up and schema load; the "empty" rows time the same commands on an empty
input (the start-up alone, per schema). Prints median ms per tool, the speed ratio
protoc ÷ protojit per pair (median [min–max]), and the geometric mean of the per-payload
medians over the 13 public payloads without the `dataset_*` wrappers (DESIGN.md,
performance method) and over the wrappers apart.
"""
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpus")
WRAPPERS = {"dataset_gm1_proto2", "dataset_gm1_proto3", "dataset_gm2"}
# name, payload, schema (.proto, or a descriptor set), type: benches/support/src/lib.rs's SHARED_CASES.
CASES = [
    ("gm1_proto2", "google_message1_proto2.payload0.bin", "benchmark_message1_proto2.proto",
     "benchmarks.proto2.GoogleMessage1"),
    ("gm1_proto3", "google_message1_proto3.payload0.bin", "benchmark_message1_proto3.proto",
     "benchmarks.proto3.GoogleMessage1"),
    ("gm2", "google_message2.payload0.bin", "benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2"),
    ("dataset_gm1_proto2", "dataset.google_message1_proto2.pb", "benchmarks.proto", "benchmarks.BenchmarkDataset"),
    ("dataset_gm1_proto3", "dataset.google_message1_proto3.pb", "benchmarks.proto", "benchmarks.BenchmarkDataset"),
    ("dataset_gm2", "dataset.google_message2.pb", "benchmarks.proto", "benchmarks.BenchmarkDataset"),
    ("osm_header", "liechtenstein.block0.headerblock.bin", "osmformat.proto", "OSMPBF.HeaderBlock"),
    ("osm_dense", "liechtenstein.block1.primitiveblock-dense.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("osm_ways", "liechtenstein.block40.primitiveblock-ways.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock"),
    ("osm_relations", "liechtenstein.block45.primitiveblock-relations.bin", "osmformat.proto",
     "OSMPBF.PrimitiveBlock"),
    ("mvt_chicago", "mvt-chicago-13-2101-3044.mvt", "vector_tile.proto", "vector_tile.Tile"),
    ("mvt_sanfrancisco", "mvt-sanfrancisco-15-5238-12666.mvt", "vector_tile.proto", "vector_tile.Tile"),
    ("mvt_astana", "mvt-osmqa-astana-12-2860-1368.mvt", "vector_tile.proto", "vector_tile.Tile"),
    ("mvt_vtjs", "vector-tile-js-14-8801-5371.vector.pbf", "vector_tile.proto", "vector_tile.Tile"),
    ("descriptor_fds", "descriptor.fds.bin", "descriptor.fds.bin", "google.protobuf.FileDescriptorSet"),
    ("descriptor_fds_srcinfo", "descriptor_with_source_info.fds.bin", "descriptor.fds.bin",
     "google.protobuf.FileDescriptorSet"),
]


def run(cmd, stdin_path):
    """Wall seconds of one whole run of `cmd` with `stdin_path` on stdin, and its stdout."""
    with open(stdin_path, "rb") as stdin:
        start = time.perf_counter()
        r = subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)} < {stdin_path}: {r.stderr.decode()[:300]}")
    return elapsed, r.stdout


def descriptor_set(tmp, schema):
    if schema.endswith(".fds.bin"):
        return os.path.join(CORPUS, schema)
    out = os.path.join(tmp, schema + ".fds")
    if not os.path.exists(out):
        subprocess.run(["protoc", "--include_imports", "-I", CORPUS, "-o", out, os.path.join(CORPUS, schema)],
                       check=True, stderr=subprocess.DEVNULL)
    return out


def alternate(a, b, path, runs):
    """(A's times, B's times, B ÷ A per pair): A B, then B A, ..."""
    ta, tb = [], []
    for i in range(runs):
        if i % 2 == 0:
            ta.append(run(a, path)[0])
            tb.append(run(b, path)[0])
        else:
            tb.append(run(b, path)[0])
            ta.append(run(a, path)[0])
    return ta, tb, [y / x for x, y in zip(ta, tb)]


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    protojit = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    tmp = tempfile.mkdtemp()
    empty = os.path.join(tmp, "empty.txtpb")
    open(empty, "wb").close()
    print(f"| payload | text bytes | protojit ms | protoc ms | protoc ÷ protojit (speed), median [min–max] of {runs} |")
    print("|---|---:|---:|---:|---:|")
    medians, startup_done = {}, {}
    for name, payload, schema, ty in CASES:
        fds = descriptor_set(tmp, schema)
        text = os.path.join(tmp, name + ".txtpb")
        with open(os.path.join(CORPUS, payload), "rb") as src, open(text, "wb") as dst:
            subprocess.run([protojit, "decode", "--descriptor-set", fds, "--type", ty, "-o", "text", "-"], stdin=src,
                           stdout=dst, check=True)
        a = [protojit, "encode", "--descriptor-set", fds, "--type", ty, "--from", "text"]
        b = ["protoc", f"--encode={ty}", f"--descriptor_set_in={fds}"]
        ours, theirs = run(a, text)[1], run(b, text)[1]
        if ours != theirs:
            raise SystemExit(f"{name}: protojit encode and protoc --encode give different bytes")
        ta, tb, ratios = alternate(a, b, text, runs)
        med = statistics.median(ratios)
        medians[name] = med
        print(f"| {name} | {os.path.getsize(text)} | {statistics.median(ta) * 1e3:.2f} | "
              f"{statistics.median(tb) * 1e3:.2f} | **{med:.2f}×** [{min(ratios):.2f}–{max(ratios):.2f}] |", flush=True)
        if schema not in startup_done:
            ta, tb, ratios = alternate(a, b, empty, runs)
            startup_done[schema] = (ty, statistics.median(ta), statistics.median(tb), statistics.median(ratios))
    for schema, (ty, ma, mb, med) in startup_done.items():
        print(f"| empty `{ty}` ({schema}) | 0 | {ma * 1e3:.2f} | {mb * 1e3:.2f} | {med:.2f}× |")
    print()
    for label, keep in [("13 public payloads without the wrappers", lambda n: n not in WRAPPERS),
                        ("the three dataset_* wrappers", lambda n: n in WRAPPERS)]:
        v = [m for n, m in medians.items() if keep(n)]
        if v:
            g = math.exp(sum(math.log(x) for x in v) / len(v))
            below = sum(1 for x in v if x < 1)
            print(f"geometric mean, {label} ({len(v)}): {g:.2f}× (min {min(v):.2f}; {below} below 1)")


if __name__ == "__main__":
    main()
