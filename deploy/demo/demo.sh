#!/usr/bin/env bash
# The seed case end to end (README: `make demo`), in seven steps:
#
#   1 events    producer/exchange/consumer events --emit--> Kafka --ingest--> ClickHouse
#   2 diagnose  where the delivery of 2026-09-30 stopped, read back from ClickHouse
#   3 detect    streaming detection: the overdue finding, and the days that never came
#   4 prove     restore-signal's dry run against the real files at the receiver
#   5 restore   --apply: the flag written atomically, signal.restored recorded
#   6 consume   a consumer stand-in identifies and consumes the batch once the flag is there
#   7 verify    end to end; the detector's finding resolved, with its lateness
#
# The files are real: deploy/demo/files.sh writes the seed's data files
# (their sizes and sha256 are the ones the events record) into the
# producer's outbox and the receiver's inbox under $HANDOFF_DATA_DIR/demo/files,
# with the 2026-09-30 flag missing at the receiver.
#
# ClickHouse is Debian's clickhouse-server, installed and started by
# deploy/services/clickhouse.sh, unless HANDOFF_CLICKHOUSE_ADDR points at a
# running one. Kafka is the embedded Kafka-protocol broker (`handoff broker`,
# data under .data/demo/broker, port HANDOFF_BROKER_PORT) unless
# HANDOFF_KAFKA_BROKERS points at a real one (for example after
# `bash deploy/services/up.sh`).
# Every run tells the story from the seed's state, the same way: it drops
# the demo's own database (a name starting with handoff_demo; any other
# name is refused), starts its embedded broker on an empty log, and resets
# the files. With an external Kafka (HANDOFF_KAFKA_BROKERS), each run gets
# topics of its own unless HANDOFF_TOPIC names them, so that a run's
# detector never judges the fix an earlier run made. A step that waits for
# the services gives up after HANDOFF_DEMO_WAIT seconds (default 180),
# naming what it waited for.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
DATA_DIR="${HANDOFF_DATA_DIR:-$ROOT/.data}"
DEMO_DIR="$DATA_DIR/demo"
BIN="${HANDOFF_BIN:-$ROOT/bin/handoff}"
mkdir -p "$DEMO_DIR"
say() { printf '\n== %s\n' "$*" >&2; }
# step N TEXT: the one line that says what step N of the story proved.
step() { local n=$1; shift; printf '\n[%s/7] %s\n' "$n" "$*" >&2; }

[ -x "$BIN" ] || go build -o "$BIN" ./cmd/handoff

if [ -n "${HANDOFF_CLICKHOUSE_ADDR:-}" ]; then
  say "ClickHouse: $HANDOFF_CLICKHOUSE_ADDR"
else
  say "ClickHouse (Debian clickhouse-server, logs under $DATA_DIR/clickhouse/logs)"
  bash deploy/services/clickhouse.sh install
  bash deploy/services/clickhouse.sh start
  export HANDOFF_CLICKHOUSE_ADDR="127.0.0.1:${HANDOFF_CLICKHOUSE_PORT:-19000}"
fi
# The demo's database is its own (HANDOFF_DEMO_DATABASE, default
# handoff_demo), never the HANDOFF_CLICKHOUSE_DATABASE a shell may export
# for real work: every run drops it.
export HANDOFF_CLICKHOUSE_DATABASE="${HANDOFF_DEMO_DATABASE:-handoff_demo}"
case "$HANDOFF_CLICKHOUSE_DATABASE" in
  handoff_demo*) ;;
  *)
    echo "demo: HANDOFF_DEMO_DATABASE=$HANDOFF_CLICKHOUSE_DATABASE: the demo drops and recreates its database on every run, so it must be named handoff_demo or handoff_demo_*" >&2
    exit 2
    ;;
esac
clickhouse-client --host "${HANDOFF_CLICKHOUSE_ADDR%:*}" --port "${HANDOFF_CLICKHOUSE_ADDR##*:}" \
  -q "DROP DATABASE IF EXISTS $HANDOFF_CLICKHOUSE_DATABASE"
say "ClickHouse database $HANDOFF_CLICKHOUSE_DATABASE: dropped, so the story starts from the seed's state (handoff ingest creates it again)"

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

# How long a step may wait for the services before the demo gives up with
# what it waited for: each wait ends as soon as its condition holds, so the
# bound costs nothing when the machine is quick, and a busy 2-core machine
# needs more than a minute at times.
WAIT=${HANDOFF_DEMO_WAIT:-180}

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

embedded=
if [ -z "${HANDOFF_KAFKA_BROKERS:-}" ]; then
  embedded=1
  port="${HANDOFF_BROKER_PORT:-19192}"
  say "Kafka: embedded Kafka-protocol broker on 127.0.0.1:$port, on an empty log (log $DEMO_DIR/broker.log)"
  rm -rf "$DEMO_DIR/broker"
  "$BIN" broker --port "$port" --data-dir "$DEMO_DIR/broker" >"$DEMO_DIR/broker.env" 2>"$DEMO_DIR/broker.log" &
  pids+=($!)
  export HANDOFF_KAFKA_BROKERS="127.0.0.1:$port"
  wait_for "the embedded broker on port $port" 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
else
  say "Kafka: $HANDOFF_KAFKA_BROKERS"
fi
# The demo's own topic and group, so it never mixes with other data.
run_id=$(date +%s)
if [ -z "${HANDOFF_TOPIC:-}" ] && [ -z "$embedded" ]; then
  # An external Kafka keeps what earlier runs sent: this run's topics are its own.
  export HANDOFF_TOPIC=handoff.demo.$run_id.events HANDOFF_DLQ_TOPIC=handoff.demo.$run_id.events.dlq
  export HANDOFF_FINDINGS_TOPIC=handoff.demo.$run_id.findings HANDOFF_DIAGNOSES_TOPIC=handoff.demo.$run_id.diagnoses
  say "Kafka topics of this run: $HANDOFF_TOPIC, $HANDOFF_FINDINGS_TOPIC, ..."
fi
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
FILES="$DEMO_DIR/files"
INBOX="$FILES/inbox/finance"
bash deploy/demo/files.sh "$FILES"
say "files: the producer's outbox $FILES/outbox and the receiver's inbox $INBOX (deploy/demo/files.sh)"
ls -l "$INBOX" >&2
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
wait_for "this run's $want events in ClickHouse ($HANDOFF_CLICKHOUSE_DATABASE.events)" "$WAIT" count_stored
step 1 "events: the seed's $want events went through Kafka into ClickHouse ($HANDOFF_CLICKHOUSE_DATABASE.events)"

say "diagnose, read back from ClickHouse, as of 2026-10-03T00:00:00Z"
set +e
"$BIN" diagnose --clickhouse-addr "$HANDOFF_CLICKHOUSE_ADDR" --pipeline account-balance-snapshot.daily \
  --contract deploy/contracts --as-of 2026-10-03T00:00:00Z
code=$?
set -e
# Exit 1 means "some batch is not delivered": the seed case's point, not a demo failure.
[ $code -le 1 ] || exit $code
step 2 "diagnose: 20260929 delivered; 20260930 produced, final and at the receiver, but its flag never arrived: not_identified, first missing signal_delivered"

# Streaming detection of the seed pipeline (its contract only: the other
# example contracts would expect batches the demo never sends). The
# detector's clock starts at the same moment
# (--now: for demos and tests only), so the seed's deadlines of 2026 have
# passed. Each run has a consumer group of its own: this run's detector
# reads the whole topic and the stored history and judges every batch
# itself. A finding published by an earlier run is restored from
# ClickHouse, not published twice; the log says which.
detect_log="$DEMO_DIR/detect.log"
DEMO_T0=2026-10-03T00:00:00Z
t0_s=$(date +%s)
# demo_now: the demo's clock, the detector's: 2026-10-03T00:00:00Z when it
# started, moving on with the wall clock since. Everything the story does
# after it (the restore, the consumer's events) happens at this time.
demo_now() { date -u -d "@$(( $(date -d "$DEMO_T0" +%s) + $(date +%s) - t0_s ))" +%Y-%m-%dT%H:%M:%SZ; }
say "detect: streaming detection as of 2026-10-03T00:00:00Z, calendar from 2026-09-29 (log $detect_log)"
"$BIN" detect --contract deploy/contracts/account-balance-snapshot.daily.yaml --expect-from 2026-09-29 --now 2026-10-03T00:00:00Z \
  --group "handoff-demo-detect-$start_ms" --metrics-addr "" --tick 200ms --log-level debug >"$detect_log" 2>&1 &
pids+=($!)
wait_for "this run's detector to judge every event in the topic" "$WAIT" grep -q "detect: caught up" "$detect_log"

# What the detector decided, from its log (findings are logged one by one
# at debug level only): the findings it published (to
# $HANDOFF_FINDINGS_TOPIC) and the ones an earlier run had published that
# it restored from ClickHouse instead of publishing them twice.
P=account-balance-snapshot.daily
decided=$({ grep -E 'msg="detect: (finding|open finding restored)' "$detect_log" || true; } | { grep -oE "batch=$P/[^ ]+ kind=[^ ]+ name=[^ ]*" || true; } | sort -u)
n_decided=$(grep -c . <<<"$decided" || true)
if [ "$n_decided" -eq 0 ]; then
  # The seed case always has findings; a detector that caught up without
  # one says why in its log, which is shown rather than a silent exit.
  echo "demo: this run's detector caught up without logging a finding of $P, published or restored; the end of its log ($detect_log):" >&2
  tail -n 40 "$detect_log" >&2
  exit 1
fi
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
wait_for "the open overdue signal_delivered finding of 2026-09-30 (not_identified) in $HANDOFF_CLICKHOUSE_DATABASE.findings_v2" "$WAIT" seed_stored
wait_for "the $n_decided findings of this run's detector in $HANDOFF_CLICKHOUSE_DATABASE.findings_v2" "$WAIT" all_stored
if [ -n "$(findings_of --to 2026-09-29 --state all --format jsonl)" ]; then
  echo "demo: the delivered batch 2026-09-29 has a finding in $HANDOFF_CLICKHOUSE_DATABASE.findings_v2; detector log $detect_log" >&2
  findings_of --to 2026-09-29 --state all >&2
  exit 1
fi
say "findings: stored in ClickHouse ($HANDOFF_CLICKHOUSE_DATABASE.findings_v2), read back with handoff findings --pipeline $P --from 2026-09-29"
findings_of >&2
step 3 "detect: 20260930 overdue at signal_delivered (not_identified); 2026-10-01 and 2026-10-02 expected and never sent an event: missing"

# The fix: prove the artifact safe first, then declare completion. The
# names of the files derive from the batch's identity under the contract.
B="$P/2026-09-30/20260930"
remedy_flags=(--batch "$B" --dir "$INBOX" --contract deploy/contracts --clickhouse-addr "$HANDOFF_CLICKHOUSE_ADDR" --clickhouse-database "$HANDOFF_CLICKHOUSE_DATABASE")
say "restore-signal (dry run): every precondition against the real files at the receiver"
set +e
"$BIN" restore-signal "${remedy_flags[@]}" --as-of "$(demo_now)" --settle 500ms
code=$?
set -e
[ $code -eq 0 ] || { echo "demo: the dry run did not prove every precondition (exit $code)" >&2; exit 1; }
step 4 "prove: the data file at the receiver is final, readable, named for 2026-09-30/20260930, 120345 rows and the sha256 the producer recorded; the previous batch is delivered; no signal is there yet"

# A consumer stand-in: like the real consumer job, it waits for the flag
# at the receiver, identifies the batch by business_date + batch_id, counts
# the rows it loads and reports. Its event ids are fixed, so a second run
# of the demo records nothing twice.
consumer() {
  local flag="$INBOX/account_balance_snapshot_20260930.flag" csv="$INBOX/account_balance_snapshot_20260930.csv" n=0 rows
  until [ -e "$flag" ]; do
    n=$((n + 1))
    [ $n -le $((WAIT * 10)) ] || { echo "demo: consumer stand-in: no flag after ${WAIT}s" >&2; return 1; }
    sleep 0.1
  done
  rows=$(($(wc -l <"$csv") - 1))
  local common=(--pipeline "$P" --business-date 2026-09-30 --batch-id 20260930 --system consumer --component consume-runner-1 --quiet)
  "$BIN" emit "${common[@]}" --type batch.identified --event-id abs-20260930-consumer-identified --time "$(demo_now)" --attr "flag=${flag##*/}" &&
    "$BIN" emit "${common[@]}" --type consume.started --event-id abs-20260930-consumer-started --time "$(demo_now)" &&
    "$BIN" emit "${common[@]}" --type consume.succeeded --event-id abs-20260930-consumer-succeeded --time "$(demo_now)" --rows "$rows"
}
consumer &
consumer_pid=$!
pids+=($consumer_pid)

say "restore-signal --apply: write the flag atomically, record signal.restored"
set +e
"$BIN" restore-signal "${remedy_flags[@]}" --as-of "$(demo_now)" --settle 500ms --apply \
  --reason "demo: the exchange never delivered the flag of 20260930" --kafka-brokers "$HANDOFF_KAFKA_BROKERS" --topic "$HANDOFF_TOPIC"
code=$?
set -e
[ $code -eq 0 ] || { echo "demo: restore-signal --apply failed (exit $code)" >&2; exit 1; }
step 5 "restore: account_balance_snapshot_20260930.flag is at the receiver, derived from the batch's identity, and signal.restored is recorded"

wait "$consumer_pid" || { echo "demo: the consumer stand-in failed" >&2; exit 1; }
step 6 "consume: the consumer saw the flag, identified 2026-09-30/20260930 and consumed $(($(wc -l <"$INBOX/account_balance_snapshot_20260930.csv") - 1)) rows"

say "verify: end to end, waiting for the consumer's events to reach ClickHouse"
set +e
"$BIN" verify "${remedy_flags[@]}" --wait "${WAIT}s" --poll 500ms
code=$?
set -e
[ $code -eq 0 ] || { echo "demo: verify failed (exit $code)" >&2; exit 1; }

# The detector folds the restore and the consumption like any other event:
# the overdue finding of 2026-09-30 resolves, with how late the signal was.
seed_resolved() {
  findings_of --from 2026-09-30 --to 2026-09-30 --state resolved --kind overdue --format jsonl | grep -q '"name":"signal_delivered"'
}
wait_for "the detector to resolve the overdue finding of 2026-09-30 in $HANDOFF_CLICKHOUSE_DATABASE.findings_v2" "$WAIT" seed_resolved
say "findings of 2026-09-30 after the fix (handoff findings --state all)"
findings_of --from 2026-09-30 --to 2026-09-30 --state all >&2
step 7 "verify: artifact readable, signal identity and continuity, consumed exactly once, rows equal the verified file, no other batch touched; the overdue finding is resolved"

say "done: 20260929 delivered; 20260930 stopped at signal_delivered, its flag restored once the artifact was proven, consumed and verified; 2026-10-01 and 2026-10-02 never sent an event: missing. See README for the story."
