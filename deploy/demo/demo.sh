#!/usr/bin/env bash
# The seed case end to end (README: `make demo`):
#
#   producer/exchange/consumer events --emit--> Kafka --ingest--> ClickHouse --diagnose--> report
#                                                  \--detect--> findings --ingest--> ClickHouse
#
# ClickHouse is Debian's clickhouse-server, installed and started by
# deploy/services/clickhouse.sh, unless HANDOFF_CLICKHOUSE_ADDR points at a
# running one. Kafka is the embedded Kafka-protocol broker (`handoff broker`,
# data under .data/demo/broker, port HANDOFF_BROKER_PORT) unless
# HANDOFF_KAFKA_BROKERS points at a real one (for example after
# `bash deploy/services/up.sh`).
# Re-running is safe: event_id deduplicates what was already stored, and each
# run waits for the events it ingested itself (ingested after it started),
# not for rows an earlier run left.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
DATA_DIR="${HANDOFF_DATA_DIR:-$ROOT/.data}"
DEMO_DIR="$DATA_DIR/demo"
BIN="${HANDOFF_BIN:-$ROOT/bin/handoff}"
mkdir -p "$DEMO_DIR"
say() { printf '\n== %s\n' "$*" >&2; }

[ -x "$BIN" ] || go build -o "$BIN" ./cmd/handoff

if [ -n "${HANDOFF_CLICKHOUSE_ADDR:-}" ]; then
  say "ClickHouse: $HANDOFF_CLICKHOUSE_ADDR"
else
  say "ClickHouse (Debian clickhouse-server, logs under $DATA_DIR/clickhouse/logs)"
  bash deploy/services/clickhouse.sh install
  bash deploy/services/clickhouse.sh start
  export HANDOFF_CLICKHOUSE_ADDR="127.0.0.1:${HANDOFF_CLICKHOUSE_PORT:-19000}"
fi
export HANDOFF_CLICKHOUSE_DATABASE="${HANDOFF_CLICKHOUSE_DATABASE:-handoff}"

# Background processes, stopped in the reverse order of their start: the
# ingester before the broker it commits to. (Stopped together, the broker
# went first and the ingester then spent its whole shutdown timeout, 30 s,
# trying to commit.)
pids=()
cleanup() {
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT

# wait_for DESC SECONDS CMD...: poll CMD until it succeeds or the deadline passes.
wait_for() {
  local desc=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "demo: timed out after ${secs}s waiting for $desc; logs in $DEMO_DIR" >&2
      exit 1
    fi
    sleep 0.2
  done
}

if [ -z "${HANDOFF_KAFKA_BROKERS:-}" ]; then
  port="${HANDOFF_BROKER_PORT:-19192}"
  say "Kafka: embedded Kafka-protocol broker on 127.0.0.1:$port (log $DEMO_DIR/broker.log)"
  "$BIN" broker --port "$port" --data-dir "$DEMO_DIR/broker" >"$DEMO_DIR/broker.env" 2>"$DEMO_DIR/broker.log" &
  pids+=($!)
  export HANDOFF_KAFKA_BROKERS="127.0.0.1:$port"
  wait_for "the embedded broker on port $port" 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
else
  say "Kafka: $HANDOFF_KAFKA_BROKERS"
fi
# The demo's own topic and group, so it never mixes with other data.
export HANDOFF_TOPIC="${HANDOFF_TOPIC:-handoff.demo.events}"
export HANDOFF_DLQ_TOPIC="${HANDOFF_DLQ_TOPIC:-handoff.demo.events.dlq}"
export HANDOFF_GROUP="${HANDOFF_GROUP:-handoff-demo-ingest}"
export HANDOFF_METRICS_ADDR="${HANDOFF_METRICS_ADDR:-127.0.0.1:19464}"
# Findings: handoff detect publishes them, the ingester stores them.
export HANDOFF_FINDINGS_TOPIC="${HANDOFF_FINDINGS_TOPIC:-handoff.demo.findings}"
export HANDOFF_DIAGNOSES_TOPIC="${HANDOFF_DIAGNOSES_TOPIC:-handoff.demo.diagnoses}"
export HANDOFF_RESULTS_GROUP="${HANDOFF_RESULTS_GROUP:-handoff-demo-results}"

say "ingest: Kafka -> ClickHouse (log $DEMO_DIR/ingest.log, metrics http://$HANDOFF_METRICS_ADDR/metrics)"
"$BIN" ingest >"$DEMO_DIR/ingest.log" 2>&1 &
pids+=($!)

# The seed events have fixed event ids, so rows of an earlier run match
# them too: count only what the ingester stored after this run started
# (ingested_ms is set by the ingester when it reads a message).
start_ms=$(date +%s%3N)
say "emit: the seed case's events for 2026-09-29 and 2026-09-30 (deploy/demo/seed-case.jsonl)"
"$BIN" emit --stdin --quiet <deploy/demo/seed-case.jsonl

want=$(grep -c . deploy/demo/seed-case.jsonl)
ch_host=${HANDOFF_CLICKHOUSE_ADDR%:*}
ch_port=${HANDOFF_CLICKHOUSE_ADDR##*:}
count_stored() {
  local n
  n=$(clickhouse-client --host "$ch_host" --port "$ch_port" -q \
    "SELECT uniqExact(event_id) FROM $HANDOFF_CLICKHOUSE_DATABASE.events
     WHERE pipeline = 'account-balance-snapshot.daily' AND ingested_ms >= $start_ms" 2>/dev/null) || return 1
  [ "${n:-0}" -ge "$want" ]
}
wait_for "this run's $want events in ClickHouse ($HANDOFF_CLICKHOUSE_DATABASE.events)" 60 count_stored
say "stored: this run's $want events in ClickHouse database $HANDOFF_CLICKHOUSE_DATABASE"

say "diagnose, read back from ClickHouse, as of 2026-10-03T00:00:00Z"
set +e
"$BIN" diagnose --clickhouse-addr "$HANDOFF_CLICKHOUSE_ADDR" --pipeline account-balance-snapshot.daily \
  --contract deploy/contracts --as-of 2026-10-03T00:00:00Z
code=$?
set -e
# Exit 1 means "some batch is not delivered": the seed case's point, not a demo failure.
[ $code -le 1 ] || exit $code

# Streaming detection of the seed pipeline (its contract only: the other
# example contracts would expect batches the demo never sends). The
# detector's clock starts at the same moment
# (--now: for demos and tests only), so the seed's deadlines of 2026 have
# passed. Each run has a consumer group of its own: this run's detector
# reads the whole topic and the stored history and judges every batch
# itself. A finding published by an earlier run is restored from
# ClickHouse, not published twice; the log says which.
detect_log="$DEMO_DIR/detect.log"
say "detect: streaming detection as of 2026-10-03T00:00:00Z, calendar from 2026-09-29 (log $detect_log)"
"$BIN" detect --contract deploy/contracts/account-balance-snapshot.daily.yaml --expect-from 2026-09-29 --now 2026-10-03T00:00:00Z \
  --group "handoff-demo-detect-$start_ms" --metrics-addr "" --tick 200ms >"$detect_log" 2>&1 &
pids+=($!)
wait_for "this run's detector to judge every event in the topic" 60 grep -q "detect: caught up" "$detect_log"

# What the detector decided, from its log: the findings it published (to
# $HANDOFF_FINDINGS_TOPIC) and the ones an earlier run had published that
# it restored from ClickHouse instead of publishing them twice.
P=account-balance-snapshot.daily
decided=$(grep -E 'msg="detect: (finding|open finding restored)' "$detect_log" | grep -oE "batch=$P/[^ ]+ kind=[^ ]+ name=[^ ]*" | sort -u)
n_decided=$(grep -c . <<<"$decided" || true)
if grep -q 'msg="detect: finding"' "$detect_log"; then
  say "detect: $n_decided findings, raised by this run"
else
  say "detect: $n_decided findings, raised by an earlier run; this run's detector judged the same and restored them from ClickHouse instead of publishing them twice"
fi

# The ingester stores the published findings in findings_v2; read them back
# as an analyst would, with `handoff findings` (docs/findings.md). The
# lateness is counted to the demo's clock.
findings_of() { "$BIN" findings --pipeline "$P" --from 2026-09-29 --as-of 2026-10-03T00:00:00Z "$@"; }
seed_stored() {
  findings_of --to 2026-09-30 --kind overdue --format jsonl |
    grep '"business_date":"2026-09-30"' | grep '"name":"signal_delivered"' | grep -q '"verdict":"not_identified"'
}
all_stored() { [ "$(findings_of --state all --format jsonl | grep -c .)" -ge "$n_decided" ]; }
wait_for "the open overdue signal_delivered finding of 2026-09-30 (not_identified) in $HANDOFF_CLICKHOUSE_DATABASE.findings_v2" 60 seed_stored
wait_for "the $n_decided findings of this run's detector in $HANDOFF_CLICKHOUSE_DATABASE.findings_v2" 60 all_stored
if [ -n "$(findings_of --to 2026-09-29 --state all --format jsonl)" ]; then
  echo "demo: the delivered batch 2026-09-29 has a finding in $HANDOFF_CLICKHOUSE_DATABASE.findings_v2; detector log $detect_log" >&2
  findings_of --to 2026-09-29 --state all >&2
  exit 1
fi
say "findings: stored in ClickHouse ($HANDOFF_CLICKHOUSE_DATABASE.findings_v2), read back with handoff findings --pipeline $P --from 2026-09-29"
findings_of >&2
say "done: 20260929 delivered, no finding; 20260930 stopped at signal_delivered (not_identified): overdue finding; 2026-10-01 and 2026-10-02 never sent an event: missing. See README for the story."
