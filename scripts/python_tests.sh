#!/usr/bin/env bash
# The Python package's tests: builds protojit's wheel from python/ with `pip install ./python`
# (maturin as the PEP 517 backend, in the workspace's target directory; the dev profile,
# whose dependencies are the ones `cargo test` just built, rather than a release build of
# everything: the test profile cannot be used, as cargo builds a test harness in it) into
# a venv under target/, with the pinned test requirements, then runs python/tests and the
# README's Python examples (python/examples, run by the tests).
#
# PROTOJIT_PY_PROFILE=release builds the wheel as a user gets it (for benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/python-venv
python=${PYTHON:-python3}
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
fi
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-test.txt

# The build backend runs `maturin` from PATH: the venv's.
export PATH="$PWD/$venv/bin:$PATH"
profile=${PROTOJIT_PY_PROFILE:-dev}
echo "+ pip install ./python (cargo profile $profile)"
MATURIN_PEP517_ARGS="--profile $profile" "$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps ./python

echo "+ pytest python/tests"
"$venv/bin/python" -m pytest -q python/tests
