#!/usr/bin/env bash
# The GPU checks of a session that has a GPU machine, as one command run there
# (docs/cuda-backend.md, "Running the GPU tests on a GPU machine"):
#   tests    the bundle's GPU tests (run-gpu-tests.sh)
#   bench    bench_cuda_gmm: GMM tuned for the GPU against cuBLAS, float32 and float16 / bfloat16
#            summed in float32
#   service  `tessera serve` and one `tessera worker --target cuda` on loopback, a job submitted
#            and watched, its best shown, applied, run and checked on the GPU
#   models   the test models compiled with `--target cuda`, run by `tessera exec` and checked
# Each step has its own time limit and log in OUTDIR; the exit status is nonzero when one fails.
#
#   scripts/device-check.sh BUNDLE OUTDIR [--steps tests,bench,service,models] [--trials N]
#                           [--shapes MxNxK,...] [--dtypes float32,float16->float32,...] [--service-trials N]
#                           [--tests-timeout S] [--bench-timeout S]
set -uo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,14p' "$0"
  exit 2
fi
bundle=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
steps=tests,bench,service,models
trials=64
shapes=4096x4096x4096
service_trials=64
dtypes=float32,float16->float32,bfloat16->float32
tests_timeout=150
bench_timeout=240
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --trials) trials="$2"; shift 2 ;;
    --shapes) shapes="$2"; shift 2 ;;
    --dtypes) dtypes="$2"; shift 2 ;;
    --tests-timeout) tests_timeout="$2"; shift 2 ;;
    --bench-timeout) bench_timeout="$2"; shift 2 ;;
    --service-trials) service_trials="$2"; shift 2 ;;
    *) echo "device-check: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
source "$bundle/env.sh"
status=0
has_step() { [[ ",$steps," == *",$1,"* ]]; }
note() { echo "[device-check $(date +%T)] $*"; }

note "$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1)"
if has_step tests; then
  note "GPU tests"
  timeout "$tests_timeout" "$bundle/run-gpu-tests.sh" >"$out/gpu-tests.log" 2>&1 || status=1
  grep -E '^(==|\[  FAILED|\[  PASSED|.*tests? (ran|skipped))' "$out/gpu-tests.log" | head -40
  grep -A12 -E '^\[ RUN|Failure' "$out/gpu-tests.log" | grep -B2 -A10 'Failure' | head -60
fi
if has_step bench; then
  note "bench_cuda_gmm --shapes $shapes --dtypes $dtypes --trials $trials"
  timeout "$bench_timeout" bench_cuda_gmm --shapes "$shapes" --dtypes "$dtypes" --trials "$trials" --rounds 3 \
    >"$out/bench.txt" 2>"$out/bench.log" || status=1
  cat "$out/bench.txt"
  tail -n 15 "$out/bench.log"
fi
if has_step service; then
  note "service: a server and a cuda worker on loopback"
  work=$(mktemp -d)
  tessera serve --db "$work/tessera.db" --listen 127.0.0.1:0 >"$work/serve.out" \
    2>"$out/serve.log" &
  server=$!
  address=""
  for _ in $(seq 1 300); do
    address=$(sed -n 's/^listening on //p' "$work/serve.out")
    [[ -n "$address" ]] && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$address" ]]; then
    note "the server did not start"; tail "$out/serve.log"; status=1
  else
    tessera worker --server "$address" --target cuda 2>"$out/worker.log" &
    worker=$!
    workload="GMM:M=1024,N=1024,K=1024"
    timeout 120 tessera submit "$workload" --server "$address" --target cuda \
      --trials "$service_trials" --trials-per-iter 32 --watch >"$out/service.txt" 2>&1 || status=1
    tail -n 12 "$out/service.txt"
    grep -h "runoff of task" "$out/serve.log" || true
    timeout 20 tessera best "$workload" --server "$address" --target cuda 2>&1 | tail -n 6 || status=1
    timeout 60 tessera apply "$workload" --server "$address" --target cuda --run --check 2>&1 |
      tail -n 6 || status=1
    kill -TERM "$worker" 2>/dev/null; wait "$worker"
  fi
  kill -TERM "$server" 2>/dev/null; wait "$server"
  rm -rf "$work"
fi
if has_step models; then
  # The test models compiled for GPU 0 and run on it by the model runtime, checked against the
  # interpreter; then the bench's models where they are (bench/models/bench_common.sh makes them).
  note "models: compiled for the GPU, run and checked"
  work=$(mktemp -d)
  data="${TESSERA_SOURCE_DIR:-.}/tests/frontend/data"
  for m in cnn encoder decoder; do
    timeout 60 tessera compile "$data/$m.onnx" --target cuda -o "$work/$m" >"$out/model-$m.log" 2>&1 &&
      timeout 60 tessera exec "$work/$m" --inputs "$data/$m.input.npy" --repeat 20 --check \
        >>"$out/model-$m.log" 2>&1 || status=1
    grep -E "latency|check|error" "$out/model-$m.log" | sed "s/^/$m: /"
  done
  rm -rf "$work"
fi
note "done (status $status)"
exit $status
