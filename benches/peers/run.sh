#!/usr/bin/env bash
# C/C++ peers on the same bytes as protojit, interleaved, with ratios to protojit's JIT.
#
#   bash benches/peers/run.sh            # installs what it needs (Debian; as root or via sudo)
#
# Environment: CORPUS (default ../shared/corpus), WORK (default target/peers), SECONDS_PER_RUN
# (default 0.25), ROUNDS (default 10), GENERATED=1 to add the generated corpus, MEMORY_ONLY=1
# for the memory table alone (libprotobuf Arena bytes per payload; no timing). Each round
# runs every arm once per payload, the arms' order rotating from round to round; ratios are
# taken within a round and reported as the median over the rounds with their min–max.
#
# Arms, each a separate process per measurement, decode only, same timing method
# (examples/decode_timing.rs, cpp_harness.cc, c_harness.c: batches calibrated to ~50 ms,
# median batch throughput):
#   protojit_jit     protojit, JIT, arena reset between decodes
#   protojit_fresh   protojit, JIT, a new arena per decode
#   protojit_interp  protojit, interpreter, arena reset between decodes
#   cpp_new          libprotobuf generated code, new heap message per parse
#   cpp_arena        libprotobuf generated code, new google::protobuf::Arena per parse
#   cpp_reuse        libprotobuf generated code, one message cleared and parsed into again
#   cpp_dynamic      libprotobuf DynamicMessage from the schema's descriptor set
#   protobuf_c       protobuf-c generated descriptors, protobuf_c_message_unpack + free
# upb: Debian's libupb-dev (0.0.0~git200730) ships neither the protoc-gen-upb generator nor
# the reflection headers, so it has no arm (the script says so if that changes).
#
# Then the OSM application: `osmium fileinfo -e` (osmium-tool) against examples/osm_stats.rs
# on the same .osm.pbf, whole-process wall time. Not part of CI.
set -eu

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
CORPUS="${CORPUS:-$REPO/../shared/corpus}"
WORK="${WORK:-$REPO/target/peers}"
SECS="${SECONDS_PER_RUN:-0.25}"
ROUNDS="${ROUNDS:-10}"
CORPUS="$(cd "$CORPUS" && pwd)"

# --- packages ---------------------------------------------------------------------------
PKGS="libprotobuf-dev protobuf-compiler libprotobuf-c-dev protobuf-c-compiler osmium-tool libupb-dev g++ pkg-config"
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing:$missing" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

mkdir -p "$WORK"
rm -rf "$WORK/proto" "$WORK/cpp" "$WORK/c" "$WORK/fds"
mkdir -p "$WORK/proto" "$WORK/cpp" "$WORK/c" "$WORK/fds"

# --- protojit binaries and the generated corpus --------------------------------------------
# The bench profile (optimised, as release): it shares its build with `cargo bench`, and
# examples link the dev-dependencies (DataFusion), which a separate release build would
# compile all over again.
echo "building protojit examples (bench profile)..." >&2
(cd "$REPO" && cargo build -q --profile bench --example decode_timing --example osm_stats \
  && cargo build -q --profile bench -p protojit-corpus --bin gen-corpus)
TARGET_DIR="$(cd "$REPO" && cargo metadata --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)"
PJ="$TARGET_DIR/release/examples/decode_timing"
OSM_STATS="$TARGET_DIR/release/examples/osm_stats"
"$TARGET_DIR/release/gen-corpus" "$WORK/gen" >/dev/null

# --- schemas ----------------------------------------------------------------------------
SHARED_PROTOS="benchmarks.proto benchmark_message1_proto2.proto benchmark_message1_proto3.proto benchmark_message2.proto fileformat.proto osmformat.proto vector_tile.proto"
OWN_PROTOS="dataset.proto embedded.proto sweeps.proto chain10.proto"
for p in $SHARED_PROTOS; do cp "$CORPUS/$p" "$WORK/proto/"; done
for p in $OWN_PROTOS; do cp "$REPO/corpus/schemas/$p" "$WORK/proto/"; done
# vector_tile.proto asks for LITE_RUNTIME, whose classes are not in the generated descriptor
# pool the harness looks types up in; the peer copy drops that option (full and lite classes
# share libprotobuf's parser). Every arm, protojit's included, reads this same copy.
sed -i '/option optimize_for = LITE_RUNTIME;/d' "$WORK/proto/vector_tile.proto"
NOTES="- vector_tile.proto: the peers' copy drops \`option optimize_for = LITE_RUNTIME\` (see run.sh)."
ALL_PROTOS="$SHARED_PROTOS $OWN_PROTOS"

echo "generating C++ and C code..." >&2
(cd "$WORK/proto" && protoc -I. --cpp_out="$WORK/cpp" $ALL_PROTOS 2>/dev/null)
for p in $ALL_PROTOS; do
  (cd "$WORK/proto" && protoc -I. --include_imports --descriptor_set_out="$WORK/fds/${p%.proto}.fds" "$p" 2>/dev/null)
done
C_OK=""
for p in $ALL_PROTOS; do
  rc=0
  (cd "$WORK/proto" && protoc-c -I. --c_out="$WORK/c" "$p" 2>"$WORK/c/${p%.proto}.err") || rc=$?
  if [ $rc -eq 0 ]; then
    C_OK="$C_OK ${p%.proto}"
  else
    why="$( (grep -v WARNING "$WORK/c/${p%.proto}.err" || true) | head -c 300 | tr '\n' ' ')"
    if [ -z "$why" ]; then
      why="protoc-c exited with status $rc"
      [ $rc -ne 139 ] || why="$why (a crash)"
      if grep -q '^ *\(optional\|required\|repeated\) group ' "$WORK/proto/$p"; then why="$why; the file uses groups"; fi
    fi
    echo "note: protoc-c cannot compile $p: $why" >&2
    NOTES="$NOTES
- protobuf_c: protoc-c ($(dpkg-query -W -f '${Version}' protobuf-c-compiler)) rejects $p: $why"
  fi
done
{
  for s in $C_OK; do echo "#include \"$s.pb-c.h\""; done
  echo "static const ProtobufCMessageDescriptor* const DESCRIPTORS[] = {"
  for s in $C_OK; do
    sed -n 's/^extern const ProtobufCMessageDescriptor \([a-z0-9_]*\)__descriptor;$/  \&\1__descriptor,/p' "$WORK/c/$s.pb-c.h"
  done
  echo "};"
} > "$WORK/c/descriptors.h"

echo "building harnesses..." >&2
g++ -O2 -std=c++17 -I"$WORK/cpp" "$REPO/benches/peers/cpp_harness.cc" "$WORK"/cpp/*.pb.cc \
  $(pkg-config --cflags --libs protobuf) -o "$WORK/cpp_harness"
C_SRCS=""; for s in $C_OK; do C_SRCS="$C_SRCS $WORK/c/$s.pb-c.c"; done
gcc -O2 -I"$WORK/c" "$REPO/benches/peers/c_harness.c" $C_SRCS $(pkg-config --cflags --libs libprotobuf-c) -o "$WORK/c_harness"

if ls /usr/bin/protoc-gen-upb* >/dev/null 2>&1 && [ -e /usr/include/upb/def.h ]; then
  echo "note: a upb generator is installed now; upb has no arm in this script yet" >&2
else
  echo "note: upb skipped: Debian's libupb-dev ships no protoc-gen-upb generator and no reflection headers" >&2
  NOTES="$NOTES
- upb: no arm: Debian's libupb-dev ($(dpkg-query -W -f '${Version}' libupb-dev)) ships no protoc-gen-upb generator and no reflection headers."
fi
NOTES="$NOTES
- descriptor_fds_srcinfo: the cpp_new/arena/reuse arms use libprotobuf's own compiled-in google.protobuf.FileDescriptorSet ($(protoc --version)); cpp_dynamic and protojit load the corpus's descriptor.fds.bin; protobuf-c has no descriptor.proto here.
- A '—' is an arm that cannot decode the payload (see the notes) or has no code for its type."

# --- cases: name file proto type -----------------------------------------------------------
CASES="$WORK/cases.tsv"
{
  printf 'gm1_proto2\t%s\tbenchmark_message1_proto2.proto\tbenchmarks.proto2.GoogleMessage1\n' "$CORPUS/google_message1_proto2.payload0.bin"
  printf 'gm1_proto3\t%s\tbenchmark_message1_proto3.proto\tbenchmarks.proto3.GoogleMessage1\n' "$CORPUS/google_message1_proto3.payload0.bin"
  printf 'gm2\t%s\tbenchmark_message2.proto\tbenchmarks.proto2.GoogleMessage2\n' "$CORPUS/google_message2.payload0.bin"
  printf 'osm_header\t%s\tosmformat.proto\tOSMPBF.HeaderBlock\n' "$CORPUS/liechtenstein.block0.headerblock.bin"
  printf 'osm_dense\t%s\tosmformat.proto\tOSMPBF.PrimitiveBlock\n' "$CORPUS/liechtenstein.block1.primitiveblock-dense.bin"
  printf 'osm_ways\t%s\tosmformat.proto\tOSMPBF.PrimitiveBlock\n' "$CORPUS/liechtenstein.block40.primitiveblock-ways.bin"
  printf 'osm_relations\t%s\tosmformat.proto\tOSMPBF.PrimitiveBlock\n' "$CORPUS/liechtenstein.block45.primitiveblock-relations.bin"
  printf 'mvt_chicago\t%s\tvector_tile.proto\tvector_tile.Tile\n' "$CORPUS/mvt-chicago-13-2101-3044.mvt"
  printf 'mvt_sanfrancisco\t%s\tvector_tile.proto\tvector_tile.Tile\n' "$CORPUS/mvt-sanfrancisco-15-5238-12666.mvt"
  printf 'mvt_astana\t%s\tvector_tile.proto\tvector_tile.Tile\n' "$CORPUS/mvt-osmqa-astana-12-2860-1368.mvt"
  printf 'mvt_vtjs\t%s\tvector_tile.proto\tvector_tile.Tile\n' "$CORPUS/vector-tile-js-14-8801-5371.vector.pbf"
  printf 'descriptor_fds\t%s\tdescriptor.fds.bin\tgoogle.protobuf.FileDescriptorSet\n' "$CORPUS/descriptor.fds.bin"
  printf 'descriptor_fds_srcinfo\t%s\tdescriptor.fds.bin\tgoogle.protobuf.FileDescriptorSet\n' "$CORPUS/descriptor_with_source_info.fds.bin"
  # The BenchmarkDataset wrappers: reported apart from the 13 payloads above.
  printf 'dataset_gm1_proto2\t%s\tbenchmarks.proto\tbenchmarks.BenchmarkDataset\n' "$CORPUS/dataset.google_message1_proto2.pb"
  printf 'dataset_gm1_proto3\t%s\tbenchmarks.proto\tbenchmarks.BenchmarkDataset\n' "$CORPUS/dataset.google_message1_proto3.pb"
  printf 'dataset_gm2\t%s\tbenchmarks.proto\tbenchmarks.BenchmarkDataset\n' "$CORPUS/dataset.google_message2.pb"
  if [ "${GENERATED:-0}" = 1 ]; then
    tail -n +2 "$WORK/gen/index.tsv" | while IFS=$'\t' read -r name family proto message bytes; do
      case "$name" in *_1k) continue ;; esac
      printf '%s\t%s\t%s\t%s\n' "$name" "$WORK/gen/$name.bin" "$proto" "$message"
    done
  fi
} > "$CASES"

# --- memory: what libprotobuf's Arena holds for one parse ----------------------------------
# protojit's side is `cargo run --profile bench --example memory` (Arena::allocated_bytes).
memory_table() {
  echo "libprotobuf generated code parsing once into a fresh Arena (\`cpp_harness space\`): the"
  echo "bytes the Arena took from the system (SpaceAllocated, whole blocks) and the heap bytes held"
  echo "in all while the message lives (glibc's count; string buffers outside the Arena included,"
  echo "blocks reused from malloc's thread cache not: 0 for the smallest)."
  echo
  echo "| payload | bytes | Arena SpaceAllocated | heap held |"
  echo "|---|---:|---:|---:|"
  while IFS=$'\t' read -r name file proto type; do
    read -r space heap <<< "$("$WORK/cpp_harness" space "$type" "$file" 0 2>/dev/null || echo "- -")"
    echo "| $name | $(stat -c %s "$file") | $space | $heap |"
  done < "$CASES"
  echo
}
if [ "${MEMORY_ONLY:-0}" = 1 ]; then
  memory_table
  exit 0
fi

ARMS="protojit_jit protojit_fresh protojit_interp cpp_new cpp_arena cpp_reuse cpp_dynamic protobuf_c"

run_arm() { # arm file proto type -> MB/s or "-"
  local arm=$1 file=$2 proto=$3 type=$4 out
  case $arm in
    protojit_*)
      local extra=""
      case $arm in protojit_fresh) extra="--fresh" ;; protojit_interp) extra="--engine interp" ;; esac
      if [ "$proto" = descriptor.fds.bin ]; then
        out=$("$PJ" --schema "$CORPUS/descriptor.fds.bin" --type "$type" --seconds "$SECS" $extra "$file" 2>/dev/null) || out=-
      else
        out=$("$PJ" --schema "$WORK/proto/$proto" --include "$WORK/proto" --type "$type" --seconds "$SECS" $extra "$file" 2>/dev/null) || out=-
      fi ;;
    cpp_new|cpp_arena|cpp_reuse)
      out=$("$WORK/cpp_harness" "${arm#cpp_}" "$type" "$file" "$SECS" 2>/dev/null) || out=- ;;
    cpp_dynamic)
      local fds="$WORK/fds/${proto%.proto}.fds"
      [ "$proto" = descriptor.fds.bin ] && fds="$CORPUS/descriptor.fds.bin"
      out=$("$WORK/cpp_harness" dynamic "$type" "$file" "$SECS" "$fds" 2>/dev/null) || out=- ;;
    protobuf_c)
      out=$("$WORK/c_harness" "$type" "$file" "$SECS" 2>/dev/null) || out=- ;;
  esac
  echo "${out:--}"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else print a[int((NR+1)/2)]}'; }

echo "measuring ($ROUNDS interleaved rounds of ${SECS}s per arm and payload)..." >&2
RESULTS="$WORK/results.tsv"; : > "$RESULTS"
read -r -a ARM_LIST <<< "$ARMS"; NARMS=${#ARM_LIST[@]}
while IFS=$'\t' read -r name file proto type; do
  for r in $(seq "$ROUNDS"); do
    # Rotate the arms' order by round, so no arm always runs after the same one.
    for k in $(seq 0 $((NARMS - 1))); do
      arm=${ARM_LIST[$(( (k + r) % NARMS ))]}
      printf '%s\t%s\t%s\t%s\n' "$name" "$arm" "$r" "$(run_arm "$arm" "$file" "$proto" "$type")" >> "$RESULTS"
    done
  done
  echo "  $name done" >&2
done < "$CASES"

# --- tables ---------------------------------------------------------------------------------
python3 "$REPO/benches/peers/report.py" "$RESULTS" "$CASES" "$ROUNDS"
echo
memory_table

echo
echo "Notes:"
echo "$NOTES"

# --- OSM application ------------------------------------------------------------------------
PBF="$CORPUS/liechtenstein.osm.pbf"
if [ -f "$PBF" ]; then
  wall() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
  o=(); p=()
  for r in $(seq "$ROUNDS"); do
    o+=("$(wall osmium fileinfo -e "$PBF")")
    p+=("$(wall "$OSM_STATS" "$PBF" --schemas "$CORPUS")")
  done
  om=$(printf '%s\n' "${o[@]}" | median); pm=$(printf '%s\n' "${p[@]}" | median)
  echo
  echo "OSM application on $(basename "$PBF") ($(stat -c %s "$PBF") bytes), whole-process wall time, median of $ROUNDS:"
  echo
  echo "| program | ms | ratio to osm_stats |"
  echo "|---|---:|---:|"
  echo "| protojit examples/osm_stats (schema load + JIT included) | $pm | 1.00 |"
  echo "| osmium fileinfo -e (osmium-tool $(dpkg-query -W -f '${Version}' osmium-tool)) | $om | $(awk -v a="$om" -v b="$pm" 'BEGIN {printf "%.2f", a/b}') |"
  echo
  echo "osmium's counts:"
  osmium fileinfo -e "$PBF" | grep -E "Number of (nodes|ways|relations)" | sed 's/^ */    /'
  echo "osm_stats's counts:"
  "$OSM_STATS" "$PBF" --schemas "$CORPUS" | grep -E "^(nodes|ways|relations|tags)" | sed 's/^/    /'
fi
