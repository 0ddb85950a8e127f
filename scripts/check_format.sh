#!/usr/bin/env bash
# Checks that the C++ lines changed since BASE (default: the parent of HEAD, i.e. the lines of the
# last commit) follow .clang-format; prints the fix as a diff and fails if they do not. Only
# changed lines are checked, so older code is not reformatted behind anyone's back (a file that
# was only moved is not checked). Without clang-format / git-clang-format installed, or without
# the base commit (a shallow clone), it says so and succeeds.
#   bash scripts/check_format.sh [BASE]     e.g. BASE=origin/main for a whole branch
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base="${1:-${TESSERA_FORMAT_BASE:-HEAD~1}}"
clang_format="$(command -v clang-format-14 || command -v clang-format || true)"
if [[ -z "${clang_format}" ]] || ! git clang-format -h >/dev/null 2>&1; then
  echo "[format] clang-format or git-clang-format not installed: not checked"
  exit 0
fi
if ! git rev-parse --verify --quiet "${base}^{commit}" >/dev/null; then
  echo "[format] no commit ${base} to compare with: not checked"
  exit 0
fi
# Added and modified files only: git clang-format does not follow renames and would take every
# line of a moved file as changed.
mapfile -t files < <(git diff --name-only -M --diff-filter=AM "${base}" HEAD -- '*.cc' '*.h')
if [[ ${#files[@]} -eq 0 ]]; then
  echo "[format] no C++ files added or modified since ${base}"
  exit 0
fi
diff="$(git clang-format --binary "${clang_format}" --diff --extensions cc,h "${base}" HEAD \
          -- "${files[@]}" || true)"
if [[ -z "${diff}" || "${diff}" == "no modified files to format" ||
      "${diff}" == "clang-format did not modify any files" ]]; then
  echo "[format] lines changed since ${base} follow .clang-format"
  exit 0
fi
echo "[format] lines changed since ${base} differ from .clang-format; apply with"
echo "         git clang-format ${base}   (or the diff below)"
echo "${diff}"
exit 1
