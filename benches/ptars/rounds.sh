#!/usr/bin/env bash
# Records → Arrow, protojit-arrow against ptars (and a 2-of-40-column projection, and the
# decode alone, and the gm1 wire-walk floor `scan`; `protojit`/`project2` take the default auto path (the compiled appenders raced against the chunked path), `chunked`/`project2_chunked` the chunked path alone, `compiled`/`project2_compiled` the compiled column appenders alone, `direct` the streaming
# decoder's direct appends, `tree`/`project2_tree` the same conversions through a tree read row by row), in interleaved rounds of whole processes: each arm converts its record set
# N times in one process; the same arm's N = 1 run is subtracted, so set-up (record
# generation, schema load, compilation) cancels. Prints medians and per-round ratios.
#   bash benches/ptars/rounds.sh [ROUNDS]      (from the repository root; needs ../shared/corpus;
#                                               SETS='osm_ways mvt_features' picks record sets,
#                                               osm_block and mvt_tile are whole payloads;
#                                               ARMS='protojit chunked compiled ptars' picks arms;
#                                               ARMS='compiled opt:oneof_case=true opt:flatten=true'
#                                               prices mapping options on the compiled path)
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-7}
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-../../target} cargo build -q --release --example convert_profile
bin=${CARGO_TARGET_DIR:-../../target}/release/examples/convert_profile
out=$(mktemp)
elapsed() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
sets=${SETS:-gm1 telemetry osm_ways mvt_features}
for set in $sets; do
  n=41; [ "$set" = osm_ways ] && n=400; [ "$set" = mvt_features ] && n=100
  [ "$set" = osm_block ] && n=41; [ "$set" = mvt_tile ] && n=61
  # One conversion's rows and payload bytes; N - 1 conversions are timed per round.
  # (An assignment, so that a failing run stops the script under `set -e`.)
  size=$("$bin" "$set" 1 decode)
  read -r rows _ bytes _ <<< "$size"
  echo "size $set $((rows * (n - 1))) $((bytes * (n - 1)))" >> "$out"
  for _ in $(seq "$rounds"); do
    for arm in ${ARMS:-protojit chunked compiled direct tree ptars project2 project2_chunked project2_compiled project2_direct project2_tree decode scan}; do
      [ "$set" != gm1 ] && [[ "$arm" == project2* || "$arm" == scan ]] && continue
      many=$(elapsed "$bin" "$set" "$n" "$arm")
      one=$(elapsed "$bin" "$set" 1 "$arm")
      echo "$set $arm $(echo "$many - $one" | bc)" >> "$out"
    done
  done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
size = {}
for line in open(sys.argv[1]):
    if line.startswith("size "):
        _, s, rows, nbytes = line.split()
        size[s] = (int(rows), int(nbytes))
        continue
    s, a, t = line.split()
    d[(s, a)].append(float(t))
# Per core: every arm converts on one thread.
for (s, a), v in sorted(d.items()):
    m = statistics.median(v)
    rows, nbytes = size[s]
    print(f"{s:10} {a:9} median {m:.3f} s (min {min(v):.3f}, max {max(v):.3f}); "
          f"{rows / m / 1e6:.2f} M records/s, {nbytes / m / 1e6:.0f} MB/s per core")
def ratio(s, fast, slow):
    """Per-round speed ratio fast / slow (time of slow over time of fast), if both ran."""
    if (s, fast) not in d or (s, slow) not in d:
        return
    r = [q / p for p, q in zip(d[(s, fast)], d[(s, slow)])]
    print(f"{s}: {fast} speed / {slow} speed, per round: median {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
for s in sorted({s for s, _ in d}):
    for other in ["ptars", "tree", "direct", "chunked", "compiled", "decode"]:
        ratio(s, "protojit", other)
    ratio(s, "tree", "ptars")
    for path in ["compiled", "chunked"]:
        for other in ["ptars", "decode"] + (["chunked"] if path == "compiled" else []):
            ratio(s, path, other)
for s, a in sorted({k for k in d if k[1].startswith("opt:")}):
    r = [c / o for o, c in zip(d[(s, a)], d[(s, "compiled")])] if (s, "compiled") in d else []
    if r:
        print(f"{s}: {a} speed / compiled (default mapping) speed, per round: median {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
for arm in [a for a in ["project2", "project2_chunked", "project2_compiled", "project2_direct", "project2_tree"] if ("gm1", a) in d]:
    r = [x / y for x, y in zip(d[("gm1", arm)], d[("gm1", "protojit")])]
    print(f"gm1: 2-column projection ({arm}) time / all columns (protojit): median {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
    if ("gm1", "scan") in d:
        r = [x / y for x, y in zip(d[("gm1", arm)], d[("gm1", "scan")])]
        print(f"gm1: 2-column projection ({arm}) time / the scan floor: median {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
PY
rm -f "$out"
