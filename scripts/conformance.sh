#!/usr/bin/env bash
# Builds protobuf's v21.12 conformance runner and runs the whole suite (binary/JSON, then text
# format) against protojit-conformance with --enforce_recommended and no failure list: any
# failure or skip fails the script. Prints the runner's two summary lines and the time taken.
#
# Usage: scripts/conformance.sh [RUNNER_DIR]   (default /tmp/protojit-conformance-runner)
# Needs ../shared/conformance-runner and ../shared/corpus/conformance beside the repository
# (the runner's build installs g++, protobuf-compiler and libprotobuf-dev when missing).
#
# The testee is the dev-profile build: .ci/run calls this right after the workspace tests,
# whose dependencies it reuses, and a release build would take most of CI's time budget.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
runner_dir=${1:-/tmp/protojit-conformance-runner}
shared=$repo/../shared
started=$(date +%s)
# The runner (C++, one file at a time: about 80 s of one core) builds while cargo builds the
# testee (mostly the workspace's crates again in the dev profile, which the README's first
# command then reuses).
bash "$shared/conformance-runner/build.sh" "$runner_dir" >/dev/null &
runner_build=$!
cargo build -p protojit-cli --bin protojit-conformance --manifest-path "$repo/Cargo.toml" -q
wait "$runner_build"
target=${CARGO_TARGET_DIR:-$repo/target}
log=$(mktemp)
status=0
(cd "$runner_dir" && PROTOJIT_CONFORMANCE_DIR="$shared/corpus/conformance" \
    ./conformance_test_runner --enforce_recommended "$target/debug/protojit-conformance") >"$log" 2>&1 || status=$?
grep -E "^CONFORMANCE SUITE (PASSED|FAILED)" "$log" || true
echo "conformance: $(($(date +%s) - started)) s (runner and testee builds included)"
# The runner exits non-zero on unexpected failures; skips must be zero too, and both suites
# must have reported.
if [ "$status" -ne 0 ] || [ "$(grep -cE "^CONFORMANCE SUITE PASSED" "$log")" -ne 2 ] \
    || grep -E "^CONFORMANCE SUITE" "$log" | grep -vq " 0 skipped"; then
    grep -E "^ERROR|^WARNING|^[A-Z][a-z]+\." "$log" | head -40 >&2 || true
    echo "conformance: failures or skips (full log: $log)" >&2
    exit 1
fi
rm -f "$log"
