#!/usr/bin/env bash
# libtessera_runtime.so as an embedder links it (docs/models.md "The runtime"): it must not pull
# in gRPC, protobuf, the tuner's XGBoost, SQLite, PostgreSQL or ONNX (ldd: every library it
# loads, transitively), and it exports the C API's tessera_* functions and nothing else.
#   usage: runtime_library_test.sh LIBRARY
set -euo pipefail
library="$1"
status=0
if forbidden="$(ldd "${library}" | grep -Ei 'grpc|protobuf|xgboost|sqlite|libpq|onnx|cli11')"; then
  echo "FAIL: ${library} loads libraries the runtime must not need:"
  echo "${forbidden}"
  status=1
fi
exported="$(nm -D --defined-only "${library}" | awk '{print $3}' | grep -v '^tessera_' || true)"
if [[ -n "${exported}" ]]; then
  echo "FAIL: ${library} exports symbols other than tessera_*:"
  echo "${exported}" | head -20
  status=1
fi
count="$(nm -D --defined-only "${library}" | grep -c ' tessera_')"
if [[ "${count}" -lt 10 ]]; then
  echo "FAIL: ${library} exports ${count} tessera_* functions"
  status=1
fi
[[ ${status} -ne 0 ]] || echo "PASS: $(ldd "${library}" | wc -l) libraries loaded, ${count} functions exported"
exit "${status}"
