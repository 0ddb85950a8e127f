#!/usr/bin/env bash
# End-to-end model latency on the CPU: Tessera with default schedules, Tessera after tuning
# TRIALS trials per task, and onnxruntime (CPU provider) in the same run, as ratios: $ROUNDS
# (default 5) alternating rounds of the three, 30 runs of onnxruntime and 20 of each plan a round,
# each figure the median of its rounds (a noisy host moves single rounds by up to 2x; rounds in
# turn see the same phases), in how many rounds the tuned plan beat its defaults, and how many of
# its kernels run a tuned schedule (the others are the default ones: a plan with none is the
# defaults, and the two columns then differ only by the host's noise).
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

rounds=${ROUNDS:-5}
printf "%-8s %12s %12s %12s %10s %10s %12s %14s\n" model ort default tuned "ort/def" "ort/tuned" \
  "tuned ahead" "tuned kernels"
for m in $models; do
  onnx="$work/$m.onnx"; input="$work/$m.input.npy"
  ntasks=$(task_count "$onnx")
  "$tessera" compile "$onnx" -o "$work/$m.default" > "$work/$m.default.log"
  rm -f "$work/$m.db"
  [[ $trials -gt 0 ]] && "$tessera" tune "$onnx" --db "$work/$m.db" --trials $((trials * ntasks)) \
    --trials-per-iter "$trials" > "$work/$m.tune.log" 2>&1
  "$tessera" compile "$onnx" --db "$work/$m.db" -o "$work/$m.tuned" > "$work/$m.tuned.log"
  "$tessera" exec "$work/$m.tuned" --inputs "$input" --repeat 3 --check | tail -1
  # compile's line per kernel: "... MFLOP  <schedule>"; a tuned schedule that is not the default
  # reads "tuned record N (" followed by anything but "the default schedule".
  kernels=$(grep -c "MFLOP  " "$work/$m.tuned.log" || true)
  tuned_kernels=$(grep "MFLOP  tuned record" "$work/$m.tuned.log" | grep -vc "(the default schedule" || true)
  ort=() def=() tuned=()
  for r in $(seq "$rounds"); do
    ort+=("$(timed "$venv/bin/python" bench/models/ort_latency.py "$onnx" "$input" 30 | ms)")
    def+=("$(latency "$work/$m.default" "$input" | ms)")
    tuned+=("$(latency "$work/$m.tuned" "$input" | ms)")
  done
  echo "$m rounds (ms): onnxruntime ${ort[*]}; default ${def[*]}; tuned ${tuned[*]}" >&2
  o=$(median "${ort[@]}") d=$(median "${def[@]}") t=$(median "${tuned[@]}")
  # "tuned ahead": the rounds in which the tuned plan beat the defaults timed beside it. Medians
  # a percent apart say little on a host whose rounds move 5-10%; a tuned plan behind its
  # defaults in every round is slower beyond the noise.
  "$venv/bin/python" -c "
ort, d, t = $o, $d, $t
ahead = sum(x < y for x, y in zip([$(IFS=,; echo "${tuned[*]}")], [$(IFS=,; echo "${def[*]}")]))
print('%-8s %10.3f ms %10.3f ms %10.3f ms %10.2fx %10.2fx %6d of %d %8d of %d' % ('$m', ort, d, t, ort/d, ort/t, ahead, $rounds, $tuned_kernels, $kernels))"
done
