#!/usr/bin/env bash
# Model latency on a quiet machine and beside a process busy on one core (issue 31: no jump
# beyond 3x), for Tessera's default schedules and onnxruntime in the same run.
#
#   bash bench/models/bench_contention.sh [MODELS (default "resnet resnet18 bert unet llama gpt2")]
#
# For each model: onnxruntime and Tessera quiet, then the same with `yes > /dev/null` pinned to
# the last core this shell may use (taskset), stopped before the next model; medians of 20 runs
# each. Prints each latency and busy / quiet, and exits 1 if a Tessera model jumped beyond 3x.
# The virtualenv, the models and $TESSERA, $BENCH_VENV, $BENCH_DIR, $BENCH_LOCK are as in
# bench_models.sh (bench_common.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
models=${1:-"resnet resnet18 bert unet llama gpt2"}
source bench/models/bench_common.sh

last_core=$(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' | tail -1 | sed 's/.*-//')
busy_pid=""
stop_busy() {  # a killed `yes` makes wait return 143: not an error here
  if [[ -n $busy_pid ]]; then
    kill "$busy_pid" 2>/dev/null || true
    wait "$busy_pid" 2>/dev/null || true
  fi
  busy_pid=""
}
trap stop_busy EXIT

ort_latency() { timed "$venv/bin/python" bench/models/ort_latency.py "$1" "$2" 20; }

printf "%-9s %12s %12s %7s %12s %12s %7s\n" model "ort quiet" "ort busy" ratio \
  "tessera quiet" "tessera busy" ratio
jumped=0
for m in $models; do
  onnx="$work/$m.onnx"; input="$work/$m.input.npy"
  "$tessera" compile "$onnx" -o "$work/$m.default" > "$work/$m.default.log"
  ort_q=$(ort_latency "$onnx" "$input")
  tes_q=$(latency "$work/$m.default" "$input")
  taskset -c "$last_core" yes > /dev/null &
  busy_pid=$!
  sleep 0.5
  ort_b=$(ort_latency "$onnx" "$input")
  tes_b=$(latency "$work/$m.default" "$input")
  stop_busy
  "$venv/bin/python" -c "
oq, ob, tq, tb = $ort_q, $ort_b, $tes_q, $tes_b
print('%-9s %9.3f ms %9.3f ms %6.2fx %9.3f ms %9.3f ms %6.2fx' % ('$m', oq*1e3, ob*1e3, ob/oq, tq*1e3, tb*1e3, tb/tq))
raise SystemExit(1 if tb / tq > 3 else 0)" || jumped=1
done
if ((jumped)); then
  echo "a Tessera model ran more than 3x slower beside the busy process"
  exit 1
fi
echo "every Tessera model within 3x of its quiet latency beside the busy process"
