#!/usr/bin/env bash
# Creates the anchors' own virtualenv (numpy, onnx, onnxruntime from PyPI) for
# bench/anchors/ort_anchor.py, which bench_shapes runs with --mlas-python VENV/bin/python.
# The C++ build and the tests never use it.
#
#   bash bench/anchors/setup_venv.sh [VENV_DIR (default build/anchor-venv)]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
venv=${1:-build/anchor-venv}
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q numpy onnx onnxruntime
"$venv/bin/python" -c 'import onnxruntime, onnx, numpy; print("onnxruntime", onnxruntime.__version__, "onnx", onnx.__version__, "numpy", numpy.__version__)'
echo "run: bench_shapes --mlas-python $venv/bin/python"
