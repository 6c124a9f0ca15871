#!/usr/bin/env bash
# Benchmark sustained ingest, Kafka -> ClickHouse, on the local services:
# `handoff ingest` against ClickHouse's own Kafka table engine with a
# materialized view, on the same topic, into the same table shape, in the
# same run. Prints events/s of both, the ratio, handoff's peak RSS, the
# CPU seconds per 1M events of handoff, ClickHouse and Kafka in each leg,
# and one RESULT line per figure.
#
#   deploy/bench/ingest.sh                  # 1,000,000 events
#   EVENTS=200000 deploy/bench/ingest.sh
#   KEEP=1 deploy/bench/ingest.sh           # keep the topic and databases
#
# Steps: start the services when they are not running (deploy/services/up.sh;
# they are left running), build bin/handoff and bin/bench-load, generate a
# deterministic event file (deploy/bench/gen, no bad lines) under
# .data/bench/ if it is not there yet, load EVENTS distinct valid events into
# a new topic handoff.bench.<id> (PARTITIONS partitions) BEFORE measuring,
# then measure one after the other:
#   1. handoff: `bin/handoff ingest` into a new database handoff_bench_<id>,
#      timed from the process start until `SELECT count()` of its events
#      table reaches EVENTS; then SIGTERM.
#   2. engine: in a new database handoff_bench_<id>_engine, the events table,
#      a Kafka engine table on the same topic (new consumer group) and a
#      materialized view into the events table, timed from the CREATE until
#      the count reaches EVENTS; then the view and the Kafka table are
#      dropped.
# Between the legs it waits for leg 1's background merges to finish. Both
# legs are polled over ClickHouse's HTTP port every POLL seconds (curl: a
# clickhouse-client per poll costs ~50 ms of CPU, a lot on 2 cores).
# At the end the topic, the DLQ topic, both groups and both databases are
# removed unless KEEP=1; the logs stay in .data/bench/ingest-<id>/.
#
# Environment: EVENTS (1000000), SEED (1), PARTITIONS (4), DEADLINE (600 s
# per leg), POLL (0.2 s), KEEP (0), ENGINE_CONSUMERS (PARTITIONS:
# kafka_num_consumers, one consumer per partition),
# ENGINE_BLOCK_SIZE (empty: the server's default, kafka_max_block_size),
# LEGS ("handoff engine": which legs, in order), HANDOFF_BIN (bin/handoff,
# built here: another binary to measure, for A/B runs), PROFILE (0; 1: record
# each leg with a system-wide `perf record -g` into .data/bench/ingest-<id>/
# and print the CPU samples by command and by shared object). The handoff leg
# also writes a Go CPU profile of the ingester (HANDOFF_CPUPROFILE, by default
# .data/bench/ingest-<id>/handoff.cpu.pprof; read it with go tool pprof -top)
# and logs its INSERTs in ClickHouse's system.query_log
# (HANDOFF_CLICKHOUSE_LOG_QUERIES=1) to print what they cost the server, apart
# from other clients of a shared server. HANDOFF_* variables
# (HANDOFF_BATCH_SIZE, HANDOFF_DECODE_WORKERS, ...) reach `handoff ingest`,
# except the topic, group, database and metrics address, which the script
# sets.
#
# The engine leg's table differs from handoff.events where ClickHouse 18.16
# cannot do better; see deploy/bench/README.md.
set -euo pipefail

cd "$(dirname "$0")/../.."
EVENTS=${EVENTS:-1000000}
SEED=${SEED:-1}
PARTITIONS=${PARTITIONS:-4}
DEADLINE=${DEADLINE:-600}
POLL=${POLL:-0.2}
KEEP=${KEEP:-0}
ENGINE_CONSUMERS=${ENGINE_CONSUMERS:-$PARTITIONS}
ENGINE_BLOCK_SIZE=${ENGINE_BLOCK_SIZE:-}
LEGS=${LEGS:-handoff engine}

say() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

if [ -n "${HANDOFF_KAFKA_BROKERS:-}" ] && [ -n "${HANDOFF_CLICKHOUSE_ADDR:-}" ]; then
	# Services of the environment (e.g. a shared checkout's
	# .data/services.env, sourced): used as they are, nothing is installed
	# or started here.
	say "using the services of the environment: Kafka $HANDOFF_KAFKA_BROKERS, ClickHouse $HANDOFF_CLICKHOUSE_ADDR"
else
	bash deploy/services/up.sh >&2
	# shellcheck disable=SC1091 # written by up.sh
	. .data/services.env
fi
DATA=${HANDOFF_DATA_DIR:-.data}
CH_HTTP=${HANDOFF_CLICKHOUSE_HTTP_ADDR:-127.0.0.1:18123}
CH_HOST=${HANDOFF_CLICKHOUSE_ADDR%:*}
CH_PORT=${HANDOFF_CLICKHOUSE_ADDR##*:}

mkdir -p .data/bench bin
# HANDOFF_BIN: a handoff binary built elsewhere (A/B runs of two builds
# in alternation); by default bin/handoff, built from this tree.
HANDOFF_BIN=${HANDOFF_BIN:-bin/handoff}
[ "$HANDOFF_BIN" != bin/handoff ] || go build -o bin/handoff ./cmd/handoff
go build -o bin/bench-load ./deploy/bench/load

# About 7% of the generator's lines repeat an event_id (redeliveries):
# generate 10% more lines than events, the loader keeps the first EVENTS
# distinct ones.
LINES=$((EVENTS + EVENTS / 10 + 1000))
FILE=.data/bench/events-$LINES-seed$SEED-bad0.jsonl
if [ ! -s "$FILE" ]; then
	go run ./deploy/bench/gen -events "$LINES" -seed "$SEED" -bad 0 -out "$FILE.tmp"
	mv "$FILE.tmp" "$FILE"
fi

ID=$(date -u +%Y%m%d%H%M%S)_$$
TOPIC=handoff.bench.$ID
DLQ=$TOPIC.dlq
GROUP_H=handoff-bench-$ID
GROUP_E=handoff-bench-engine-$ID
DB_H=handoff_bench_$ID
DB_E=handoff_bench_${ID}_engine
RUN=.data/bench/ingest-$ID
mkdir -p "$RUN"

# --- helpers ---------------------------------------------------------------

ch() { # ch SQL: run on the native port
	clickhouse-client --host "$CH_HOST" --port "$CH_PORT" --multiquery -q "$1"
}
if command -v curl >/dev/null 2>&1; then
	count_rows() { # count_rows DB: rows in DB.events, 0 while it does not exist
		curl -sf --max-time 5 "http://$CH_HTTP/" --data-binary "SELECT count() FROM $1.events" 2>/dev/null || echo 0
	}
else
	count_rows() { clickhouse-client --host "$CH_HOST" --port "$CH_PORT" -q "SELECT count() FROM $1.events" 2>/dev/null || echo 0; }
fi
query() { # query SQL: one value, 0 on error
	if command -v curl >/dev/null 2>&1; then
		curl -sf --max-time 30 "http://$CH_HTTP/" --data-binary "$1" 2>/dev/null || echo 0
	else
		clickhouse-client --host "$CH_HOST" --port "$CH_PORT" -q "$1" 2>/dev/null || echo 0
	fi
}
now() { echo "$EPOCHREALTIME"; }
TICKS=$(getconf CLK_TCK)
cpu_s() { # cpu_s PID: user+system CPU seconds of a live process, 0 if gone
	if [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ]; then
		sed 's/.*) //' "/proc/$1/stat" | awk -v t="$TICKS" '{ printf "%.2f", ($12 + $13) / t }'
	else
		echo 0
	fi
}
cpu_split() { # cpu_split PID: "user U, system S" CPU seconds of a live process
	if [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ]; then
		sed 's/.*) //' "/proc/$1/stat" | awk -v t="$TICKS" '{ printf "user %.2f, system %.2f", $12 / t, $13 / t }'
	fi
}
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
CH_PID=$(cat "$DATA/clickhouse/clickhouse-server.pid" 2>/dev/null || true)
K_PID=$(cat "$DATA/kafka/kafka.pid" 2>/dev/null || true)
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

HANDOFF_PID=
cleanup() {
	local rc=$?
	profile_stop
	if [ -n "$HANDOFF_PID" ] && kill -0 "$HANDOFF_PID" 2>/dev/null; then
		kill -TERM "$HANDOFF_PID" 2>/dev/null || true
		wait "$HANDOFF_PID" 2>/dev/null || true
	fi
	if [ "$KEEP" = 1 ]; then
		say "kept (KEEP=1): topic $TOPIC, databases $DB_H and $DB_E, groups $GROUP_H, $GROUP_E"
	else
		ch "DROP TABLE IF EXISTS $DB_E.events_mv; DROP TABLE IF EXISTS $DB_E.events_queue;
			DROP DATABASE IF EXISTS $DB_E; DROP DATABASE IF EXISTS $DB_H" >/dev/null 2>&1 ||
			say "warning: could not drop databases $DB_H, $DB_E"
		bin/bench-load -delete-groups "$GROUP_H,$GROUP_E" -delete-topics "$TOPIC,$DLQ" ||
			say "warning: could not delete topics $TOPIC, $DLQ or groups $GROUP_H, $GROUP_E"
	fi
	say "logs: $RUN"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_rows DB START LEG [PID]: poll until DB.events holds EVENTS rows; sets
# FIRST (time of the first non-zero count) and DONE, and writes the counts
# seen (seconds since START, rows) to $RUN/<leg>.counts. Fails on the
# deadline, or when PID (if given) exits.
wait_rows() {
	local db=$1 start=$2 leg=$3 pid=${4:-} c=0 leg_file
	leg_file=$(echo "$leg" | tr ' ' '_')
	FIRST=
	while :; do
		c=$(count_rows "$db")
		printf '%s\t%s\n' "$(secs "$start" "$(now)")" "$c" >>"$RUN/$leg_file.counts"
		if [ -z "$FIRST" ] && [ "${c:-0}" -gt 0 ]; then FIRST=$(now); fi
		if [ "${c:-0}" -ge "$EVENTS" ]; then
			# A consumer can deliver some messages twice (the engine does
			# after a rebalance between its consumers): done only when
			# EVENTS distinct event_ids are stored.
			local t u
			t=$(now)
			u=$(query "SELECT uniqExact(event_id) FROM $db.events")
			if [ "${u:-0}" -ge "$EVENTS" ]; then
				DONE=$t
				DUPS=$((c - EVENTS))
				[ "$DUPS" -eq 0 ] || say "$leg: $DUPS rows were stored twice (at-least-once delivery; ReplacingMergeTree merges them later)"
				return 0
			fi
		fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$RUN/handoff.log" >&2 || true
			die "$leg: the process exited with $c of $EVENTS rows stored; log: $RUN/handoff.log"
		fi
		if awk -v n="$(now)" -v s="$start" -v d="$DEADLINE" 'BEGIN { exit !(n - s > d) }'; then
			die "$leg: timed out after ${DEADLINE}s with $c of $EVENTS rows in $db.events (raise DEADLINE, or see $RUN)"
		fi
		sleep "$POLL"
	done
}

# profile_start LEG / profile_stop: system-wide perf record of a leg (PROFILE=1).
PERF_PID=''
profile_start() {
	[ "${PROFILE:-0}" = 1 ] || return 0
	command -v perf >/dev/null 2>&1 || { say "PROFILE=1 but perf is not installed (apt-get install linux-perf)"; return 0; }
	perf record -q -a -g -F 499 -o "$RUN/$1.perf.data" >/dev/null 2>&1 &
	PERF_PID=$!
}
profile_stop() {
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID" 2>/dev/null || true
	wait "$PERF_PID" 2>/dev/null || true
	PERF_PID=''
}
profile_report() { # profile_report LEG
	local f=$RUN/$1.perf.data
	[ -s "$f" ] || return 0
	echo "  profile $f: CPU samples by command, then by shared object:"
	perf report -i "$f" --stdio --no-children -g none --sort comm 2>/dev/null | grep -E '^ +[0-9]' | head -n 8 | sed 's/^/   /' || true
	perf report -i "$f" --stdio --no-children -g none --sort comm,dso 2>/dev/null | grep -E '^ +[0-9]' | head -n 12 | sed 's/^/   /' || true
	if [ "$1" = handoff ]; then
		# The handoff process alone, by function: where its CPU per event
		# goes (the command is the binary's name, cut to 15 bytes).
		local comm
		comm=$(basename "$HANDOFF_BIN" | cut -c1-15)
		echo "  profile of $comm by function (share of its samples):"
		perf report -i "$f" --stdio --no-children -g none --comms "$comm" --sort sym 2>/dev/null | grep -E '^ +[0-9]' | head -n 30 | sed 's/^/   /' || true
	fi
}

rate() { awk -v n="$EVENTS" -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", n / (b - a) }'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# --- load ------------------------------------------------------------------

say "$(nproc) CPUs, load average $(loadavg); file $FILE; topic $TOPIC ($PARTITIONS partitions)"
bin/bench-load -in "$FILE" -n "$EVENTS" -topic "$TOPIC" -partitions "$PARTITIONS" -start-groups "$GROUP_E" 2>&1 |
	tee "$RUN/load.log" >&2
[ "${PIPESTATUS[0]}" -eq 0 ] || die "loading the topic failed"
sleep 2 # let the broker flush and the machine settle

H_RATE='' E_RATE='' H_RSS=''
# CPU seconds of each process during each leg (user+system).
H_CPU='' H_CH_CPU='' H_K_CPU='' E_CH_CPU='' E_K_CPU=''
# --- leg 1: handoff ingest ---------------------------------------------------

leg_handoff() {
	say "handoff ingest: database $DB_H, group $GROUP_H; load average $(loadavg)"
	local ch0 k0 b0 t0 start
	ch0=$(cpu_s "$CH_PID") k0=$(cpu_s "$K_PID")
	read -r b0 t0 < <(busy_ticks)
	start=$(now)
	HANDOFF_TOPIC=$TOPIC HANDOFF_DLQ_TOPIC=$DLQ HANDOFF_GROUP=$GROUP_H \
		HANDOFF_CLICKHOUSE_DATABASE=$DB_H HANDOFF_METRICS_ADDR=127.0.0.1:0 \
		HANDOFF_LOG_LEVEL=${HANDOFF_LOG_LEVEL:-debug} HANDOFF_CLICKHOUSE_LOG_QUERIES=1 \
		HANDOFF_CPUPROFILE=${HANDOFF_CPUPROFILE:-$RUN/handoff.cpu.pprof} \
		"$HANDOFF_BIN" ingest >"$RUN/handoff.log" 2>&1 &
	HANDOFF_PID=$!
	profile_start handoff
	wait_rows "$DB_H" "$start" "handoff ingest" "$HANDOFF_PID"
	profile_stop
	local hcpu rss ch1 H_CPU_SPLIT k1 b1 t1 murl
	hcpu=$(cpu_s "$HANDOFF_PID")
	H_CPU_SPLIT=$(cpu_split "$HANDOFF_PID")
	rss=$(awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$HANDOFF_PID/status")
	ch1=$(cpu_s "$CH_PID") k1=$(cpu_s "$K_PID")
	read -r b1 t1 < <(busy_ticks)
	murl=$(grep -o 'url=http://[^ ]*/metrics' "$RUN/handoff.log" | head -n1 | cut -d= -f2)
	if [ -n "$murl" ]; then
		curl -sf --max-time 5 "$murl" >"$RUN/metrics.txt" 2>/dev/null || true
	fi
	kill -TERM "$HANDOFF_PID"
	local rc=0
	wait "$HANDOFF_PID" || rc=$?
	HANDOFF_PID=
	[ "$rc" -eq 0 ] || say "warning: handoff ingest exited with $rc after SIGTERM; log $RUN/handoff.log"
	H_RATE=$(rate "$start" "$DONE")
	H_RSS=$rss
	H_CPU=$hcpu
	H_CH_CPU=$(awk -v a="$ch0" -v b="$ch1" 'BEGIN { printf "%.2f", b - a }')
	H_K_CPU=$(awk -v a="$k0" -v b="$k1" 'BEGIN { printf "%.2f", b - a }')
	printf 'handoff ingest: %d events in %ss: %d events/s (%d events/s from the first stored row, %ss after start); peak RSS %d MiB\n' \
		"$EVENTS" "$(secs "$start" "$DONE")" "$H_RATE" "$(rate "$FIRST" "$DONE")" "$(secs "$start" "$FIRST")" "$rss"
	printf '  CPU seconds: handoff %s (%s), clickhouse-server %s, kafka %s; machine busy %s%% of %d CPUs\n' \
		"$hcpu" "$H_CPU_SPLIT" "$(awk -v a="$ch0" -v b="$ch1" 'BEGIN { printf "%.2f", b - a }')" \
		"$(awk -v a="$k0" -v b="$k1" 'BEGIN { printf "%.2f", b - a }')" \
		"$(awk -v a="$b0" -v b="$b1" -v c="$t0" -v d="$t1" 'BEGIN { printf "%.0f", 100 * (b - a) / (d - c) }')" "$(nproc)"
	if [ -s "$RUN/metrics.txt" ]; then
		awk '
			/^handoff_ingest_insert_seconds_sum/ { s = $2 }
			/^handoff_ingest_insert_seconds_count/ { n = $2 }
			/^handoff_ingest_flushes_total/ { f += $2 }
			/^handoff_ingest_rejected_total/ { r += $2 }
			END { if (n > 0) printf "  %d flushes, %d INSERTs taking %.2fs in all (%.0f ms each), %d rejected\n", f, n, s, 1000 * s / n, r }
		' "$RUN/metrics.txt"
	fi
	insert_cpu
	profile_report handoff
}

# insert_cpu: what handoff's INSERTs cost ClickHouse, from system.query_log
# (the leg runs the ingester with HANDOFF_CLICKHOUSE_LOG_QUERIES=1): the
# server's CPU seconds in those queries, user and system, the parts they
# wrote and the rows written into parts (events and, through the view,
# events_by_date: about twice the events). On a shared server the
# process's CPU includes other clients' queries; this does not (it leaves
# out background merges and the benchmark's own polls too). The system
# share is mostly the kernel handing the server fresh pages for each
# INSERT's blocks (SoftPageFaults), which costs more on a busy machine.
H_INS_CPU='' H_INS_SYS='' H_PARTS='' H_INSERTS='' H_PART_ROWS=''
insert_cpu() {
	query "SYSTEM FLUSH LOGS" >/dev/null
	local pe="arrayFilter((v, n) -> n = '%s', ProfileEvents.Values, ProfileEvents.Names)" line
	# shellcheck disable=SC2059 # pe is a format
	line=$(query "SELECT count(), sum(arraySum($(printf "$pe" UserTimeMicroseconds))) / 1e6,
		sum(arraySum($(printf "$pe" SystemTimeMicroseconds))) / 1e6, sum(arraySum($(printf "$pe" MergeTreeDataWriterBlocks))), sum(written_rows),
		sum(arraySum($(printf "$pe" MergeTreeDataWriterRows))), sum(arraySum($(printf "$pe" SoftPageFaults))), max(memory_usage)
		FROM system.query_log WHERE type = 2 AND query LIKE 'INSERT INTO $DB_H.events (%' FORMAT TSV")
	local n user sys parts rows prows faults mem
	read -r n user sys parts rows prows faults mem <<<"$line"
	if [ "${n:-0}" -gt 0 ] 2>/dev/null; then
		H_INS_CPU=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
		H_INS_SYS=$sys
		H_PARTS=$parts
		H_INSERTS=$n
		H_PART_ROWS=$prows
		printf '  ClickHouse in handoff'"'"'s %d INSERTs (system.query_log): %s CPU s (user %.2f, system %.2f), %d parts written for %d rows (%d rows into parts, events_by_date included; %d soft page faults; peak %d MiB per INSERT)\n' \
			"$n" "$H_INS_CPU" "$user" "$sys" "$parts" "$rows" "$prows" "$faults" "$((mem / 1048576))"
	fi
	if [ -s "$RUN/handoff.cpu.pprof" ]; then
		echo "  CPU profile of handoff: go tool pprof -top $HANDOFF_BIN $RUN/handoff.cpu.pprof"
	fi
}

# --- leg 2: ClickHouse Kafka engine -------------------------------------------

# handoff.events (store/schema/schema.sql) as 18.16 lets a materialized view
# fill it: time, event_date and ingested are ALIAS instead of MATERIALIZED
# (18.16 wants MATERIALIZED columns in the view's output, and a view cannot
# name an output column `time` while reading the input column `time`).
engine_sql() {
	local block=
	[ -n "$ENGINE_BLOCK_SIZE" ] && block=", kafka_max_block_size = $ENGINE_BLOCK_SIZE"
	cat <<EOF
CREATE DATABASE $DB_E;
CREATE TABLE $DB_E.events (
    pipeline        String,
    business_date   Date,
    batch_id        String,
    event_id        String,
    spec            String,
    type            String,
    time_ms         Int64,
    time            DateTime ALIAS toDateTime(intDiv(time_ms, 1000)),
    event_date      Date ALIAS toDate(toDateTime(intDiv(time_ms, 1000))),
    system          String,
    component       String,
    object          String,
    rows            Int64,
    has_rows        UInt8,
    bytes           Int64,
    has_bytes       UInt8,
    checksum        String,
    attempt         Int64,
    has_attempt     UInt8,
    error           String,
    attrs           Nested(key String, value String),
    ingested_ms     Int64,
    ingested        DateTime ALIAS toDateTime(intDiv(ingested_ms, 1000)),
    kafka_topic     String,
    kafka_partition Int32,
    kafka_offset    Int64
) ENGINE = ReplacingMergeTree(ingested_ms)
PARTITION BY toYYYYMM(business_date)
ORDER BY (pipeline, business_date, batch_id, event_id);
EOF
	# handoff's schema keeps a copy of the batch events sorted by date
	# (events_by_date): the engine's rows pay for it too, so that both legs
	# store into the same tables. 18.16 runs no view on the rows another
	# view writes into events, so a second view on the Kafka table fills it
	# (below), as the first fills events.
	sed -n '/^CREATE TABLE IF NOT EXISTS {db}.events_by_date (/,/^;/p' store/schema/schema.sql | sed "s/{db}/$DB_E/g"
	# The wire fields, as JSONEachRow reads them (absent: the type's
	# default; the nested attrs object is skipped: the engine always sets
	# input_format_skip_unknown_fields).
	cat <<EOF
CREATE TABLE $DB_E.events_queue (
    spec String, event_id String, type String, time String, pipeline String,
    business_date Date, batch_id String, system String, component String,
    object String, rows Int64, bytes Int64, checksum String, attempt Int64, error String
) ENGINE = Kafka SETTINGS kafka_broker_list = '$HANDOFF_KAFKA_BROKERS', kafka_topic_list = '$TOPIC',
    kafka_group_name = '$GROUP_E', kafka_format = 'JSONEachRow', kafka_num_consumers = $ENGINE_CONSUMERS$block;
CREATE MATERIALIZED VIEW $DB_E.events_mv TO $DB_E.events AS SELECT
    pipeline, business_date, batch_id, event_id, spec, type,
    toInt64(toUnixTimestamp(parseDateTimeBestEffort(time))) * 1000
        + toInt64OrZero(substring(concat(extract(time, '\\\\.([0-9]+)'), '000'), 1, 3)) AS time_ms,
    system, component, object,
    rows, toUInt8(rows != 0) AS has_rows, bytes, toUInt8(bytes != 0) AS has_bytes,
    checksum, attempt, toUInt8(attempt != 0) AS has_attempt, error,
    CAST([] AS Array(String)) AS \`attrs.key\`, CAST([] AS Array(String)) AS \`attrs.value\`,
    toInt64(toUnixTimestamp(now())) * 1000 AS ingested_ms,
    '$TOPIC' AS kafka_topic, toInt32(0) AS kafka_partition, toInt64(0) AS kafka_offset
FROM $DB_E.events_queue;
CREATE MATERIALIZED VIEW $DB_E.events_by_date_mv TO $DB_E.events_by_date AS SELECT
    business_date, pipeline, batch_id, event_id, type,
    toInt64(toUnixTimestamp(parseDateTimeBestEffort(time))) * 1000
        + toInt64OrZero(substring(concat(extract(time, '\\\\.([0-9]+)'), '000'), 1, 3)) AS time_ms,
    system, component, object,
    rows, toUInt8(rows != 0) AS has_rows, bytes, toUInt8(bytes != 0) AS has_bytes,
    checksum, attempt, toUInt8(attempt != 0) AS has_attempt, error,
    toInt64(toUnixTimestamp(now())) * 1000 AS ingested_ms
FROM $DB_E.events_queue WHERE batch_id != '';
EOF
}

leg_engine() {
	say "kafka engine: database $DB_E, group $GROUP_E, kafka_num_consumers $ENGINE_CONSUMERS${ENGINE_BLOCK_SIZE:+, kafka_max_block_size $ENGINE_BLOCK_SIZE}; load average $(loadavg)"
	engine_sql >"$RUN/engine.sql"
	local ch0 k0 b0 t0 ch1 k1 b1 t1 start
	ch0=$(cpu_s "$CH_PID") k0=$(cpu_s "$K_PID")
	read -r b0 t0 < <(busy_ticks)
	start=$(now)
	profile_start engine
	ch "$(cat "$RUN/engine.sql")" || die "kafka engine: creating the tables failed (SQL in $RUN/engine.sql)"
	wait_rows "$DB_E" "$start" "kafka engine"
	profile_stop
	ch1=$(cpu_s "$CH_PID") k1=$(cpu_s "$K_PID")
	read -r b1 t1 < <(busy_ticks)
	ch "DROP TABLE $DB_E.events_mv; DROP TABLE $DB_E.events_by_date_mv; DROP TABLE $DB_E.events_queue" || say "warning: could not drop the views and Kafka table"
	say "kafka engine: events_by_date holds $(query "SELECT count() FROM $DB_E.events_by_date") rows (the batch events, copied by the second view)"
	E_RATE=$(rate "$start" "$DONE")
	E_CH_CPU=$(awk -v a="$ch0" -v b="$ch1" 'BEGIN { printf "%.2f", b - a }')
	E_K_CPU=$(awk -v a="$k0" -v b="$k1" 'BEGIN { printf "%.2f", b - a }')
	# No rate "from the first stored row": the engine stores in blocks of
	# up to max_insert_block_size rows, so its count jumps.
	printf 'kafka engine:   %d events in %ss: %d events/s (first rows stored %ss after CREATE)\n' \
		"$EVENTS" "$(secs "$start" "$DONE")" "$E_RATE" "$(secs "$start" "$FIRST")"
	printf '  CPU seconds: clickhouse-server %s, kafka %s; machine busy %s%% of %d CPUs\n' \
		"$(awk -v a="$ch0" -v b="$ch1" 'BEGIN { printf "%.2f", b - a }')" \
		"$(awk -v a="$k0" -v b="$k1" 'BEGIN { printf "%.2f", b - a }')" \
		"$(awk -v a="$b0" -v b="$b1" -v c="$t0" -v d="$t1" 'BEGIN { printf "%.0f", 100 * (b - a) / (d - c) }')" "$(nproc)"
	profile_report engine
}

# Wait (up to 2 min) for background merges of the databases so far, so they
# do not slow the next leg.
settle() {
	local _
	for _ in $(seq 600); do
		[ "$(curl -sf --max-time 5 "http://$CH_HTTP/" --data-binary \
			"SELECT count() FROM system.merges WHERE database IN ('$DB_H', '$DB_E')" 2>/dev/null || echo 0)" = 0 ] && break
		sleep 0.2
	done
	sleep 2
}

first=1
for leg in $LEGS; do
	[ "$first" = 1 ] || settle
	first=0
	case "$leg" in
		handoff) leg_handoff ;;
		engine) leg_engine ;;
		*) die "unknown leg $leg in LEGS (want handoff and/or engine)" ;;
	esac
done

# Same content? Every column both legs fill the same way (not attrs,
# ingested_ms, kafka_partition, kafka_offset).
if [ -n "$H_RATE" ] && [ -n "$E_RATE" ]; then
	# Over distinct rows: redelivered copies are identical in these columns.
	hash="count(), sum(h) FROM (SELECT DISTINCT cityHash64(pipeline, business_date, batch_id, event_id, spec, type, time_ms, system, component, object, rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error) AS h FROM"
	a=$(ch "SELECT $hash $DB_H.events)")
	b=$(ch "SELECT $hash $DB_E.events)")
	if [ "$a" = "$b" ]; then
		echo "content: both tables hold the same $EVENTS rows (all columns but attrs, ingested_ms and kafka_partition/offset)"
	else
		echo "content: WARNING: the tables differ: handoff $a, engine $b"
	fi
	ratio=$(awk -v a="$H_RATE" -v b="$E_RATE" 'BEGIN { printf "%.2f", a / b }')
	echo "ratio handoff/engine: $ratio (target: handoff >= 100000 events/s and >= engine)"
	printf '%s\t%s\t%d\t%s\t%s\t%s\t%s MiB\t%s\t%s\n' "$(date -u +%FT%TZ)" "$ID" "$EVENTS" "$H_RATE" "$E_RATE" "$ratio" "$H_RSS" \
		"consumers=$ENGINE_CONSUMERS${ENGINE_BLOCK_SIZE:+,block=$ENGINE_BLOCK_SIZE}" "$(loadavg)" >>.data/bench/ingest-results.tsv
fi

# CPU seconds per 1,000,000 events, and the machine-readable lines (one per
# figure; `make bench` collects them). The CPU of clickhouse-server and
# Kafka is the whole process's during the leg: on a shared machine it
# includes other clients' work, which `load` shows.
per_m() { awk -v c="$1" -v n="$EVENTS" 'BEGIN { printf "%.2f", c * 1000000 / n }'; }
LOAD1=$(cut -d' ' -f1 /proc/loadavg)
if [ -n "$H_RATE" ]; then
	printf 'CPU seconds per 1M events, handoff leg: handoff %s, clickhouse-server %s%s, kafka %s\n' \
		"$(per_m "$H_CPU")" "$(per_m "$H_CH_CPU")" "${H_INS_CPU:+ (in the INSERTs $(per_m "$H_INS_CPU"))}" "$(per_m "$H_K_CPU")"
fi
if [ -n "$E_RATE" ]; then
	printf 'CPU seconds per 1M events, engine leg: clickhouse-server %s, kafka %s\n' "$(per_m "$E_CH_CPU")" "$(per_m "$E_K_CPU")"
fi
if [ -n "$H_RATE" ] && [ -n "$E_RATE" ]; then
	echo "RESULT bench=ingest metric=events_per_s value=$H_RATE unit=events/s ref=$E_RATE ratio=$ratio rss_mib=$H_RSS load=$LOAD1"
	# Everything the handoff leg cost (handoff, ClickHouse, Kafka) against
	# everything the engine leg cost (ClickHouse, Kafka), per 1M events.
	h_all=$(awk -v a="$H_CPU" -v b="$H_CH_CPU" -v c="$H_K_CPU" 'BEGIN { print a + b + c }')
	e_all=$(awk -v a="$E_CH_CPU" -v b="$E_K_CPU" 'BEGIN { print a + b }')
	echo "RESULT bench=ingest metric=cpu_s_per_1m_events value=$(per_m "$h_all") unit=s ref=$(per_m "$e_all") ratio=$(awk -v a="$h_all" -v b="$e_all" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') load=$LOAD1"
elif [ -n "$H_RATE" ]; then
	echo "RESULT bench=ingest metric=events_per_s value=$H_RATE unit=events/s rss_mib=$H_RSS load=$LOAD1"
fi
if [ -n "$H_RATE" ]; then
	echo "RESULT bench=ingest metric=handoff_cpu_s_per_1m_events value=$(per_m "$H_CPU") unit=s load=$LOAD1"
	[ -z "$H_INS_CPU" ] || echo "RESULT bench=ingest metric=clickhouse_insert_cpu_s_per_1m_events value=$(per_m "$H_INS_CPU") unit=s load=$LOAD1"
	# Parts are most of what an INSERT costs the server (a part per month
	# and table it touches): fewer parts per row is the lever on its side.
	[ -z "$H_PARTS" ] || echo "RESULT bench=ingest metric=clickhouse_parts_per_1m_events value=$(per_m "$H_PARTS") unit=parts load=$LOAD1"
	if [ -n "$H_INSERTS" ]; then
		echo "RESULT bench=ingest metric=clickhouse_insert_sys_cpu_s_per_1m_events value=$(per_m "$H_INS_SYS") unit=s load=$LOAD1"
		echo "RESULT bench=ingest metric=clickhouse_inserts_per_1m_events value=$(per_m "$H_INSERTS") unit=inserts load=$LOAD1"
		# Rows written into parts per event: 2 while every batch event is
		# copied into events_by_date by its view.
		echo "RESULT bench=ingest metric=clickhouse_part_rows_per_event value=$(awk -v r="$H_PART_ROWS" -v n="$EVENTS" 'BEGIN { printf "%.2f", r / n }') unit=rows load=$LOAD1"
	fi
	echo "RESULT bench=ingest metric=clickhouse_cpu_s_per_1m_events value=$(per_m "$H_CH_CPU") unit=s${E_RATE:+ ref=$(per_m "$E_CH_CPU") ratio=$(awk -v a="$H_CH_CPU" -v b="$E_CH_CPU" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')} load=$LOAD1"
fi
