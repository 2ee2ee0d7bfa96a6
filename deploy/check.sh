#!/usr/bin/env bash
# Validates the deployment files without a cluster or a Docker engine:
#   - kustomize build of deploy/k8s/base and every overlay under deploy/k8s/overlays/
#   - docker-compose config of docker-compose.yml (docker-compose v1, or `docker compose` v2)
#   - deploy/monitoring: promtool check rules and promtool test rules of the
#     alert rules; the Grafana dashboard parsed with jq (every panel has a
#     query, ids are unique) and its queries parsed by promtool as rules
#     (which metrics they use is checked against a real /metrics by the Go
#     test TestMetricsAfterRealOperations in platform/app)
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

# --- monitoring: alert rules and dashboard ----------------------------------------
mon=deploy/monitoring
if command -v promtool >/dev/null 2>&1; then
  if out="$(promtool check rules "$mon/alerts.yml" 2>&1)"; then
    ok "promtool check rules $mon/alerts.yml ($(grep -c -- '- alert:' "$mon/alerts.yml") alerts)"
  else
    fail "promtool check rules $mon/alerts.yml"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
  if out="$(cd "$mon" && promtool test rules alerts_test.yml 2>&1)"; then
    ok "promtool test rules $mon/alerts_test.yml"
  else
    fail "promtool test rules $mon/alerts_test.yml"
    printf '%s\n' "$out" | sed 's/^/    /'
  fi
else
  skip "promtool not installed (apt-get install -y prometheus)"
fi
dash="$mon/grafana-dashboard.json"
if command -v jq >/dev/null 2>&1; then
  if ! jq -e . "$dash" >/dev/null 2>&1; then
    fail "$dash is not valid JSON"
  elif problems="$(jq -r '
      [.panels[] | select(.type != "row")] as $p
      | ( $p[] | select((.targets // []) | length == 0) | "panel \(.title) has no query" ),
        ( $p[] | .title as $t | (.targets // [])[] | select((.expr // "") == "") | "panel \($t) has an empty query" ),
        ( [.panels[].id] | group_by(.) | map(select(length > 1)) | .[] | "panel id \(.[0]) is used twice" ),
        ( if (.uid // "") == "" or (.title // "") == "" then "the dashboard has no uid or title" else empty end )
    ' "$dash")"; [ -n "$problems" ]; then
    fail "$dash"
    printf '%s\n' "$problems" | sed 's/^/    /'
  else
    ok "$dash ($(jq '[.panels[] | select(.type != "row")] | length' "$dash") panels)"
    if command -v promtool >/dev/null 2>&1; then
      # Every panel query as a recording rule: promtool parses the PromQL.
      rules="$(mktemp)"
      jq -r '"groups:\n  - name: dashboard\n    rules:",
             ([.panels[] | select(.type != "row") | .targets[]?.expr] | to_entries[]
              | "      - record: dashboard:query_\(.key)\n        expr: \(.value | gsub("\\$job"; ".*") | tojson)")' "$dash" >"$rules"
      if out="$(promtool check rules "$rules" 2>&1)"; then
        ok "promtool parses every query of $dash"
      else
        fail "a query of $dash does not parse"
        printf '%s\n' "$out" | sed 's/^/    /'
      fi
      rm -f "$rules"
    fi
  fi
else
  skip "jq not installed (apt-get install -y jq): $dash not checked"
fi

if [ "$failures" -gt 0 ]; then
  printf '%d check(s) failed\n' "$failures"
  exit 1
fi
echo "deploy checks passed"
