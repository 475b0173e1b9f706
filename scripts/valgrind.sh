#!/usr/bin/env bash
# Runs the corpus, mutation, property and malformed-input tests of both engines under valgrind memcheck; exits non-zero on any error.
#
# Usage: scripts/valgrind.sh [TEST...]      (default: engine jit_mutation property malformed)
#        VALGRIND_PACKAGE=protojit-arrow VALGRIND_FILTER=compiled scripts/valgrind.sh direct
#                                           (another package's tests; only the tests whose
#                                           names contain the filter)
#
# Case counts are capped so the run takes minutes, not hours (valgrind runs code 20-50x
# slower; the JIT's code is translated like any other): PROPTEST_CASES (per property,
# default here 24) and PROTOJIT_MUTATIONS (the mutation test's total budget, default here
# 3000) and PROTOJIT_CUTS (truncation points per corpus payload in the malformed-input
# tests, default here 40) override them. `--smc-check=all-non-file` makes valgrind notice code the JIT writes
# into anonymous memory; leaks are not checked (arenas and compiled modules live until the
# process ends in some tests by design).
set -euo pipefail
cd "$(dirname "$0")/.."

tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(engine jit_mutation property malformed)
export PROPTEST_CASES="${PROPTEST_CASES:-24}"
export PROTOJIT_MUTATIONS="${PROTOJIT_MUTATIONS:-3000}"
export PROTOJIT_CUTS="${PROTOJIT_CUTS:-40}"

args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
# The test executables, as cargo reports them (built in the test profile).
package=${VALGRIND_PACKAGE:-protojit}
filter=()
[ -z "${VALGRIND_FILTER:-}" ] || filter=("$VALGRIND_FILTER")
# Built as the README's test command builds them (`--workspace --all-features`), so a run after
# `cargo test --workspace --all-features` compiles nothing: `-p` alone would select other
# features and rebuild the workspace's crates (minutes in CI). A test target's name can occur
# in several packages (`stream`), so the package is matched too.
mapfile -t bins < <(cargo test --workspace --all-features "${args[@]}" --no-run --message-format=json 2>/dev/null |
    jq -r --arg pkg "$package" 'select(.reason == "compiler-artifact" and .executable != null and .target.kind == ["test"]
        and (.package_id | test("#" + $pkg + "@"))) | .executable')
[ ${#bins[@]} -eq "${#tests[@]}" ] || { echo "expected ${#tests[@]} test executables, got: ${bins[*]}" >&2; exit 2; }

status=0
for bin in "${bins[@]}"; do
    name=$(basename "$bin")
    echo "== valgrind: $name (PROPTEST_CASES=$PROPTEST_CASES PROTOJIT_MUTATIONS=$PROTOJIT_MUTATIONS PROTOJIT_CUTS=$PROTOJIT_CUTS)"
    start=$(date +%s)
    # Tests find the shared corpus relative to the repository root, the directory cargo
    # runs them in.
    if valgrind --error-exitcode=1 --leak-check=no --track-origins=no --smc-check=all-non-file \
        --quiet "$bin" --test-threads=2 "${filter[@]}"; then
        echo "== $name: 0 errors ($(($(date +%s) - start)) s)"
    else
        echo "== $name: FAILED ($(($(date +%s) - start)) s)"
        status=1
    fi
done
exit $status
