#!/usr/bin/env bash
# protojit's scan of delimited protobuf against DataFusion's own Parquet scan of the same rows:
# the 2 GiB telemetry set of benches/sql_scale.sh (8 files), converted once to Parquet by
# `protojit decode -o parquet` (Snappy, the writer's default row groups of 1,048,576 rows
# at most), and one query that reads every column, grouped so that no engine can answer it
# from metadata (Parquet's statistics answer an ungrouped COUNT). 1 and 2 partitions, arms
# alternating in order from round to round.
#   bash benches/sql_parquet.sh [WORK_DIR] [ROUNDS]   (default /tmp/protojit-sql-scale, 3)
# The Parquet arm is DataFusion 55.0.0 through its Python package (the same engine as the
# workspace's DataFusion 55.2; the workspace builds DataFusion without its Parquet reader,
# which CI would pay for), timed inside the process (query planning + execution, interpreter
# start-up excluded); the protojit arm is the whole `protojit sql` process (wall, GNU time).
#   python3 -m venv /tmp/dfpy && /tmp/dfpy/bin/pip install datafusion==55.0.0 pyarrow==26.0.1
#   PY=/tmp/dfpy/bin/python bash benches/sql_parquet.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-/tmp/protojit-sql-scale}
rounds=${2:-3}
PY=${PY:-python3}
target=${CARGO_TARGET_DIR:-target}
have=$($PY -c 'import datafusion; print(datafusion.__version__)')
[ "$have" = 55.0.0 ] || { echo "datafusion $have found; the arm is pinned to datafusion==55.0.0" >&2; exit 1; }
cargo build -q --release -p protojit-cli -p protojit-sql --features protojit-cli/sql,protojit-sql/compression \
  --bin protojit --example scale_data
bin=$target/release/protojit
mkdir -p "$work/2g-parquet"
[ -f "$work/2g/part-007.pb" ] || "$target/release/examples/scale_data" "$work/2g" 8 256 > /dev/null
for f in "$work"/2g/part-*.pb; do
  out="$work/2g-parquet/$(basename "$f" .pb).parquet"
  [ -f "$out" ] || "$bin" decode --proto corpus/samples/telemetry.proto --type protojit.samples.Batch \
    --delimited --jobs 2 -o parquet --output-file "$out" "$f"
done
du -sh "$work/2g" "$work/2g-parquet"
query="SELECT status, COUNT(*) AS n, SUM(LENGTH(device)) AS chars, SUM(battery_volts) AS volts,
  COUNT(mains) AS mains, COUNT(samples) AS samples, COUNT(labels) AS labels, COUNT(error_codes) AS codes
  FROM t GROUP BY status ORDER BY status"
protojit_arm() { # PARTITIONS
  local out; out=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$out.time" "$bin" sql --proto corpus/samples/telemetry.proto --partitions "$1" -o csv \
    "CREATE EXTERNAL TABLE t STORED AS PROTOBUF LOCATION '$work/2g/' OPTIONS ('message_type' 'protojit.samples.Batch'); $query" \
    > "$out"
  read -r secs kib < "$out.time"
  echo "protojit  partitions=$1 ${secs}s rss=$((kib / 1024))MiB"
  [ -n "${SHOW:-}" ] && cat "$out"
  rm -f "$out" "$out.time"
}
parquet_arm() { # PARTITIONS
  QUERY="$query" DIR="$work/2g-parquet/" PARTS="$1" $PY - <<'EOF'
import os, resource, time
from datafusion import SessionConfig, SessionContext
ctx = SessionContext(SessionConfig().with_target_partitions(int(os.environ["PARTS"])))
start = time.perf_counter()
ctx.register_parquet("t", os.environ["DIR"])
batches = ctx.sql(os.environ["QUERY"]).collect()
secs = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"parquet   partitions={os.environ['PARTS']} {secs:.2f}s rss={rss}MiB")
if os.environ.get("SHOW"):
    for b in batches:
        for row in b.to_pylist():
            print(",".join(str(v) for v in row.values()))
EOF
}
SHOW=1 protojit_arm 2
SHOW=1 parquet_arm 2
for r in $(seq "$rounds"); do
  for p in 1 2; do
    if [ $(( (r + p) % 2 )) = 0 ]; then protojit_arm "$p"; parquet_arm "$p"; else parquet_arm "$p"; protojit_arm "$p"; fi
  done
done
