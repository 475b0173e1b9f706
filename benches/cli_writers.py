#!/usr/bin/env python3
"""CLI text and JSON output throughput on the large corpus payloads: two `protojit` binaries (old and new writers) and `protoc --decode`, interleaved.

Usage: python3 benches/cli_writers.py OLD_PROTOJIT NEW_PROTOJIT [ROUNDS]

Each round runs every arm once per payload and format, in rotated order. Start-up (schema
load, JIT compile, process start) is excluded by subtracting, per arm, the median time of
the same command on a tiny payload of the same type. Prints median ms per arm and the
ratios new/old and new/protoc (as speeds: above 1, new is faster).
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "corpus")
# name, payload, proto (or .fds.bin), type, tiny payload of that type
CASES = [
    ("gm2", "google_message2.payload0.bin", "benchmark_message2.proto", "benchmarks.proto2.GoogleMessage2",
     b"\x5d\x00\x00\x00\x00\x78\x00"),  # the required field11, field15
    ("osm_dense", "liechtenstein.block1.primitiveblock-dense.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock", b"\x0a\x00"),
    ("osm_ways", "liechtenstein.block40.primitiveblock-ways.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock", b"\x0a\x00"),
    ("osm_relations", "liechtenstein.block45.primitiveblock-relations.bin", "osmformat.proto", "OSMPBF.PrimitiveBlock",
     b"\x0a\x00"),
    ("mvt_sanfrancisco", "mvt-sanfrancisco-15-5238-12666.mvt", "vector_tile.proto", "vector_tile.Tile", b""),
    ("descriptor_fds_srcinfo", "descriptor_with_source_info.fds.bin", "descriptor.fds.bin",
     "google.protobuf.FileDescriptorSet", b""),
]


def protojit_cmd(binary, proto, ty, fmt, path):
    schema = ["--descriptor-set", os.path.join(CORPUS, proto)] if proto.endswith(".fds.bin") else \
        ["--proto", os.path.join(CORPUS, proto), "-I", CORPUS]
    return [binary, "decode", *schema, "--type", ty, "--engine", "jit", "-o", fmt, path], None


def protoc_cmd(proto, ty, path):
    if proto.endswith(".fds.bin"):
        return ["protoc", f"--decode={ty}", f"--descriptor_set_in={os.path.join(CORPUS, proto)}"], path
    return ["protoc", f"--decode={ty}", "-I", CORPUS, os.path.join(CORPUS, proto)], path


def run(cmd, stdin_path):
    start = time.perf_counter()
    with open(stdin_path or os.devnull, "rb") as stdin:
        r = subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}: {r.stderr.decode()[:300]}")
    return elapsed, r.stdout


def main():
    old, new = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    have_protoc = shutil.which("protoc") is not None
    tmp = tempfile.mkdtemp()
    print(f"| payload | format | old ms | new ms | {'protoc ms | ' if have_protoc else ''}new ÷ old speed"
          f"{' | new ÷ protoc speed' if have_protoc else ''} |")
    print(f"|---|---|---|---|{'---|' if have_protoc else ''}---|{'---|' if have_protoc else ''}")
    for name, payload, proto, ty, tiny in CASES:
        big = os.path.join(CORPUS, payload)
        small = os.path.join(tmp, name + ".tiny")
        with open(small, "wb") as f:
            f.write(tiny)
        for fmt in ["text", "json"]:
            arms = {
                "old": lambda p, b=old: protojit_cmd(b, proto, ty, fmt, p),
                "new": lambda p, b=new: protojit_cmd(b, proto, ty, fmt, p),
            }
            if have_protoc and fmt == "text":
                arms["protoc"] = lambda p: protoc_cmd(proto, ty, p)
            # Outputs must agree before timing: old and new byte for byte, protoc's text too.
            outs = {a: run(*mk(big))[1] for a, mk in arms.items()}
            if outs["old"] != outs["new"]:
                raise SystemExit(f"{name} {fmt}: old and new outputs differ")
            if "protoc" in outs and outs["protoc"] != outs["new"]:
                print(f"note: {name}: protoc's text differs from protojit's", file=sys.stderr)
            times = {a: [] for a in arms}
            bases = {a: [] for a in arms}
            order = list(arms)
            for r in range(rounds):
                rot = order[r % len(order):] + order[:r % len(order)]
                for a in rot:
                    times[a].append(run(*arms[a](big))[0])
                    bases[a].append(run(*arms[a](small))[0])
            ms = {a: 1000 * max(statistics.median(times[a]) - statistics.median(bases[a]), 1e-6) for a in arms}
            row = f"| {name} | {fmt} | {ms['old']:.2f} | {ms['new']:.2f} | "
            if have_protoc:
                row += f"{ms['protoc']:.2f} | " if "protoc" in ms else "– | "
            row += f"{ms['old'] / ms['new']:.2f}× |"
            if have_protoc:
                row += f" {ms['protoc'] / ms['new']:.2f}× |" if "protoc" in ms else " – |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
