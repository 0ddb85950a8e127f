#!/usr/bin/env bash
# What tuning buys a whole model (issue 32 part 3): per model, onnxruntime (CPU provider), Tessera
# with default schedules, then Tessera after each budget of trials per task, one tuning database
# growing from budget to budget (a job resumed with a larger budget measures only the new trials).
# Per budget: the model latency the tuner estimates (sum of weight x best over its tasks, from the
# records' timings), the latency measured by `tessera exec` of the compiled model (median of 20),
# and both as ratios to the defaults and to onnxruntime: the three measured alternately, $ROUNDS
# rounds (default 3), the median of each.
#
#   bash bench/models/bench_tuning.sh [BUDGETS (default "8 16 32")] [MODELS (default "resnet bert llama")]
#
# Needs build/bin/tessera (or $TESSERA); its virtualenv and work files as bench_models.sh
# ($BENCH_VENV, $BENCH_DIR). Runs on every core unless OMP_NUM_THREADS says otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
budgets=${1:-"8 16 32"}
rounds=${ROUNDS:-3}  # alternating rounds of onnxruntime, the defaults and the tuned model
models=${2:-"resnet bert llama"}
source bench/models/bench_common.sh
py() { "$venv/bin/python" -c "$@"; }

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
  "OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
printf "%-8s %7s %12s %12s %12s %12s %9s %9s\n" model trials ort default estimated measured \
  "def/meas" "ort/meas"
for m in $models; do
  onnx="$work/$m.onnx"
  input="$work/$m.input.npy"
  db="$work/$m.tuning.db"
  ntasks=$(task_count "$onnx")
  "$tessera" compile "$onnx" -o "$work/$m.default" > /dev/null
  rm -f "$db"
  for b in $budgets; do
    "$tessera" tune "$onnx" --db "$db" --trials $((b * ntasks)) --trials-per-iter "$b" --json \
      --work-dir "$work/$m.tune-$b" > "$work/$m.tune-$b.json" 2> "$work/$m.tune-$b.log"
    estimated=$(py 'import json,sys; m=json.load(open(sys.argv[1]))["models"][0]; print(m["estimated_seconds"] or 0)' \
      "$work/$m.tune-$b.json")
    "$tessera" compile "$onnx" --db "$db" -o "$work/$m.tuned-$b" > /dev/null
    "$tessera" exec "$work/$m.tuned-$b" --inputs "$input" --repeat 3 --check > /dev/null
    # The three latencies of a row in one round, so that they share the machine's state.
    # The three alternately, $rounds rounds: the VM's speed drifts by 10-20% over minutes, and
    # one measurement of each in a row once had the tuned GPT-2 block 0.85x its defaults where
    # four alternating rounds had it faster in every round.
    ort="" def="" tuned=""
    for ((r = 0; r < rounds; r++)); do
      ort+="$(timed "$venv/bin/python" bench/models/ort_latency.py "$onnx" "$input" 20),"
      def+="$(latency "$work/$m.default" "$input"),"
      tuned+="$(latency "$work/$m.tuned-$b" "$input"),"
    done
    py "
import statistics
ort, d, t = (statistics.median(v) for v in (($ort), ($def), ($tuned)))
e = $estimated
print('%-8s %7d %9.3f ms %9.3f ms %9.3f ms %9.3f ms %8.2fx %8.2fx' % ('$m', $b, ort*1e3, d*1e3, e*1e3, t*1e3, d/t, ort/t))"
  done
done
