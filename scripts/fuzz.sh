#!/usr/bin/env bash
# Runs fuzz targets one after another, each for a given time, restarting a target after a crash until its time is used; logs per target.
#
# Usage: scripts/fuzz.sh SECONDS TARGET...   (from anywhere; needs nightly and cargo-fuzz)
#
# Logs go to $FUZZ_LOGS (default /tmp/protojit-fuzz): TARGET.N.log per run of a target;
# crashes to fuzz/artifacts/TARGET/. Corpora grow in fuzz/corpus/TARGET/; schema_load
# also reads the committed seeds in fuzz/seeds/schema_load/.
set -uo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=$1
shift
logs=${FUZZ_LOGS:-/tmp/protojit-fuzz}
mkdir -p "$logs"
cargo +nightly fuzz build >"$logs/build.log" 2>&1 || { echo "build failed: $logs/build.log" >&2; exit 2; }
for target in "$@"; do
    mkdir -p "corpus/$target"
    dirs=("corpus/$target")
    args=(-rss_limit_mb=4096 -max_len=4096)
    case $target in
    schema_load) dirs+=(seeds/schema_load) args=(-rss_limit_mb=4096 -max_len=131072) ;;
    # Every input compiles a schema: let inputs be long from the start.
    schema_and_message) args+=(-len_control=0) ;;
    esac
    end=$(($(date +%s) + seconds))
    run=0
    while [ "$(date +%s)" -lt $((end - 5)) ] && [ $run -lt 5 ]; do
        run=$((run + 1))
        left=$((end - $(date +%s)))
        echo "$(date +%T) $target run $run: ${left}s"
        cargo +nightly fuzz run "$target" "${dirs[@]}" -- -max_total_time=$left "${args[@]}" \
            >"$logs/$target.$run.log" 2>&1
        rc=$?
        grep -E "^#[0-9]+ +DONE" "$logs/$target.$run.log" | tail -1
        [ $rc -eq 0 ] || echo "$target run $run: exit $rc (see $logs/$target.$run.log)"
    done
done
