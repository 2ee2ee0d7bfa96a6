#!/usr/bin/env bash
# Requests per second of GET /system/v1/settings through the real engine against
# a bare net/http handler writing the same bytes, in one run, and their ratio.
# Usage: bash bench/settings.sh [benchtime]   (default 3s)
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED="${CGO_ENABLED:-0}"
go test -run '^$' -bench '^BenchmarkSettings$' -benchtime "${1:-3s}" -v \
  github.com/agritrade/api/system/internal/refdata/ | grep -E 'BenchmarkSettings/|ratio'
