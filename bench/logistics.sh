#!/usr/bin/env bash
# Logistics at scale on PostgreSQL: a million generated loads, then search
# p50/p99, CSV export rows/s and peak heap, and a 100,000-row batch upload.
# Runs only when AGRITRADE_BENCH_POSTGRES_DSN names a server the benchmark may
# create (and then drop) a database on; LOADS overrides the number of loads.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${AGRITRADE_BENCH_POSTGRES_DSN:-}" ]; then
  echo "logistics bench skipped: set AGRITRADE_BENCH_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)"
  exit 0
fi
exec go run ./logistics/bench -loads "${LOADS:-1000000}"
