#!/usr/bin/env bash
# Every test of the repository: the Rust workspace (every crate, every feature), then the
# Python package built from it and its suite (scripts/python_tests.sh). The README's test
# command; .ci/run runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "+ cargo test --workspace --all-features"
cargo test --workspace --all-features
bash scripts/python_tests.sh
