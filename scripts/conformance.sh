#!/usr/bin/env bash
# Builds protobuf's v21.12 conformance runner and runs the whole suite (binary/JSON, then text
# format) against protojit-conformance with --enforce_recommended and no failure list: any
# failure or skip fails the script.
#
# Usage: scripts/conformance.sh [RUNNER_DIR]   (default /tmp/protojit-conformance-runner)
# Needs ../shared/conformance-runner and ../shared/corpus/conformance beside the repository
# (the runner's build installs g++, protobuf-compiler and libprotobuf-dev when missing).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runner_dir=${1:-/tmp/protojit-conformance-runner}
shared=$repo/../shared
bash "$shared/conformance-runner/build.sh" "$runner_dir" >/dev/null
cargo build --release -p protojit-cli --bin protojit-conformance --manifest-path "$repo/Cargo.toml" -q
target=${CARGO_TARGET_DIR:-$repo/target}
log=$(mktemp)
status=0
(cd "$runner_dir" && PROTOJIT_CONFORMANCE_DIR="$shared/corpus/conformance" \
    ./conformance_test_runner --enforce_recommended "$target/release/protojit-conformance") >"$log" 2>&1 || status=$?
grep -E "^CONFORMANCE SUITE (PASSED|FAILED)" "$log" || true
# The runner exits non-zero on unexpected failures; skips must be zero too.
if [ "$status" -ne 0 ] || grep -E "^CONFORMANCE SUITE" "$log" | grep -vq " 0 skipped"; then
    grep -E "^ERROR|^WARNING|^[A-Z][a-z]+\." "$log" | head -40 >&2 || true
    echo "conformance: failures or skips (full log: $log)" >&2
    exit 1
fi
rm -f "$log"
