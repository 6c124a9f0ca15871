#!/usr/bin/env bash
# Benchmark of `handoff serve` (docs/serve.md, "Performance"): a year of
# history for PIPELINES daily pipelines in a private database of the local
# ClickHouse, then the latency of the batch API call, the grid of one
# pipeline-month and the grid of every pipeline for one day, N requests
# each, one at a time (deploy/bench/serve/main.go says what each is).
#
#   deploy/bench/serve.sh                      # 1,000 pipelines x 365 days, 200 requests each
#   PIPELINES=100 DAYS=90 N=50 deploy/bench/serve.sh
#   DROP=1 deploy/bench/serve.sh               # drop the database at the end
#
# The database (DB, default handoff_bench_serve) is loaded once and reused
# by later runs with the same size; the services are started when missing
# (deploy/services/up.sh) and left running.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PIPELINES="${PIPELINES:-1000}"
DAYS="${DAYS:-365}"
N="${N:-200}"
DB="${DB:-handoff_bench_serve}"
DATA_DIR="${HANDOFF_DATA_DIR:-$PWD/.data}"

if [ ! -f "$DATA_DIR/services.env" ]; then
  bash deploy/services/up.sh
fi
set -a
# shellcheck disable=SC1091
. "$DATA_DIR/services.env"
set +a
mkdir -p bin
go build -o bin/bench-serve ./deploy/bench/serve
drop=()
if [ "${DROP:-0}" = 1 ]; then drop=(-drop); fi
mkdir -p "$DATA_DIR/bench"
bin/bench-serve -db "$DB" -pipelines "$PIPELINES" -days "$DAYS" -n "$N" "${drop[@]}" | tee "$DATA_DIR/bench/serve-$(date -u +%Y%m%dT%H%M%SZ).txt"
