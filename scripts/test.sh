#!/usr/bin/env bash
# Set up (install what is missing, build), then run the whole test suite; the exit status is
# ctest's. GPU-labelled tests skip themselves where there is no GPU, so everything runs everywhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
echo "[test] ctest --test-dir build --output-on-failure -j$(nproc) --timeout 900"
exec ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
