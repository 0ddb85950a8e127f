#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root), configures build/ once, and builds everything.
# Idempotent and fast when nothing changed. Run from anywhere: bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { echo "[setup] $*"; }
start=$SECONDS

packages=(
  build-essential cmake ninja-build ccache pkgconf
  libgtest-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libxgboost-dev libabsl-dev libopenblas-dev
  nlohmann-json3-dev libcli11-dev libssl-dev zlib1g-dev libonnx-dev
  libpq-dev postgresql  # libpq for PostgreSQL records; the server binaries for its tests
  prometheus-cpp-dev  # the server's metrics endpoint (tessera serve --metrics-listen)
  chromium  # renders `tessera report`'s page in its test (tests/report/html_test.cc)
  systemd python3-venv  # systemd-analyze and a venv for kubernetes-validate (tests/deploy)
  libdnnl-dev  # oneDNN 2.6: bench_shapes' conv/GEMM anchor only (bench/anchors/dnnl_anchor.h)
  ocl-icd-opencl-dev  # oneDNN's CMake config requires OpenCL (only recommended by libdnnl-dev)
)

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
  log "installing ${#missing[@]} missing package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -qq
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"
else
  log "packages: all ${#packages[@]} installed"
fi

if [[ ! -f build/build.ninja ]]; then
  log "configuring build/ (Ninja, Release)"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi

# The Kubernetes schema validator for tests/deploy (PyPI only; its schemas are bundled, so the
# test runs offline). Without it that test skips, saying so.
venv=build/deploy-venv
if [[ ! -x "${venv}/bin/kubernetes-validate" ]]; then
  log "installing kubernetes-validate into ${venv}"
  if ! { /usr/bin/python3 -m venv "${venv}" &&
         "${venv}/bin/pip" install -q --disable-pip-version-check kubernetes-validate==1.37.0; }; then
    log "could not install kubernetes-validate: tests/deploy will skip the manifest check"
  fi
fi

jobs=$(nproc)
log "building (-j${jobs})"
cmake --build build -j"${jobs}"
log "done in $((SECONDS - start)) s"
