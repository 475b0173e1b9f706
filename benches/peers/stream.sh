#!/usr/bin/env bash
# Streaming visitor vs protozero vs decode + tree visit vs prost (issue 29), interleaved, on the same bytes.
#
#   bash benches/peers/stream.sh          # installs g++ and libprotozero-dev if missing (Debian)
#
# Environment: CORPUS (default ../shared/corpus), WORK (default target/peers-stream),
# SECONDS_PER_RUN (default 0.25), ROUNDS (default 10). Each measurement is a separate
# process (examples/stream_timing.rs for the Rust arms, protozero_harness.cc for protozero),
# same method: batches calibrated to ~50 ms, median batch throughput. Each round runs every
# arm once per payload, the arms' order rotating from round to round; ratios are taken
# within a round and reported as the median over the rounds with their min–max.
#
# Arms (all read every field and compute the flat checksum of
# benches/support/src/stream_sum.rs; the script fails if any arm's checksum differs):
#   stream       protojit Decoder::stream + a StreamVisitor (interpreted wire walk, no tree)
#   tree         protojit JIT decode into an arena (reset between decodes) + tree Visitor
#   tree_interp  the same with protojit's interpreter
#   prost        prost generated code: decode into fresh structs + a walk of the structs
#   protozero    libprotozero (C++, header-only) pbf_reader consumer, g++ -O2
set -eu

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
CORPUS="$(cd "${CORPUS:-$REPO/../shared/corpus}" && pwd)"
WORK="${WORK:-$REPO/target/peers-stream}"
SECS="${SECONDS_PER_RUN:-0.25}"
ROUNDS="${ROUNDS:-10}"

missing=""
for p in libprotozero-dev g++; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing:$missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
mkdir -p "$WORK"

echo "building stream_timing (bench profile) and protozero_harness..." >&2
(cd "$REPO" && cargo build -q --profile bench --example stream_timing)
TARGET_DIR="$(cd "$REPO" && cargo metadata --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)"
PJ="$TARGET_DIR/release/examples/stream_timing"
g++ -O2 -std=c++17 "$REPO/benches/peers/protozero_harness.cc" -o "$WORK/protozero_harness"
PZ="$WORK/protozero_harness"

CASES="$WORK/cases.tsv"
{
  printf 'osm_header\tosm_header\t%s\n' "$CORPUS/liechtenstein.block0.headerblock.bin"
  printf 'osm_dense\tosm\t%s\n' "$CORPUS/liechtenstein.block1.primitiveblock-dense.bin"
  printf 'osm_ways\tosm\t%s\n' "$CORPUS/liechtenstein.block40.primitiveblock-ways.bin"
  printf 'osm_relations\tosm\t%s\n' "$CORPUS/liechtenstein.block45.primitiveblock-relations.bin"
  printf 'mvt_chicago\tmvt\t%s\n' "$CORPUS/mvt-chicago-13-2101-3044.mvt"
  printf 'mvt_sanfrancisco\tmvt\t%s\n' "$CORPUS/mvt-sanfrancisco-15-5238-12666.mvt"
  printf 'mvt_astana\tmvt\t%s\n' "$CORPUS/mvt-osmqa-astana-12-2860-1368.mvt"
  printf 'mvt_vtjs\tmvt\t%s\n' "$CORPUS/vector-tile-js-14-8801-5371.vector.pbf"
} > "$CASES"

run_arm() { # arm kind file -> "MB/s checksum"
  case $1 in
    protozero) "$PZ" "$2" "$3" "$SECS" ;;
    *) "$PJ" --arm "$1" --kind "$2" --corpus "$CORPUS" --seconds "$SECS" "$3" ;;
  esac
}

ARMS=(stream tree tree_interp prost protozero)
NARMS=${#ARMS[@]}
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "measuring ($ROUNDS interleaved rounds of ${SECS}s per arm and payload)..." >&2
RESULTS="$WORK/results.tsv"; : > "$RESULTS"
while IFS=$'\t' read -r name kind file; do
  want=""
  for r in $(seq "$ROUNDS"); do
    for k in $(seq 0 $((NARMS - 1))); do
      arm=${ARMS[$(( (k + r) % NARMS ))]}
      read -r mbs sum <<< "$(run_arm "$arm" "$kind" "$file")"
      [ -n "$want" ] || want=$sum
      if [ "$sum" != "$want" ]; then
        echo "error: $name: arm $arm's checksum $sum differs from $want: the arms do not do the same work" >&2
        exit 1
      fi
      printf '%s\t%s\t%s\t%s\n' "$name" "$arm" "$r" "$mbs" >> "$RESULTS"
    done
  done
  echo "  $name done (checksum $want, every arm)" >&2
done < "$CASES"
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"

python3 "$REPO/benches/peers/stream_report.py" "$RESULTS" "$CASES" "$ROUNDS"
echo
echo "Machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); load average (1/5/15 min) $LOAD_BEFORE before, $LOAD_AFTER after."
echo "protozero $(dpkg-query -W -f '${Version}' libprotozero-dev), $(g++ --version | head -1); $(rustc --version)."
