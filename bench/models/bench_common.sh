# What bench_models.sh and bench_tuning.sh share; sourced from the repository root after they set
# $models. Sets $tessera, $venv and $work, makes the virtualenv (numpy, onnx, onnxruntime from
# PyPI, never in the build) and the models, and defines timed, latency, ms, median and
# task_count.
tessera=${TESSERA:-build/bin/tessera}
venv=${BENCH_VENV:-/tmp/tessera-bench-venv}
work=${BENCH_DIR:-/tmp/tessera-bench}
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q numpy onnx onnxruntime
fi
mkdir -p "$work"
# shellcheck disable=SC2086  # one argument per model name
"$venv/bin/python" bench/models/make_bench_models.py "$work" $models

timed() {  # runs "$@" holding $BENCH_LOCK when it is set
  if [[ -n ${BENCH_LOCK:-} ]]; then flock "$BENCH_LOCK" "$@"; else "$@"; fi
}

latency() {  # seconds per inference of compiled model $1 on input $2 (median of 20)
  timed "$tessera" exec "$1" --inputs "$2" --repeat 20 --json | "$venv/bin/python" -c \
    'import json,sys; print(json.load(sys.stdin)["latency_seconds"])'
}

ms() {  # seconds on stdin -> milliseconds
  "$venv/bin/python" -c 'import sys; print("%.3f" % (float(sys.stdin.read()) * 1e3))'
}

median() {  # of the numbers given
  printf '%s\n' "$@" | sort -g | "$venv/bin/python" -c \
    'import sys; v=[float(x) for x in sys.stdin]; n=len(v); print("%.3f" % ((v[(n-1)//2]+v[n//2])/2))'
}

task_count() {  # the tasks of model $1
  "$tessera" tasks "$1" --json | "$venv/bin/python" -c \
    'import json,sys; print(len(json.load(sys.stdin)["tasks"]))'
}
