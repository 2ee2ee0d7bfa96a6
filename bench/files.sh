#!/usr/bin/env bash
# File store figures: a generated file (1 GiB by default) streamed through the
# real upload handler over HTTP and downloaded back, against a plain cp of the
# same file, with the memory the process gained meanwhile. The file is made in
# a temporary directory and removed afterwards; nothing is committed.
#
#   bench/files.sh                 # 1024 MiB, local backend
#   MB=256 BACKEND=s3 bench/files.sh   # S3 backend (needs the MinIO binary, see .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
export AGRITRADE_BENCH_FILE_MB="${MB:-1024}"
export AGRITRADE_BENCH_FILE_BACKEND="${BACKEND:-local}"
go test -run '^$' -bench '^BenchmarkLargeFile$' -benchtime 1x -timeout 30m \
  github.com/agritrade/api/system/internal/files
