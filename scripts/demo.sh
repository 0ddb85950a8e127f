#!/usr/bin/env bash
# Set up (install what is missing, build), then run the GMM workload on the host CPU and check
# its result (`tessera run --check`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
if [[ ! -x build/bin/tessera ]]; then
  echo "[demo] build/bin/tessera was not built (is cli/ there?)" >&2
  exit 1
fi
echo "[demo] build/bin/tessera run GMM --target cpu --check"
exec build/bin/tessera run GMM --target cpu --check
