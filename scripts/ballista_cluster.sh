#!/usr/bin/env bash
# protojit-ballista's tests alone (the workspace's `cargo test` runs them too): the codecs'
# round trips; the cluster test, which starts a scheduler and two executors as processes on
# 127.0.0.1 and compares their answers (and those of `protojit-ballista sql --cluster`, what
# `protojit sql --cluster` runs) with a local session's; and the executor-loss test, which
# SIGKILLs an executor mid-query and accepts the complete result or an error.
# `protojit sql --cluster` finds the binary beside itself, or through PROTOJIT_BALLISTA, e.g.
# PROTOJIT_BALLISTA=target/debug/protojit-ballista.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "+ cargo test -p protojit-ballista"
time cargo test -p protojit-ballista -- --nocapture
