#!/usr/bin/env bash
# Benchmark of `handoff serve` (docs/serve.md, "Performance"): history for
# daily pipelines in a private database of the local ClickHouse, then the
# latency of the batch API call, the grid of one pipeline-month and the
# grid of every pipeline for one day, N requests each, one at a time
# (deploy/bench/serve/main.go says what each is), for each estate size of
# SIZES (PIPELINESxDAYS).
#
#   deploy/bench/serve.sh                      # 1,000 pipelines x 365 days, then 10,000 x 30; 200 requests each
#   SIZES=1000x365 deploy/bench/serve.sh       # one size
#   PIPELINES=100 DAYS=90 N=50 deploy/bench/serve.sh   # one size, as before
#   DROP=1 deploy/bench/serve.sh               # drop the databases at the end
#
# 10,000 pipelines get a month (30 days ending 2026-09-30, one partition of
# the events table) rather than a year: a page of one date reads that date's
# month partition, which holds the same 10,000 x 30 batches in a year of
# history; only the first-date read (cached by the server) would see the
# other eleven months, and loading 36 M events would take the shared
# machine several minutes.
#
# Each database (DB for the first size, default handoff_bench_serve; then
# DB_p<PIPELINES>_d<DAYS>) is loaded once and reused by later runs with the
# same size; the services are started when missing (deploy/services/up.sh)
# and left running. Prints RESULT lines (deploy/bench/README.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ -n "${PIPELINES:-}${DAYS:-}" ]; then
  SIZES="${PIPELINES:-1000}x${DAYS:-365}"
fi
SIZES="${SIZES:-1000x365 10000x30}"
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
first=1
for size in $SIZES; do
  pipelines=${size%x*}
  days=${size#*x}
  db=$DB
  if [ "$first" = 0 ]; then db="${DB}_p${pipelines}_d${days}"; fi
  first=0
  echo "size: $pipelines pipelines x $days days, database $db; $(uptime)"
  bin/bench-serve -db "$db" -pipelines "$pipelines" -days "$days" -n "$N" "${drop[@]}" |
    tee "$DATA_DIR/bench/serve-$pipelines-$days-$(date -u +%Y%m%dT%H%M%SZ).txt"
done
