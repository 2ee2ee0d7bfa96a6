#!/usr/bin/env bash
# Livestock search benchmark (issue 8): the query "sheep, active-selling, within
# 50 km of a point, newest first, 20 per page" through the real HTTP engine, at
# 1,000,000 generated listings on PostgreSQL and 100,000 on SQLite, from
# parallel clients (GOMAXPROCS) at random points of Great Britain. Prints p50
# and p99 latency (ms) and requests per second per dialect.
#
#   AGRITRADE_TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable livestock/bench/search.sh
#
# Sizes: AGRITRADE_BENCH_PG_LISTINGS, AGRITRADE_BENCH_SQLITE_LISTINGS; requests
# per dialect: BENCHTIME (a Go -benchtime, default 3000x). Without a PostgreSQL
# DSN (or Docker for testcontainers) only SQLite runs. Generating a million rows
# takes a few minutes; each run starts from a fresh database.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CGO_ENABLED=0
export AGRITRADE_BENCH_PG_LISTINGS="${AGRITRADE_BENCH_PG_LISTINGS:-1000000}"
export AGRITRADE_BENCH_SQLITE_LISTINGS="${AGRITRADE_BENCH_SQLITE_LISTINGS:-100000}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
go test -run '^$' -bench '^BenchmarkSearchSheepNear$' -benchtime "${BENCHTIME:-3000x}" -timeout 3h -v \
	github.com/agritrade/api/livestock/internal/listings | grep -E 'generated|^Benchmark|skipped' || true
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
