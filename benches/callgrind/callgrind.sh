#!/usr/bin/env bash
# Instruction counts (callgrind) of decode, read and compile: what "cost unchanged" is checked against.
#
# usage: callgrind.sh REPO_DIR TARGET_DIR            (ONLY=REGEX runs the measures whose name matches;
#                                                    READ_DRIVER=FILE.rs another read driver)
#
# Method (BENCHMARKS.md, "Addendum: pointer vectors ..." and "Evening re-run"):
#  - decode/<payload>: release `profile SCHEMA TYPE INPUT jit N` (REPO's examples/profile.rs,
#    built as said under "build" below), eager JIT, one reused
#    arena; instructions per decode = (Ir at 3N iterations - Ir at N) / 2N, which cancels
#    schema loading and compilation; N as `iterations` below says (BENCHMARKS.md used 20, or
#    2,000 for the payloads under 1 KB: N_RULE=benchmarks).
#  - read/<mode>/<payload>: the read driver callgrind_read.rs (beside this script): one
#    decode, then N reads; per read
#    = (Ir at 3N - Ir at N) / 2N.
#  - compile/<schema>: Ir of `profile SCHEMA TYPE INPUT jit 1` (schema load + eager
#    compile + one decode), median of three runs (compilation is not bit-for-bit repeatable).
# Ir is callgrind's "Collected" total of the whole process. Builds and valgrind run under
# `nice -n 10`; the counts do not depend on the machine's load.
set -euo pipefail
shopt -s inherit_errexit

[ $# -eq 2 ] || { echo "usage: $0 REPO_DIR TARGET_DIR" >&2; exit 2; }
REPO=$(cd "$1" && pwd)
export CARGO_TARGET_DIR=$(mkdir -p "$2" && cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
CORPUS=${CORPUS:-$REPO/../shared/corpus}
ONLY=${ONLY:-.}
# The read driver's source (READ_DRIVER=FILE for a tree whose API differs from the one the
# default driver is written against).
READ_DRIVER=$(realpath "${READ_DRIVER:-$HERE/callgrind_read.rs}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

log() { echo "$*" >&2; }

# --- build -------------------------------------------------------------------------------
# Both programs are built as one release crate outside the repository (in TARGET_DIR), with
# path dependencies on REPO's `protojit` and `protojit-bench-support` and REPO's Cargo.lock:
# `profile` is REPO's own examples/profile.rs, unchanged. This skips the facade's
# dev-dependencies (DataFusion, Parquet, Arrow), which `cargo build --release --example
# profile` compiles; PROFILE_BUILD=example builds and uses profile that way instead.
DRIVER_DIR=$CARGO_TARGET_DIR/callgrind-read-crate
mkdir -p "$DRIVER_DIR"
cat > "$DRIVER_DIR/Cargo.toml" <<EOF
[package]
name = "callgrind-read"
version = "0.0.0"
edition = "2021"
publish = false

[[bin]]
name = "callgrind-read"
path = "main.rs"

[[bin]]
name = "profile"
path = "profile.rs"

[dependencies]
protojit = { path = "$REPO" }
protojit-bench-support = { path = "$REPO/benches/support" }

[workspace]
EOF
cp "$READ_DRIVER" "$DRIVER_DIR/main.rs"
cp "$REPO/examples/profile.rs" "$DRIVER_DIR/profile.rs"
# The repository's pins; cargo drops what the crate does not use.
cp "$REPO/Cargo.lock" "$DRIVER_DIR/Cargo.lock"
log "== building the read driver and profile (release, $DRIVER_DIR)"
(cd "$DRIVER_DIR" && nice -n 10 cargo build --release) >&2
DRIVER=$CARGO_TARGET_DIR/release/callgrind-read
PROFILE=$CARGO_TARGET_DIR/release/profile
if [ "${PROFILE_BUILD:-crate}" = example ]; then
    log "== building examples/profile (release) in $REPO"
    (cd "$REPO" && nice -n 10 cargo build --release --example profile) >&2
    PROFILE=$CARGO_TARGET_DIR/release/examples/profile
fi

# --- measure -----------------------------------------------------------------------------
# Ir of one process run under callgrind.
ir() {
    local out=$WORK/cg.out err=$WORK/cg.err
    if ! nice -n 10 valgrind --tool=callgrind --callgrind-out-file="$out" "$@" > "$WORK/stdout" 2> "$err"; then
        log "FAILED: $*"; cat "$err" >&2; exit 1
    fi
    grep -oP '==\d+== Collected : \K\d+' "$err"
}

# Per-iteration Ir: (Ir(3N) - Ir(N)) / 2N, one decimal. Also keeps the program's first
# stdout line (the read driver's value of one read) in $WORK/last.
per_iter() {
    local n=$1; shift
    local a b
    a=$(ir "$@" "$n")
    b=$(ir "$@" "$((3 * n))")
    head -1 "$WORK/stdout" > "$WORK/last"
    awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / (2 * n) }'
}

ROWS=()
row() { ROWS+=("$(printf '| %-38s | %9s | %15s | %s |' "$1" "$2" "$3" "$4")"); log "${ROWS[-1]}"; }

# name | file | schema (.proto in the corpus) | type. The 13 public payloads of
# benches/support SHARED_CASES (the descriptor sets decoded with descriptor.proto).
CASES=(
    "gm1_proto2|google_message1_proto2.payload0.bin|benchmark_message1_proto2.proto|benchmarks.proto2.GoogleMessage1"
    "gm1_proto3|google_message1_proto3.payload0.bin|benchmark_message1_proto3.proto|benchmarks.proto3.GoogleMessage1"
    "gm2|google_message2.payload0.bin|benchmark_message2.proto|benchmarks.proto2.GoogleMessage2"
    "osm_header|liechtenstein.block0.headerblock.bin|osmformat.proto|OSMPBF.HeaderBlock"
    "osm_dense|liechtenstein.block1.primitiveblock-dense.bin|osmformat.proto|OSMPBF.PrimitiveBlock"
    "osm_ways|liechtenstein.block40.primitiveblock-ways.bin|osmformat.proto|OSMPBF.PrimitiveBlock"
    "osm_relations|liechtenstein.block45.primitiveblock-relations.bin|osmformat.proto|OSMPBF.PrimitiveBlock"
    "mvt_chicago|mvt-chicago-13-2101-3044.mvt|vector_tile.proto|vector_tile.Tile"
    "mvt_sanfrancisco|mvt-sanfrancisco-15-5238-12666.mvt|vector_tile.proto|vector_tile.Tile"
    "mvt_astana|mvt-osmqa-astana-12-2860-1368.mvt|vector_tile.proto|vector_tile.Tile"
    "mvt_vtjs|vector-tile-js-14-8801-5371.vector.pbf|vector_tile.proto|vector_tile.Tile"
    "descriptor_fds|descriptor.fds.bin|descriptor.proto|google.protobuf.FileDescriptorSet"
    "descriptor_fds_srcinfo|descriptor_with_source_info.fds.bin|descriptor.proto|google.protobuf.FileDescriptorSet"
)
# N per payload. Schema load and compilation vary by up to ~40,000 instructions from one
# process to the next (hash seeds; gm1_proto2's setup measured 119,318,317 and 119,281,621,
# gm2's compile runs spread 38,000), and that error is divided by 2N: at BENCHMARKS.md's N
# (20; 2,000 under 1 KB) it is ~1% on gm1 and descriptor_fds and 2% on a slices walk. The
# default rule takes N = max(20, SCALE / bytes), SCALE 5*10^6 for decodes and visits (which
# cost 5-30 instructions a byte) and 10^8 for slice walks (~0.4-1.5 a byte), so each
# difference spans ~10^8 instructions (error ~0.05%). N_RULE=benchmarks: 20 / 2,000.
iterations() {
    local bytes scale=${2:-5000000}; bytes=$(stat -c %s "$1")
    if [ "${N_RULE:-scaled}" = benchmarks ]; then
        [ "$bytes" -lt 1024 ] && echo 2000 || echo 20
    else
        echo $(( (scale + bytes - 1) / bytes > 20 ? (scale + bytes - 1) / bytes : 20 ))
    fi
}

for c in "${CASES[@]}"; do
    IFS='|' read -r name file schema type <<< "$c"
    [[ "decode/$name" =~ $ONLY ]] || continue
    n=$(iterations "$CORPUS/$file")
    v=$(per_iter "$n" "$PROFILE" "$CORPUS/$schema" "$type" "$CORPUS/$file" jit)
    row "decode/$name" "$n" "$v" "per decode"
done

for c in "${CASES[@]}"; do
    IFS='|' read -r name file schema type <<< "$c"
    [[ "read/visit/$name" =~ $ONLY ]] || continue
    n=$(iterations "$CORPUS/$file")
    v=$(per_iter "$n" "$DRIVER" visit "$CORPUS/$schema" "$type" "$CORPUS/$file")
    row "read/visit/$name" "$n" "$v" "per walk; $(cut -d' ' -f3- "$WORK/last" | cut -d, -f1)"
done

gm1=("$CORPUS/benchmark_message1_proto2.proto" benchmarks.proto2.GoogleMessage1 "$CORPUS/google_message1_proto2.payload0.bin")
if [[ "read/handle/gm1_field2" =~ $ONLY ]]; then
    v=$(per_iter 1000000 "$DRIVER" handle "${gm1[@]}")
    row "read/handle/gm1_field2" 1000000 "$v" "per read; $(cut -d' ' -f3- "$WORK/last" | cut -d, -f1)"
fi
if [[ "read/get_by_name/gm1_field2" =~ $ONLY ]]; then
    v=$(per_iter 100000 "$DRIVER" get_by_name "${gm1[@]}")
    row "read/get_by_name/gm1_field2" 100000 "$v" "per read; $(cut -d' ' -f3- "$WORK/last" | cut -d, -f1)"
fi
for c in "${CASES[@]}"; do
    IFS='|' read -r name file schema type <<< "$c"
    case $name in osm_dense) mode=slices_osm ;; mvt_*) mode=slices_mvt ;; *) continue ;; esac
    [[ "read/slices/$name" =~ $ONLY ]] || continue
    n=$(iterations "$CORPUS/$file" 100000000)
    v=$(per_iter "$n" "$DRIVER" "$mode" "$CORPUS/$schema" "$type" "$CORPUS/$file")
    row "read/slices/$name" "$n" "$v" "per walk (no decode); $(cut -d' ' -f3- "$WORK/last" | cut -d, -f1)"
done

# Compile cost: schema load + eager compile + one decode, median of three.
COMPILES=(
    "descriptor|descriptor.proto|google.protobuf.FileDescriptorSet|descriptor.fds.bin"
    "osmformat|osmformat.proto|OSMPBF.PrimitiveBlock|liechtenstein.block1.primitiveblock-dense.bin"
    "gm2|benchmark_message2.proto|benchmarks.proto2.GoogleMessage2|google_message2.payload0.bin"
)
for c in "${COMPILES[@]}"; do
    IFS='|' read -r name schema type file <<< "$c"
    [[ "compile/$name" =~ $ONLY ]] || continue
    runs=()
    for _ in 1 2 3; do v=$(ir "$PROFILE" "$CORPUS/$schema" "$type" "$CORPUS/$file" jit 1); runs+=("$v"); done
    med=$(printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p)
    row "compile/$name" 1 "$med" "median of ${runs[*]}"
done

# --- report ------------------------------------------------------------------------------
tree=$(git -C "$REPO" rev-parse --short HEAD)
dirty=$(git -C "$REPO" status --porcelain --untracked-files=no | wc -l)
echo "callgrind instruction counts; tree $tree$([ "$dirty" -eq 0 ] || echo " (+$dirty uncommitted changes)"), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "$(rustc --version), $(valgrind --version), corpus $CORPUS, profile from ${PROFILE_BUILD:-crate} build, N rule ${N_RULE:-scaled}, read driver $(basename "$READ_DRIVER")"
echo
printf '| %-38s | %9s | %15s | %s |\n' measure N instructions note
echo "|---|---:|---:|---|"
printf '%s\n' "${ROWS[@]}"
