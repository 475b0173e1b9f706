"""`protojit decode --delimited --jobs 2` against `--jobs 1`, whole processes, for one or more builds.

Usage (from the repository root; builds from `cargo build --release -p protojit-cli
--features columns`, copied aside so that two commits can be compared in one run):

    python3 benches/cli_jobs.py ROUNDS STREAM BINARY [BINARY ...]

STREAM is a varint-delimited stream of google_message1 (proto3) records, such as the
100,000-record one BENCHMARKS.md "CLI `--delimited --jobs`" makes. Each round runs every
output (text, jsonl, parquet), every binary and both job counts, the orders alternating from
round to round; the first round is a warm-up. Prints per output and binary the median wall
times, the median of the per-round ratios `--jobs 1` / `--jobs 2` with its range, and the
ratio of the fastest runs (a busy host only ever adds time, so the fastest runs are the
nearest to a quiet machine's).
"""

import statistics
import subprocess
import sys
import time

PROTO = "../shared/corpus/benchmark_message1_proto3.proto"
TYPE = "benchmarks.proto3.GoogleMessage1"
OUTPUTS = ["text", "jsonl", "parquet"]
PARQUET = "/dev/shm/protojit_cli_jobs.parquet"


def command(binary, output, jobs, stream):
    cmd = [binary, "decode", "--proto", PROTO, "--type", TYPE, "--delimited", "-o", output, "--jobs", str(jobs)]
    if output == "parquet":
        cmd += ["--output-file", PARQUET]
    return cmd + [stream]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, stream, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    times = {}
    for i in range(rounds + 1):
        for output in OUTPUTS:
            for binary in binaries if i % 2 else binaries[::-1]:
                for jobs in (2, 1) if i % 2 else (1, 2):
                    start = time.perf_counter()
                    subprocess.run(command(binary, output, jobs, stream), check=True, stdout=subprocess.DEVNULL)
                    if i:
                        times.setdefault((binary, output, jobs), []).append(time.perf_counter() - start)
    for output in OUTPUTS:
        for binary in binaries:
            one, two = times[(binary, output, 1)], times[(binary, output, 2)]
            ratios = sorted(a / b for a, b in zip(one, two))
            print(
                f"{output:8} {binary:28} jobs 1 {statistics.median(one) * 1e3:6.1f} ms  "
                f"jobs 2 {statistics.median(two) * 1e3:6.1f} ms  ratio {statistics.median(ratios):.2f} "
                f"({ratios[0]:.2f}-{ratios[-1]:.2f})  fastest runs {min(one) / min(two):.2f}"
            )


if __name__ == "__main__":
    main()
