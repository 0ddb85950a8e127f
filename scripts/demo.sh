#!/usr/bin/env bash
# Set up (install what is missing, build), then the main job on the host CPU: a short tuning
# run of GMM 256^3 into a SQLite database, the best record found, and the tuned program applied,
# built, timed and checked against the unscheduled one. Running it again continues the tuning
# on the same database (build/demo/tessera.db).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
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
run build/bin/tessera tune "$workload" --target cpu --trials 64 --trials-per-iter 32 \
  --db build/demo/tessera.db --work-dir build/demo/work
run build/bin/tessera best "$workload" --target cpu --db build/demo/tessera.db
run build/bin/tessera apply "$workload" --target cpu --db build/demo/tessera.db --run --check
