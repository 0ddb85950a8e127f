#!/usr/bin/env bash
# Lists the library .cc files and whether each has a mirrored test file: <folder>/<name>.cc is
# tested by tests/<folder>/<name>_test.cc (or _test.c for a C API; docs/architecture.md, "Tests"). The last line is the
# count, so that a change can say how many files it gave a test of their own.
#
# Usage: scripts/mirrored_tests.sh [--missing]   (--missing: list only the files without a test)
# Reads the files git tracks and the untracked ones it does not ignore; runs from any folder.
set -euo pipefail

cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

only_missing=0
case "${1:-}" in
  --missing) only_missing=1 ;;
  "") ;;
  *) echo "usage: $0 [--missing]" >&2; exit 2 ;;
esac

# The library folders (one CMake library each, plus cli/ whose commands are tested one by one);
# bench/, examples/ and tests/ themselves are not library code.
folders=(base ir frontend schedule codegen rules cost_model database report worker tuner model server cli)

total=0
mirrored=0
while IFS= read -r source; do
  test_file="tests/${source%.cc}_test.cc"
  total=$((total + 1))
  # A C API is tested from C: <name>_test.c.
  if [[ -f "$test_file" || -f "${test_file%.cc}.c" ]]; then
    mirrored=$((mirrored + 1))
    [[ $only_missing -eq 1 ]] || printf 'yes %s\n' "$source"
  else
    printf 'no  %s\n' "$source"
  fi
done < <(git ls-files --cached --others --exclude-standard -- "${folders[@]}" | grep '\.cc$' | sort -u)

echo "mirrored: ${mirrored}/${total} library .cc files have tests/<folder>/<name>_test.cc"
