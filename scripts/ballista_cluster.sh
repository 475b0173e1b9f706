#!/usr/bin/env bash
# Builds protojit-ballista (outside the root workspace, with its own Cargo.lock and target
# directory, so that `cargo test --workspace` does not build Ballista) and runs its tests:
# the codecs' round trips and the cluster test, which starts a scheduler and two executors
# as processes on 127.0.0.1 and compares their answers with a local session's.
set -euo pipefail
cd "$(dirname "$0")/../ballista"
echo "+ cargo build --locked --tests (protojit-ballista)"
time cargo build --locked --tests
echo "+ cargo test --locked (protojit-ballista)"
time cargo test --locked -- --nocapture
