#!/usr/bin/env bash
# End-to-end model latency on the CPU: Tessera with default schedules, Tessera after tuning
# TRIALS trials per task, and onnxruntime (CPU provider) in the same run, as ratios.
#
#   bash bench/models/bench_models.sh [TRIALS_PER_TASK (default 16)] [MODELS (default "resnet resnet18 bert unet llama gpt2")]
#
# Needs build/bin/tessera (or $TESSERA) and python3; creates its own virtualenv with numpy, onnx
# and onnxruntime from PyPI in $BENCH_VENV (default /tmp/tessera-bench-venv), never used by the
# build. Work files go to $BENCH_DIR (default /tmp/tessera-bench). With $BENCH_LOCK set, every
# timing (not the compiles or the tuning) holds `flock $BENCH_LOCK`, so that builds which take
# the same lock on a shared machine wait for it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
trials=${1:-16}
models=${2:-"resnet resnet18 bert unet llama gpt2"}
source bench/models/bench_common.sh

printf "%-8s %12s %12s %12s %10s %10s\n" model ort default tuned "ort/def" "ort/tuned"
for m in $models; do
  onnx="$work/$m.onnx"; input="$work/$m.input.npy"
  ntasks=$(task_count "$onnx")
  "$tessera" compile "$onnx" -o "$work/$m.default" > "$work/$m.default.log"
  rm -f "$work/$m.db"
  [[ $trials -gt 0 ]] && "$tessera" tune "$onnx" --db "$work/$m.db" --trials $((trials * ntasks)) \
    --trials-per-iter "$trials" > "$work/$m.tune.log" 2>&1
  "$tessera" compile "$onnx" --db "$work/$m.db" -o "$work/$m.tuned" > "$work/$m.tuned.log"
  "$tessera" exec "$work/$m.tuned" --inputs "$input" --repeat 3 --check | tail -1
  ort=$(timed "$venv/bin/python" bench/models/ort_latency.py "$onnx" "$input" 20)
  def=$(latency "$work/$m.default" "$input")
  tuned=$(latency "$work/$m.tuned" "$input")
  "$venv/bin/python" -c "
ort, d, t = $ort, $def, $tuned
print(f'%-8s %10.3f ms %10.3f ms %10.3f ms %10.2fx %10.2fx' % ('$m', ort*1e3, d*1e3, t*1e3, ort/d, ort/t))"
done
