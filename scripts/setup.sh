#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root), configures build/ once, and builds. Idempotent: a
# second run skips what is done. Run from anywhere:
#   bash scripts/setup.sh --main   what building and running `tessera` needs
#                                  (scripts/packages-main.txt); builds the `tessera` target only.
#                                  scripts/demo.sh (the README's main command) runs this.
#   bash scripts/setup.sh [--all]  also what only the tests and benchmarks need
#                                  (scripts/packages-test.txt, the deploy-check virtualenv); builds
#                                  every target. scripts/test.sh (and so CI) runs this.
# One line a step; the output of apt-get and CMake goes to build/setup-logs/, shown on failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=all
case "${1:-}" in
  --main) mode=main ;;
  "" | --all) mode=all ;;
  -h | --help)
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: bash scripts/setup.sh [--main | --all]" >&2
    exit 2
    ;;
esac

start=$SECONDS
log() { echo "[setup] $*"; }
elapsed() {  # M:SS since $1 (default: the start)
  local s=$((SECONDS - ${1:-$start}))
  printf '%d:%02d' $((s / 60)) $((s % 60))
}
logs=build/setup-logs
mkdir -p "${logs}"
fail_with_log() {  # fail_with_log WHAT LOGFILE
  log "$1 FAILED; the end of $2:"
  tail -n 40 "$2" | sed 's/^/  /' >&2
  exit 1
}

# 1. Packages: the lists are files so that tests/deps/check_packages.sh can read them.
read_packages() { sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"; }
mapfile -t packages < <(read_packages scripts/packages-main.txt)
if [[ ${mode} == all ]]; then
  mapfile -t -O "${#packages[@]}" packages < <(read_packages scripts/packages-test.txt)
fi
missing=()
if command -v dpkg >/dev/null 2>&1; then
  for p in "${packages[@]}"; do
    # `dpkg -s` also succeeds for removed packages whose config files remain: check the status.
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
  done
else
  log "no dpkg here (not Debian?): assuming the packages are installed: ${packages[*]}"
fi
if ((${#missing[@]} > 0)); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing packages: ${missing[*]}"
    log "install them as root:  apt-get install -y --no-install-recommends ${missing[*]}"
    exit 1
  fi
  t=$SECONDS
  log "install: ${#missing[@]} of the ${#packages[@]} packages (${mode} set) with their dependencies (apt-get: ${logs}/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  {
    apt-get -o DPkg::Lock::Timeout=300 update -q &&
      apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
  } >"${logs}/apt.log" 2>&1 || fail_with_log "install" "${logs}/apt.log"
  log "install: done in $(elapsed "$t")"
else
  log "install: all ${#packages[@]} packages of the ${mode} set are there"
fi

# 2. Configure build/ (once). The main set has no GoogleTest: --main configures without the tests
# and benchmarks; --all turns them on in a build/ that --main configured.
want_tests=ON
[[ ${mode} == main ]] && want_tests=OFF
have_tests=""
if [[ -f build/build.ninja && -f build/CMakeCache.txt ]]; then
  have_tests=$(sed -n 's/^TESSERA_BUILD_TESTS:BOOL=//p' build/CMakeCache.txt)
  [[ -n ${have_tests} ]] || have_tests=ON  # configured before the option: ON on the next run
fi
if [[ -z ${have_tests} || (${want_tests} == ON && ${have_tests} == OFF) ]]; then
  t=$SECONDS
  what="tests and benchmarks"
  [[ ${want_tests} == ON ]] || what="no tests or benchmarks"
  log "configure: build/ (Ninja, Release, ${what}; cmake: ${logs}/configure.log)"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS="${want_tests}" \
    >"${logs}/configure.log" 2>&1 || fail_with_log "configure" "${logs}/configure.log"
  log "configure: done in $(elapsed "$t")"
else
  tests_word="with"
  [[ ${have_tests} == ON ]] || tests_word="without"
  log "configure: build/ is configured (${tests_word} tests)"
fi

# 3. (--all) The Kubernetes schema validator for tests/deploy (PyPI only; its schemas are bundled,
# so the test runs offline). Without it that test skips, saying so.
venv=build/deploy-venv
if [[ ${mode} == all && ! -x "${venv}/bin/kubernetes-validate" ]]; then
  t=$SECONDS
  log "venv: kubernetes-validate into ${venv} (pip: ${logs}/venv.log)"
  if { /usr/bin/python3 -m venv "${venv}" &&
       "${venv}/bin/pip" install -q --disable-pip-version-check kubernetes-validate==1.37.0; } \
     >"${logs}/venv.log" 2>&1; then
    log "venv: done in $(elapsed "$t")"
  else
    log "venv: could not install kubernetes-validate (${logs}/venv.log): tests/deploy will skip the manifest check"
  fi
fi

# (--all) numpy and onnxruntime for the runtime's Python test (tests/model: python/tessera loads
# a compiled model and matches onnxruntime), grpcio and grpcio-tools for the Python client test
# of the service (tests/server/python_client_test.py), and cuobjdump with nvdisasm, which the
# CUDA toolkit here lacks, for the tests that read compiled GPU images
# (tests/testing/cubin_inspection.h), in their own venv: PyPI packages never enter the build.
# Without them those tests skip, saying so.
venv=build/test-venv
if [[ ${mode} == all ]] &&
   { ! "${venv}/bin/python" -c 'import numpy, onnxruntime, grpc, grpc_tools' >/dev/null 2>&1 ||
     ! compgen -G "${venv}/lib/python3*/site-packages/nvidia/cu*/bin/nvdisasm" >/dev/null; }; then
  t=$SECONDS
  log "venv: numpy, onnxruntime, grpcio, grpcio-tools, cuobjdump and nvdisasm into ${venv} (pip: ${logs}/test-venv.log)"
  if { /usr/bin/python3 -m venv "${venv}" &&
       "${venv}/bin/pip" install -q --disable-pip-version-check numpy onnxruntime grpcio \
         grpcio-tools nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; } >"${logs}/test-venv.log" 2>&1; then
    log "venv: done in $(elapsed "$t")"
  else
    log "venv: could not install them (${logs}/test-venv.log): the Python runtime and client tests will skip"
  fi
fi

# 4. Build. Ninja's "[N/M] Building ..." lines become one updating count on a terminal, or a line
# every 20% in a log. Anything else (a warning, a compiler error) is shown as it comes (--all), or
# with --main written to build/setup-logs/build.log and shown only if the build fails.
build_log="${logs}/build.log"
: >"${build_log}"
progress() {
  local line n m total="" last=-1 open=0 t0=$SECONDS
  while IFS= read -r line; do
    if [[ ${line} =~ ^\[[0-9]+/[0-9]+\]\ Re-(running\ CMake|checking\ globbed) ]]; then
      continue  # CMake regenerating build/ (a CMakeLists.txt changed): not a build step
    elif [[ ${line} =~ ^\[([0-9]+)/([0-9]+)\]\  ]]; then
      n=${BASH_REMATCH[1]} m=${BASH_REMATCH[2]}
      [[ ${m} == "${total}" ]] || { total=${m}; last=-1; }  # CMake re-ran: a new plan
      if [[ -t 1 ]]; then
        printf '\r[setup] build: %d/%d %s ' "${n}" "${m}" "$(elapsed "$t0")"
        open=1
      elif ((n * 5 / m > last)); then
        last=$((n * 5 / m))
        echo "[setup] build: ${n}/${m} ($((n * 100 / m))%) $(elapsed "$t0")"
      fi
    elif [[ ${line} == "ninja: no work to do." ]]; then
      echo "[setup] build: up to date"
    elif [[ ${line} == "-- "* ]]; then  # CMake re-running itself: its log is not ours to show
      continue
    elif [[ ${mode} == main ]]; then
      printf '%s\n' "${line}" >>"${build_log}"
    else
      ((open)) && { echo; open=0; }
      printf '%s\n' "${line}"
    fi
  done
  ((open)) && echo
  return 0
}
jobs=$(nproc)
t=$SECONDS
if [[ ${mode} == main ]]; then
  targets=(--target tessera)
  log "build: the tessera target (-j${jobs})"
else
  targets=()
  log "build: every target (-j${jobs})"
fi
if ! NINJA_STATUS='[%f/%t] ' cmake --build build -j"${jobs}" "${targets[@]}" 2>&1 | progress; then
  if [[ -s ${build_log} ]]; then
    log "build: FAILED; the compiler's messages (${build_log}):"
    cat "${build_log}" >&2
  else
    log "build: FAILED (the messages above)"
  fi
  exit 1
fi
warnings=$(grep -c 'warning: ' "${build_log}" || true)
if ((warnings > 0)); then
  log "build: done in $(elapsed "$t"), ${warnings} compiler warning(s) in ${build_log}"
else
  log "build: done in $(elapsed "$t")"
fi
log "done in $(elapsed) (${mode} set)"
