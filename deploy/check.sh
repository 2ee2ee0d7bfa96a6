#!/usr/bin/env bash
# Validates the deployment files without a cluster or a Docker engine:
#   - kustomize build of deploy/k8s/base and every overlay under deploy/k8s/overlays/
#   - docker-compose config of docker-compose.yml (docker-compose v1, or `docker compose` v2)
# A tool that is not installed is skipped with a message. Exits non-zero if any check fails.
# Usage: deploy/check.sh   (from anywhere; it works from the repository root)
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2

failures=0
ok()   { printf 'ok:      %s\n' "$1"; }
skip() { printf 'skipped: %s\n' "$1"; }
fail() { printf 'FAILED:  %s\n' "$1"; failures=$((failures + 1)); }

# --- Kubernetes manifests ----------------------------------------------------
if command -v kustomize >/dev/null 2>&1; then
  for dir in deploy/k8s/base deploy/k8s/overlays/*/; do
    dir="${dir%/}"
    [ -f "$dir/kustomization.yaml" ] || continue
    if out="$(kustomize build "$dir" 2>&1)"; then
      if [ -z "$out" ]; then
        fail "kustomize build $dir (empty output)"
      else
        ok "kustomize build $dir ($(grep -c '^kind:' <<<"$out") objects)"
      fi
    else
      fail "kustomize build $dir"
      printf '%s\n' "$out" | sed 's/^/    /'
    fi
  done
else
  skip "kustomize not installed (go install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1)"
fi

# --- docker-compose.yml --------------------------------------------------------
compose=()
if command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
elif command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
fi
if [ ${#compose[@]} -gt 0 ]; then
  if out="$("${compose[@]}" -f docker-compose.yml config -q 2>&1)"; then
    ok "${compose[*]} -f docker-compose.yml config"
  else
    fail "${compose[*]} -f docker-compose.yml config"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
else
  skip "docker-compose not installed (apt-get install -y docker-compose)"
fi

if [ "$failures" -gt 0 ]; then
  printf '%d check(s) failed\n' "$failures"
  exit 1
fi
echo "deploy checks passed"
