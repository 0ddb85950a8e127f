#!/usr/bin/env bash
# Packs a built Tessera (bin/tessera and the test binaries) with the shared libraries they need
# into one folder that runs on a GPU machine without a build: the device tool copies it over
# (name the folder in `carry`) and run-gpu-tests.sh runs the GPU-labelled tests there.
#
#   scripts/device-bundle.sh [--build-dir build] [--out .device/bundle] [--gpu-only] [--xz]
#
# --xz also writes <out>.tar.xz (about a quarter of the size; the tool carries the working tree
# and the carried paths together under 64 MiB): unpack it there with tar -xJf.
#
# What goes in:
#   bin/tessera, bin/bench_cuda_gmm (where built), tests/<every test binary> (stripped; --gpu-only: the gpu-labelled ones and
#   cli_test), lib/ the ldd closure of all of them except glibc, libnvrtc*, libcuda* and
#   anything from the CUDA toolkit (the GPU machine has its own; NVRTC must match its
#   headers there), lib/fallback/ libstdc++ and libgcc_s (used only where the machine's are
#   older than the build's), include/ the cuda_fp16, cuda_bf16 and mma headers (NVRTC needs
#   them; used where the machine has no /usr/local/cuda/include), gpu-tests.txt (the gpu-labelled test
#   binaries, from ctest -L gpu), and the launcher run-gpu-tests.sh.
# The bundle must stay under 64 MiB (what the device tool carries); the script fails above it.
set -euo pipefail

build_dir=build
out=.device/bundle
gpu_only=0
xz=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --gpu-only) gpu_only=1; shift ;;
    --xz) xz=1; shift ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
    *) echo "device-bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

limit_bytes=$((64 * 1024 * 1024))
tessera_bin="$build_dir/bin/tessera"
if [[ ! -x "$tessera_bin" ]]; then
  echo "device-bundle: $tessera_bin not found; build first (cmake --build $build_dir)" >&2
  exit 1
fi

# The gpu-labelled test binaries, as ctest knows them (discovery runs the binaries here; they
# skip cleanly without a GPU).
gpu_tests=$(cd "$build_dir" && ctest -L gpu --show-only=json-v1 2>/dev/null |
  python3 -c 'import json, os, sys
tests = json.load(sys.stdin).get("tests", [])
print("\n".join(sorted({os.path.basename(t["command"][0]) for t in tests if t.get("command")})))')

tests=()
for f in "$build_dir"/tests/*; do
  [[ -f "$f" && -x "$f" ]] || continue
  name=$(basename "$f")
  if [[ $gpu_only == 1 && $name != cli_test ]] && ! grep -qx "$name" <<<"$gpu_tests"; then
    continue
  fi
  tests+=("$f")
done

rm -rf "$out"
mkdir -p "$out/bin" "$out/tests" "$out/lib/fallback" "$out/include"
strip --strip-unneeded -o "$out/bin/tessera" "$tessera_bin"
bench_bin="$build_dir/bin/bench_cuda_gmm"
bundled=("$tessera_bin")
if [[ -x "$bench_bin" ]]; then
  strip --strip-unneeded -o "$out/bin/bench_cuda_gmm" "$bench_bin"
  bundled+=("$bench_bin")
fi
for f in "${tests[@]}"; do strip --strip-unneeded -o "$out/tests/$(basename "$f")" "$f"; done
printf '%s\n' $gpu_tests >"$out/gpu-tests.txt"

# The ldd closure, by SONAME, without the libraries the GPU machine must provide itself.
declare -A seen=()
for f in "${bundled[@]}" "${tests[@]}"; do
  while read -r soname path; do
    [[ -n "$path" && -f "$path" ]] || continue
    [[ -n "${seen[$soname]:-}" ]] && continue
    seen[$soname]=1
    case "$soname" in
      linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|\
      libutil.so*|libanl.so*|libnss_*|libnvrtc*|libcuda*) continue ;;
    esac
    case "$path" in /usr/local/cuda*|*/cuda/lib*|*/cuda/targets/*) continue ;; esac
    case "$soname" in
      libstdc++.so*|libgcc_s.so*) cp -L "$path" "$out/lib/fallback/$soname" ;;
      *) cp -L "$path" "$out/lib/$soname" ;;
    esac
  done < <(ldd "$f" | awk '$2 == "=>" {print $1, $3}')
done

# The headers generated kernels include (half precision, WMMA), for machines without
# /usr/local/cuda/include.
cuda_include=$(grep -s '^TESSERA_NVRTC_INCLUDE_DIR:' "$build_dir/CMakeCache.txt" | cut -d= -f2-)
mkdir -p "$out/include/crt"
for h in cuda_fp16.h cuda_fp16.hpp cuda_bf16.h cuda_bf16.hpp mma.h crt/mma.h crt/mma.hpp; do
  if [[ -n "$cuda_include" && -f "$cuda_include/$h" ]]; then cp "$cuda_include/$h" "$out/include/$h"; fi
done

cat >"$out/env.sh" <<'ENV'
# Sourced by run-gpu-tests.sh, and by a command that runs bin/ programs of this bundle:
# LD_LIBRARY_PATH (the bundle's libraries, the machine's NVRTC and cuBLAS), the CUDA headers
# where the machine has none, TESSERA_BINARY, and bin/ on PATH.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
libs="$here/lib"
# libstdc++ / libgcc_s from the build machine only where the system's are older.
system_stdcxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
if [[ -z "$system_stdcxx" ]] || ! grep -qa GLIBCXX_3.4.30 "$system_stdcxx"; then
  libs="$libs:$here/lib/fallback"
fi
# NVRTC comes from the machine's CUDA toolkit (or its pip wheel).
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
         $(ls -d /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib \
                 /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib \
                 /opt/*/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib 2>/dev/null); do
  if [[ -e "$d/libnvrtc.so.13" ]]; then libs="$libs:$d"; break; fi
done
# cuBLAS (bench_cuda_gmm's anchor), where that directory lacks it.
if [[ ! -e "${libs##*:}/libcublas.so.13" ]]; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(ls -d /opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib \
                   /opt/*/.venv/lib/python3*/site-packages/nvidia/cublas/lib 2>/dev/null); do
    if [[ -e "$d/libcublas.so.13" ]]; then libs="$libs:$d"; break; fi
  done
fi
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ -z "${TESSERA_CUDA_INCLUDE_DIR:-}" && ! -f /usr/local/cuda/include/cuda_fp16.h ]]; then
  export TESSERA_CUDA_INCLUDE_DIR="$here/include"
fi
export TESSERA_BINARY="$here/bin/tessera"
export PATH="$here/bin:$PATH"
# The tree the bundle sits in (.device/bundle of a copy of the repository): the test models.
if [[ -d "$here/../../tests/frontend/data" ]]; then
  export TESSERA_SOURCE_DIR="$(cd "$here/../.." && pwd)"
fi

ENV

cat >"$out/run-gpu-tests.sh" <<'LAUNCHER'
#!/usr/bin/env bash
# Runs the GPU-labelled Tessera tests and `tessera devices` from this bundle. Exit status:
# nonzero when a test binary fails. Usage: run-gpu-tests.sh [--all] [gtest flags...]
#   --all   every test binary, not only the gpu-labelled ones
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
all=0
if [[ "${1:-}" == "--all" ]]; then all=1; shift; fi

source "$here/env.sh"

echo "== tessera devices"
"$here/bin/tessera" devices || exit 1
status=0
if [[ $all == 1 ]]; then
  binaries=$(ls "$here/tests")
else
  binaries=$(cat "$here/gpu-tests.txt")
fi
for name in $binaries; do
  [[ -x "$here/tests/$name" ]] || continue
  echo "== $name"
  "$here/tests/$name" --gtest_brief=1 "$@" || status=1
done
if [[ $all == 0 && -x "$here/tests/cli_test" ]]; then
  # The CLI's CUDA tests (cli_test is not gpu-labelled: most of it needs no GPU).
  echo "== cli_test (cuda and devices tests)"
  "$here/tests/cli_test" --gtest_brief=1 --gtest_filter='*Cuda*:*Devices*' "$@" || status=1
fi
exit $status
LAUNCHER
chmod +x "$out/run-gpu-tests.sh"

size=$(du -sb "$out" | cut -f1)
echo "device-bundle: $out: $(du -sh "$out" | cut -f1) (${#tests[@]} test binaries, $(ls "$out/lib" "$out/lib/fallback" | grep -c '\.so') libraries)"
if [[ $xz == 1 ]]; then
  tar -cf - -C "$(dirname "$out")" "$(basename "$out")" | xz -6 -T0 >"$out.tar.xz"
  echo "device-bundle: $out.tar.xz: $(du -sh "$out.tar.xz" | cut -f1)"
  size=$(du -sb "$out.tar.xz" | cut -f1)
fi
if ((size > limit_bytes)); then
  echo "device-bundle: the bundle is over 64 MiB; the device tool will not carry it (try --gpu-only, --xz)" >&2
  exit 1
fi
