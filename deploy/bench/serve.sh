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
#   PIPELINES=100 DAYS=90 N=50 deploy/bench/serve.sh   # one size (database handoff_bench_serve_p100_d90)
#   DROP=1 deploy/bench/serve.sh               # drop the databases at the end
#   LOG_QUERIES=1 deploy/bench/serve.sh        # also, per kind, each statement's count, duration,
#                                              # ClickHouse CPU and rows (system.query_log)
#   BENCH_BIN=/tmp/old deploy/bench/serve.sh   # run this build of deploy/bench/serve instead of
#                                              # building one (A/B: build each tree's, run in turn)
#
# Besides each kind's p99, a RESULT line gives its CPU per request of
# the benchmark's process (the server and a client that drops what it
# reads): a figure the other work of a shared machine moves less than
# the latency.
#
# 10,000 pipelines get a month (30 days ending 2026-09-30, one partition of
# the events table) rather than a year: a page of one date reads that date's
# month partition, which holds the same 10,000 x 30 batches in a year of
# history; only the first-date read (cached by the server) would see the
# other eleven months, and loading 36 M events would take the shared
# machine several minutes.
#
# Each database (DB, default handoff_bench_serve, for 1,000 x 365;
# DB_p<PIPELINES>_d<DAYS> for any other size) is loaded once and kept:
# later runs of the same size reuse it without loading (DROP=1 drops it at
# the end), so `SIZES=10000x30 deploy/bench/serve.sh` reuses
# handoff_bench_serve_p10000_d30. A database loaded by an older release
# gets its events_by_date copy on the first run (schema.Ensure copies the
# stored events once: about half a minute for the year of 1,000
# pipelines). The services are started when missing (deploy/services/up.sh)
# and left running. Prints RESULT lines (deploy/bench/README.md).
#
# Every measured request is cold but for the pipelines' first dates
# (docs/serve.md, "Caches"): the server keeps no page or per-day result, so
# each request reads its events and diagnoses every batch on read.
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
bench="${BENCH_BIN:-}"
if [ -z "$bench" ]; then
  mkdir -p bin
  go build -o bin/bench-serve ./deploy/bench/serve
  bench=bin/bench-serve
fi
flags=()
if [ "${DROP:-0}" = 1 ]; then flags=(-drop); fi
if [ "${LOG_QUERIES:-0}" = 1 ]; then flags+=(-log-queries); fi
mkdir -p "$DATA_DIR/bench"
for size in $SIZES; do
  pipelines=${size%x*}
  days=${size#*x}
  db=$DB
  if [ "$size" != 1000x365 ]; then db="${DB}_p${pipelines}_d${days}"; fi
  echo "size: $pipelines pipelines x $days days, database $db; $(uptime)"
  "$bench" -db "$db" -pipelines "$pipelines" -days "$days" -n "$N" "${flags[@]}" |
    tee "$DATA_DIR/bench/serve-$pipelines-$days-$(date -u +%Y%m%dT%H%M%SZ).txt"
done
