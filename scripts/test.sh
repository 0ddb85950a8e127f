#!/usr/bin/env bash
# Set up everything (scripts/setup.sh --all: the packages of the tests and benchmarks too, every
# target), then run the whole test suite; the exit status is ctest's. GPU-labelled tests skip
# themselves where there is no GPU, so everything runs everywhere. CI runs this (.ci/run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh --all
echo "[test] ctest --test-dir build --output-on-failure -j$(nproc) --timeout 900"
exec ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
