#!/usr/bin/env bash
# Builds protojit-ballista (outside the root workspace, with its own Cargo.lock and target
# directory, so that `cargo test --workspace` does not build Ballista) and runs its tests:
# the codecs' round trips; the cluster test, which starts a scheduler and two executors as
# processes on 127.0.0.1 and compares their answers (and those of `protojit-ballista sql
# --cluster`, what `protojit sql --cluster` runs) with a local session's; and the executor-loss
# test, which SIGKILLs an executor mid-query and accepts the complete result or an error.
# `protojit sql --cluster` finds the binary through PROTOJIT_BALLISTA, e.g.
# PROTOJIT_BALLISTA=ballista/target/debug/protojit-ballista.
set -euo pipefail
cd "$(dirname "$0")/../ballista"
echo "+ cargo build --locked --tests (protojit-ballista)"
time cargo build --locked --tests
echo "+ cargo test --locked (protojit-ballista)"
time cargo test --locked -- --nocapture
