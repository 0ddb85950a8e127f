#!/usr/bin/env bash
# Winograd against direct convolutions inside whole models, beside onnxruntime: for each model,
# ROUNDS alternating rounds of onnxruntime (2 threads, all graph optimizations), Tessera's
# defaults compiled with --no-winograd, and Tessera's defaults (Winograd; docs/models.md
# "Winograd convolutions"), 30 runs of onnxruntime and 20 of each plan; prints each round and the medians of the rounds with
# onnxruntime's time over each Tessera plan's. Alternating rounds, because a noisy host moves
# single rounds by up to 2x.
#
#   bash bench/models/bench_winograd.sh [ROUNDS (default 6)] [MODELS (default "resnet18 unet resnet")]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-6}
models=${2:-"resnet18 unet resnet"}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
source bench/models/bench_common.sh

for m in $models; do
  onnx="$work/$m.onnx"
  input="$work/$m.input.npy"
  "$tessera" compile "$onnx" --target cpu --no-winograd -o "$work/$m.direct" >/dev/null
  "$tessera" compile "$onnx" --target cpu -o "$work/$m.winograd" >/dev/null
  ort=() direct=() winograd=()
  for r in $(seq "$rounds"); do
    ort+=("$(timed "$venv/bin/python" bench/models/ort_latency.py "$onnx" "$input" 30 | ms)")
    direct+=("$(latency "$work/$m.direct" "$input" | ms)")
    winograd+=("$(latency "$work/$m.winograd" "$input" | ms)")
    echo "$m round $r: onnxruntime ${ort[-1]} ms, direct ${direct[-1]} ms, winograd ${winograd[-1]} ms"
  done
  o=$(median "${ort[@]}") d=$(median "${direct[@]}") w=$(median "${winograd[@]}")
  "$venv/bin/python" -c "print('%-10s onnxruntime %s ms, direct %s ms (%.2fx), winograd %s ms (%.2fx)' % ('$m', '$o', '$d', $o / $d, '$w', $o / $w))"
done
