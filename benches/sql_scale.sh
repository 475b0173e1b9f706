#!/usr/bin/env bash
# SQL over protobuf data larger than memory: a low-cardinality GROUP BY through
# `protojit sql` over directories of varint-delimited telemetry records (generated, not
# committed): 2 GiB in 8 files, the same query over 8 GiB in 32 files, and 2 GiB of gzip
# files; 1 and 2 partitions each. Prints wall time and peak RSS (GNU time) per run, and the
# result rows, which must agree between runs of the same set.
#   bash benches/sql_scale.sh [WORK_DIR] [ROUNDS]   (default /tmp/protojit-sql-scale, 3)
# Needs ~14 GiB free in WORK_DIR. Builds the CLI (with gzip support) and the generator in
# release mode into $CARGO_TARGET_DIR (default target/).
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/protojit-sql-scale}
rounds=${2:-3}
target=${CARGO_TARGET_DIR:-target}
# One build, so DataFusion is built once with one feature set.
cargo build -q --release -p protojit-cli -p protojit-sql --features protojit-cli/sql,protojit-sql/compression \
  --bin protojit --example scale_data
bin=$target/release/protojit
gen=$target/release/examples/scale_data
mkdir -p "$work"
[ -f "$work/2g/part-007.pb" ] || "$gen" "$work/2g" 8 256 > /dev/null
[ -f "$work/8g/part-031.pb" ] || "$gen" "$work/8g" 32 256 > /dev/null
[ -f "$work/2g-gz/part-007.pb.gz" ] || "$gen" "$work/2g-gz" 8 256 gzip > /dev/null
du -sh "$work"/2g "$work"/8g "$work"/2g-gz
query="SELECT status, COUNT(*) AS n, SUM(LENGTH(device)) AS chars, AVG(battery_volts) AS volts
  FROM t GROUP BY status ORDER BY status"
run() { # SET PARTITIONS [gzip]
  local opts="'message_type' 'protojit.samples.Batch'"
  [ "${3:-}" = gzip ] && opts="$opts, 'compression' 'gzip'"
  local out; out=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$out.time" "$bin" sql --proto corpus/samples/telemetry.proto --partitions "$2" \
    "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '$work/$1/' OPTIONS ($opts); $query" > "$out"
  read -r secs kib < "$out.time"
  echo "$1 partitions=$2 ${secs}s rss=$((kib / 1024))MiB rows=$(md5sum < "$out" | cut -c1-8)"
  rm -f "$out" "$out.time"
}
for _ in $(seq "$rounds"); do
  for set in 2g 8g; do
    run "$set" 1
    run "$set" 2
  done
  run 2g-gz 1 gzip
  run 2g-gz 2 gzip
done
# One result, for the record.
"$bin" sql --proto corpus/samples/telemetry.proto \
  "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '$work/2g/' OPTIONS ('message_type' 'protojit.samples.Batch'); $query"
