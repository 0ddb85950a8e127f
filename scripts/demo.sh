#!/usr/bin/env bash
# Set up what `tessera` needs (scripts/setup.sh --main: install what is missing, configure, build
# the `tessera` target only), then the main job through the tuning service on loopback: a server
# (`tessera serve`, records in build/demo/tessera.db) and one CPU worker (`tessera worker --target
# cpu`), a short tuning job of GMM 256^3 submitted and watched (its runoff of the fastest schedule
# against the default one included), the best record found, and the tuned program applied by the
# server, then built, timed and checked here against the unscheduled one. Both processes are
# stopped cleanly at the end (SIGTERM), and on any error. Logs: build/demo/serve.log,
# build/demo/worker.log. docs/service.md explains it. Prints its total time at the end (the
# set-up's and the job's). The test suite is scripts/test.sh (it sets up the rest).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
bash scripts/setup.sh --main
setup_s=$((SECONDS - start))
if [[ ! -x build/bin/tessera ]]; then
  echo "[demo] build/bin/tessera was not built (is cli/ there?)" >&2
  exit 1
fi
mkdir -p build/demo
workload="GMM:M=256,N=256,K=256"
run() {
  echo "[demo] $*"
  "$@"
}
tessera=build/bin/tessera
server_pid=""
worker_pid=""
stop() {  # SIGTERM: the worker finishes its batch, the server shuts down; bounded by `wait`
  if [[ -n "$worker_pid" ]]; then kill -TERM "$worker_pid" 2>/dev/null || true; wait "$worker_pid" || true; fi
  if [[ -n "$server_pid" ]]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" || true; fi
  worker_pid=""
  server_pid=""
}
trap stop EXIT
echo "[demo] $tessera serve --db build/demo/tessera.db --listen 127.0.0.1:0"
"$tessera" serve --db build/demo/tessera.db --listen 127.0.0.1:0 \
  >build/demo/serve.out 2>build/demo/serve.log &
server_pid=$!
address=""
for _ in $(seq 1 300); do  # the server prints "listening on 127.0.0.1:PORT" once it serves
  address=$(sed -n 's/^listening on //p' build/demo/serve.out)
  [[ -n "$address" ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$address" ]]; then
  echo "[demo] the server did not start:" >&2
  cat build/demo/serve.log >&2
  exit 1
fi
echo "[demo] $tessera worker --server $address --target cpu"
"$tessera" worker --server "$address" --target cpu 2>build/demo/worker.log &
worker_pid=$!
run "$tessera" submit "$workload" --server "$address" --target cpu --trials 64 \
  --trials-per-iter 32 --watch
# After the search the job timed its fastest schedule beside the default one on the worker (the
# runoff, docs/tuning.md): the server's log says which is the best.
grep -h "runoff of task" build/demo/serve.log | sed 's/^/[demo] server: /' || true
run "$tessera" best "$workload" --server "$address" --target cpu
run "$tessera" apply "$workload" --server "$address" --target cpu --run --check
stop
trap - EXIT
echo "[demo] stopped the worker and the server"
echo "[demo] done in $(mmss $((SECONDS - start))) (set-up $(mmss "${setup_s}"), the job $(mmss $((SECONDS - start - setup_s))))"
