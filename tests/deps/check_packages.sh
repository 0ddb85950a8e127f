#!/usr/bin/env bash
# Checks the split of the set-up (scripts/setup.sh): the main command (`setup.sh --main`, run by
# scripts/demo.sh) installs scripts/packages-main.txt only, so that list must hold no package that
# only the tests or benchmarks need, and `tessera` must configure and build without them.
#   check_packages.sh lists SOURCE_DIR
#       the main list holds none of the test-only packages (those named below and every package
#       of scripts/packages-test.txt), and the test list holds all of those named below.
#   check_packages.sh configure SOURCE_DIR CMAKE GENERATOR MAKE_PROGRAM
#       configures SOURCE_DIR as `setup.sh --main` does (TESSERA_BUILD_TESTS=OFF) in a scratch
#       directory with the test-only CMake packages made unfindable (GoogleTest, OpenCL, oneDNN),
#       which is what a machine with the main list alone has; then the `tessera` target must be
#       there, no test target, and none of its commands may name gtest, OpenBLAS, oneDNN or OpenCL.
set -euo pipefail
what="$1" src="$2"
failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}
read_packages() { sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1"; }

case "${what}" in
  lists)
    # Test-only by what they are for (docs/deps.md), whichever list they are moved to.
    known_test_only=(libgtest-dev googletest postgresql chromium systemd python3-venv
                     libopenblas-dev libdnnl-dev ocl-icd-opencl-dev)
    mapfile -t main < <(read_packages "${src}/scripts/packages-main.txt")
    mapfile -t tests < <(read_packages "${src}/scripts/packages-test.txt")
    [[ ${#main[@]} -gt 0 ]] || fail "scripts/packages-main.txt lists no package"
    [[ ${#tests[@]} -gt 0 ]] || fail "scripts/packages-test.txt lists no package"
    for p in "${main[@]}"; do
      for q in "${known_test_only[@]}" "${tests[@]}"; do
        # postgresql, postgresql-15, postgresql-client-15 ...: the server is test-only; libpq-dev is not.
        if [[ ${p} == "${q}" || (${q} == postgresql && ${p} == postgresql-*) ]]; then
          fail "scripts/packages-main.txt holds ${p}, which only the tests or benchmarks need"
          break
        fi
      done
    done
    for q in "${known_test_only[@]}"; do
      [[ ${q} == googletest ]] && continue  # named above to keep it out of the main list only
      printf '%s\n' "${tests[@]}" | grep -qxF "${q}" ||
        fail "scripts/packages-test.txt lacks ${q}: \`scripts/setup.sh --all\` would not install it"
    done
    dups="$(printf '%s\n' "${main[@]}" "${tests[@]}" | sort | uniq -d)"
    [[ -z ${dups} ]] || fail "listed twice: ${dups}"
    ((failed)) || echo "ok: the main list (${#main[@]} packages) holds none of the test-only ones (${#tests[@]} in scripts/packages-test.txt)"
    ;;
  configure)
    cmake="$3" generator="$4" make_program="$5"
    scratch="$(mktemp -d)"
    trap 'rm -rf "${scratch}"' EXIT
    if ! "${cmake}" -S "${src}" -B "${scratch}" -G "${generator}" -DCMAKE_MAKE_PROGRAM="${make_program}" \
        -DCMAKE_BUILD_TYPE=Release -DTESSERA_BUILD_TESTS=OFF \
        -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON \
        -DCMAKE_DISABLE_FIND_PACKAGE_dnnl=ON >"${scratch}/configure.log" 2>&1; then
      cat "${scratch}/configure.log"
      echo "FAIL: the configure of \`setup.sh --main\` fails without the test-only packages"
      exit 1
    fi
    grep 'Tessera dependencies' "${scratch}/configure.log" || true
    if [[ ${generator} == Ninja ]]; then
      targets="$("${make_program}" -C "${scratch}" -t targets all)"
      grep -q '^tessera: ' <<<"${targets}" || fail "no tessera target"
      extra="$(grep -E '^[a-z_0-9]+_test: |^bench_[a-z_0-9]+: ' <<<"${targets}" || true)"
      [[ -z ${extra} ]] || fail "test or benchmark targets with TESSERA_BUILD_TESTS=OFF:"$'\n'"${extra}"
      named="$("${make_program}" -C "${scratch}" -t commands tessera |
                 grep -oiE 'gtest|openblas|dnnl|OpenCL' | sort -u || true)"
      [[ -z ${named} ]] || fail "building tessera names test-only packages: ${named}"
      ((failed)) || echo "ok: tessera configures without GoogleTest, OpenCL and oneDNN," \
        "$("${make_program}" -C "${scratch}" -t commands tessera | wc -l) commands, none naming them"
    else
      echo "ok: tessera configures without GoogleTest, OpenCL and oneDNN (${generator}: targets not listed)"
    fi
    ;;
  *)
    echo "usage: check_packages.sh lists|configure SOURCE_DIR ..." >&2
    exit 2
    ;;
esac
exit "${failed}"
