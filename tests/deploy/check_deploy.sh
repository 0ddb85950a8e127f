#!/usr/bin/env bash
# Checks deploy/: every Kubernetes manifest validates against the Kubernetes schemas (strict:
# unknown fields are errors) with kubernetes-validate, the kustomization lists exactly the
# manifests, the flags the manifests and units pass exist in `tessera`, and the systemd units
# pass `systemd-analyze verify` with no message at all. Exit 77 (CTest: skipped) only when a
# tool is missing, saying which.
#   check_deploy.sh SOURCE_DIR KUBERNETES_VALIDATE TESSERA_BINARY
set -euo pipefail
src="$1" validate="$2" tessera="$(readlink -f "$3")"  # absolute: the units need one
kube="${src}/deploy/kubernetes" units="${src}/deploy/systemd"
kube_version=1.30.0  # the oldest Kubernetes the manifests are for (gRPC probes are GA in 1.27)
failed=0 skipped=()
fail() { echo "FAIL: $*"; failed=1; }

mapfile -t manifests < <(cd "${kube}" && ls ./*.yaml | sed 's|^\./||' | grep -v '^kustomization.yaml$')
[[ ${#manifests[@]} -gt 0 ]] || fail "no manifests in ${kube}"

# 1. Schemas.
if [[ -x "${validate}" ]]; then
  for m in "${manifests[@]}"; do
    out="$("${validate}" --strict -k "${kube_version}" "${kube}/${m}" 2>&1)" || true
    # Every resource of the file must pass; a warning (e.g. no schema for a kind) is a failure.
    if grep -qv '^INFO .* passed for resource ' <<<"${out}" || [[ -z "${out}" ]]; then
      fail "${m} does not validate against Kubernetes ${kube_version}:"$'\n'"${out}"
    else
      echo "ok: ${m}: $(grep -c passed <<<"${out}") resource(s) valid for Kubernetes ${kube_version}"
    fi
  done
else
  skipped+=("manifests not validated: ${validate} is missing (scripts/setup.sh installs kubernetes-validate into build/deploy-venv)")
fi

# 2. The kustomization lists every manifest, and nothing else.
listed="$(sed -n 's/^  - \(.*\.yaml\)$/\1/p' "${kube}/kustomization.yaml" | sort)"
present="$(printf '%s\n' "${manifests[@]}" | sort)"
if [[ "${listed}" != "${present}" ]]; then
  fail "kustomization.yaml lists"$'\n'"${listed}"$'\n'"but the folder holds"$'\n'"${present}"
else
  echo "ok: kustomization.yaml lists the ${#manifests[@]} manifests"
fi

# 3. The flags the deployments pass exist in `tessera serve` / `tessera worker`. Flags the
# server does not have yet are listed here with where they are described (none now).
pending_flags=" "
check_flags() {  # SUBCOMMAND FILE FLAG...
  local sub="$1" file="$2"
  shift 2
  local help
  if ! help="$("${tessera}" "${sub}" --help 2>&1)"; then
    skipped+=("flags of ${file} not checked: this tessera has no '${sub}' command")
    return
  fi
  local known=0
  for flag in "$@"; do
    if grep -q -- "${flag}\b" <<<"${help}"; then
      known=$((known + 1))
      continue
    fi
    if [[ "${pending_flags}" == *" ${flag} "* ]]; then
      echo "pending: ${file} passes ${flag}, which 'tessera ${sub}' does not have yet"
    else
      fail "${file} passes ${flag}, which 'tessera ${sub}' does not know"
    fi
  done
  echo "checked: ${file}: ${known} of its $# flags are flags of 'tessera ${sub}'"
}
flags_of_manifest() {  # FILE: the --flags in its container args
  grep -o -- '^ *- --[a-z-]*' "$1" | sed 's/^ *- //' | sort -u
}
flags_of_unit() {  # FILE: the --flags of its ExecStart
  sed -n '/^ExecStart=/,/[^\\]$/p' "$1" | grep -o -- '--[a-z-]*' | sort -u
}
check_flags serve server.yaml $(flags_of_manifest "${kube}/server.yaml")
check_flags worker gpu-workers.yaml $(flags_of_manifest "${kube}/gpu-workers.yaml")
check_flags worker cpu-workers.yaml $(flags_of_manifest "${kube}/cpu-workers.yaml")
check_flags serve tessera-server.service $(flags_of_unit "${units}/tessera-server.service")
check_flags worker tessera-worker@.service $(flags_of_unit "${units}/tessera-worker@.service")

# 4. systemd units, with ExecStart pointing at the tessera just built (verify checks that the
# program exists and is executable), the template as an instance (device 0) too.
if command -v systemd-analyze >/dev/null 2>&1; then
  work="$(mktemp -d)"
  trap 'rm -rf "${work}"' EXIT
  cp "${units}"/*.service "${work}/"
  sed -i "s|/usr/local/bin/tessera|${tessera}|" "${work}"/*.service
  for unit in tessera-server.service tessera-worker@.service tessera-worker@0.service; do
    if ! out="$(cd "${work}" && systemd-analyze verify --man=no "./${unit}" 2>&1)"; then
      if grep -qi 'failed to .*\(bus\|manager\|initialize\)' <<<"${out}"; then
        skipped+=("units not verified: systemd-analyze cannot run here: ${out}")
        break
      fi
      fail "systemd-analyze verify ${unit}:"$'\n'"${out}"
    elif [[ -n "${out}" ]]; then
      fail "systemd-analyze verify ${unit} warns:"$'\n'"${out}"
    else
      echo "ok: ${unit} verifies"
    fi
  done
else
  skipped+=("units not verified: no systemd-analyze (Debian's systemd package)")
fi

for s in "${skipped[@]}"; do echo "SKIPPED: ${s}"; done
if [[ ${failed} -ne 0 ]]; then exit 1; fi
if [[ ${#skipped[@]} -gt 0 ]]; then exit 77; fi
echo "deploy/: all checks passed"
