#!/usr/bin/env bash
# Benchmark `handoff backfill` over a year of history stored in ClickHouse:
# build handoff, generate a deterministic event file (deploy/bench/gen:
# PIPELINES daily pipelines with contracts, about 12 lines a batch, 0 bad
# lines) into .data/bench/ if it is not there yet, store it into a PRIVATE
# database of the shared ClickHouse (deploy/bench/chload; reused while it
# holds the file's rows), then run
#   1. handoff backfill --dry-run --format json > /dev/null   (read + fold + render;
#      the summary is on stderr)
#   2. handoff backfill --publish                              (the same + Kafka, acks=all, LZ4)
# under /usr/bin/time -v, RUNS times each, and print events/s and peak RSS.
# Before each run, the reference: clickhouse-client exporting the columns
# the replay reads (store/schema.EventReplayColumns) of the same rows in
# the order the fold needs them (ORDER BY pipeline, business_date,
# batch_id FORMAT Native > /dev/null), timed the same way: what reading
# the history costs the server alone. Each run prints
#   RESULT bench=backfill-<leg> metric=throughput value=<handoff events/s>
#          unit=events/s ref=<export rows/s> ratio=<handoff/export> rss_mib=<n> load=<1-min>
# and a RESULT line of CPU seconds (user + sys) of handoff, with the
# export's clickhouse-server CPU seconds as ref, and the run's CPU split:
# the cores handoff and clickhouse-server kept busy (CPU s / wall s), to
# see whether the server's read and handoff's fold overlap. REF=0 skips
# the export.
#
#   deploy/bench/backfill.sh                          # 4,400,000 lines: 1,000 pipelines x 365 days
#   EVENTS=1000000 PIPELINES=250 RUNS=1 deploy/bench/backfill.sh
#   LEGS=dry deploy/bench/backfill.sh                 # only the dry run
#   KEEP=1 deploy/bench/backfill.sh                   # keep the database (and reuse it next time)
#   HANDOFF_BIN=/tmp/handoff-a deploy/bench/backfill.sh  # time that build (A/B runs) instead of building bin/handoff
#
# Needs the services of `make services` (HANDOFF_CLICKHOUSE_ADDR and, for the
# publish leg, HANDOFF_KAFKA_BROKERS; read from .data/services.env when
# unset). The publish leg writes to a new topic handoff.bench.diagnoses.<id>,
# deleted at the end. Environment: EVENTS (4400000), PIPELINES (1000),
# SEED (1), RUNS (2), LEGS ("dry publish"), AS_OF (2026-10-03T00:00:00Z),
# FROM (2025-10-01), TO (2026-09-30), KEEP (0), REF (1), HANDOFF_BIN
# (bin/handoff, built from the tree).
set -euo pipefail

cd "$(dirname "$0")/../.."
EVENTS=${EVENTS:-4400000}
PIPELINES=${PIPELINES:-1000}
SEED=${SEED:-1}
RUNS=${RUNS:-2}
LEGS=${LEGS:-dry publish}
AS_OF=${AS_OF:-2026-10-03T00:00:00Z}
FROM=${FROM:-2025-10-01}
TO=${TO:-2026-09-30}
KEEP=${KEEP:-0}
REF=${REF:-1}
DIR=.data/bench
FILE=$DIR/backfill-$EVENTS-p$PIPELINES-seed$SEED.jsonl
CONTRACTS=$DIR/backfill-contracts-$EVENTS-p$PIPELINES-seed$SEED
DB=handoff_bench_backfill_${EVENTS}_p${PIPELINES}_s${SEED}

if [ -z "${HANDOFF_CLICKHOUSE_ADDR:-}" ] && [ -f "${HANDOFF_DATA_DIR:-.data}/services.env" ]; then
	set -a; . "${HANDOFF_DATA_DIR:-.data}/services.env"; set +a
fi
: "${HANDOFF_CLICKHOUSE_ADDR:?set HANDOFF_CLICKHOUSE_ADDR, or start the services: make services}"
HTTP=${HANDOFF_CLICKHOUSE_HTTP_ADDR:-127.0.0.1:18123}
ch() { curl -sS --fail "http://$HTTP/" --data-binary "$1"; }

if [ ! -x /usr/bin/time ]; then
	echo "installing GNU time (Debian package time)" >&2
	apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi

mkdir -p "$DIR" bin
HANDOFF_BIN=${HANDOFF_BIN:-}
if [ -z "$HANDOFF_BIN" ]; then
	go build -o bin/handoff ./cmd/handoff
	HANDOFF_BIN=bin/handoff
fi
[ -x "$HANDOFF_BIN" ] || { echo "HANDOFF_BIN=$HANDOFF_BIN is not an executable" >&2; exit 2; }
go build -o bin/bench-chload ./deploy/bench/chload
go build -o bin/bench-load ./deploy/bench/load
if [ ! -s "$FILE" ] || [ ! -d "$CONTRACTS" ]; then
	go run ./deploy/bench/gen -events "$EVENTS" -pipelines "$PIPELINES" -bad 0 -seed "$SEED" -out "$FILE.tmp" -contracts "$CONTRACTS"
	mv "$FILE.tmp" "$FILE"
fi
lines=$(wc -l <"$FILE")
# Merges collapse the file's redeliveries, so count() is no proof of a
# complete load: a marker table records it.
loaded=$(ch "SELECT lines FROM $DB.bench_loaded" 2>/dev/null || echo 0)
if [ "$loaded" != "$lines" ]; then
	ch "DROP DATABASE IF EXISTS $DB" >/dev/null
	bin/bench-chload -in "$FILE" -database "$DB"
	ch "CREATE TABLE $DB.bench_loaded (lines UInt64) ENGINE = TinyLog" >/dev/null
	ch "INSERT INTO $DB.bench_loaded (lines) VALUES ($lines)" >/dev/null
fi
cleanup() {
	if [ "$KEEP" != 1 ]; then
		ch "DROP DATABASE IF EXISTS $DB" >/dev/null || true
	fi
}
trap cleanup EXIT
inrange=$(ch "SELECT count() FROM $DB.events WHERE batch_id != '' AND business_date >= toDate('$FROM') AND business_date <= toDate('$TO')")
echo "file: $FILE ($(du -h "$FILE" | cut -f1)), $lines lines stored in $DB ($inrange rows in $FROM..$TO now); $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# CPU seconds a process has used (utime + stime), to show what the server
# spent during a run (other clients of the shared server count too).
cpu() { [ -n "$1" ] && awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
chpid=$(pgrep -o -f 'clickhouse-server --config' || true)
kpid=$(pgrep -o -f 'kafka[.]Kafka' || true)

# The reference leg's client: the clickhouse-client of the PATH, or the
# clickhouse binary's client mode (deploy/services finds the server the
# same way).
chclient=()
if [ "$REF" = 1 ]; then
	if command -v clickhouse-client >/dev/null; then
		chclient=(clickhouse-client)
	elif command -v clickhouse >/dev/null; then
		chclient=(clickhouse client)
	else
		echo "no clickhouse-client on the PATH: the reference leg is skipped (REF=0 to silence this)" >&2
		REF=0
	fi
fi
# The columns the replay reads, as store/schema.EventReplayColumns lists them.
refcols="pipeline, business_date, batch_id, event_id, type, time_ms, system, component, object, rows, has_rows, bytes, has_bytes, checksum, attempt, has_attempt, error"
refsql="SELECT $refcols FROM $DB.events WHERE batch_id != '' AND business_date >= toDate('$FROM') AND business_date <= toDate('$TO') ORDER BY pipeline, business_date, batch_id FORMAT Native"
# export: the reference, timed; sets ref_wall, ref_cpu (the client's
# user + sys) and ref_chcpu (the server's CPU seconds meanwhile).
export_ref() {
	local t rc=0
	t=$(mktemp)
	local c0 c1
	c0=$(cpu "$chpid")
	/usr/bin/time -v "${chclient[@]}" --host "${HANDOFF_CLICKHOUSE_ADDR%:*}" --port "${HANDOFF_CLICKHOUSE_ADDR##*:}" \
		--query "$refsql" >/dev/null 2>"$t" || rc=$?
	c1=$(cpu "$chpid")
	if [ "$rc" -ne 0 ]; then
		cat "$t" >&2
		rm -f "$t"
		exit "$rc"
	fi
	read -r ref_wall ref_cpu < <(awk '
		/Elapsed \(wall clock\)/ { n = split($NF, p, ":"); wall = (n == 3) ? p[1]*3600 + p[2]*60 + p[3] : p[1]*60 + p[2] }
		/User time/ { u = $NF } /System time/ { s = $NF }
		END { printf "%.2f %.2f\n", wall, u + s }' "$t")
	ref_chcpu=$(awk -v a="$c1" -v b="$c0" 'BEGIN { printf "%.2f", a - b }')
	rm -f "$t"
}

for leg in $LEGS; do
	for run in $(seq "$RUNS"); do
		log=$(mktemp)
		args=(--clickhouse-addr "$HANDOFF_CLICKHOUSE_ADDR" --clickhouse-database "$DB" --from "$FROM" --to "$TO"
			--contract "$CONTRACTS" --as-of "$AS_OF")
		topic=""
		case $leg in
		dry) args+=(--dry-run --format json) ;;
		publish)
			: "${HANDOFF_KAFKA_BROKERS:?the publish leg needs HANDOFF_KAFKA_BROKERS}"
			topic=handoff.bench.diagnoses.$$.$run
			args+=(--publish --kafka-brokers "$HANDOFF_KAFKA_BROKERS" --diagnoses-topic "$topic") ;;
		*) echo "unknown leg $leg (dry, publish)" >&2; exit 2 ;;
		esac
		rc=0
		if [ "$REF" = 1 ]; then
			export_ref
			echo "reference run $run: clickhouse-client ordered export of $inrange rows in ${ref_wall}s wall (client ${ref_cpu} CPU s, clickhouse-server ${ref_chcpu} CPU s)"
		fi
		ch0=$(cpu "$chpid")
		k0=$(cpu "$kpid")
		load0=$(cut -d' ' -f1 /proc/loadavg)
		out=$log.out # the summary, in text format
		[ "$leg" = dry ] && out=/dev/null # 1.8 GB of JSON: not onto a disk
		/usr/bin/time -v "$HANDOFF_BIN" backfill "${args[@]}" >"$out" 2>"$log" || rc=$?
		touch "$log.out"
		ch1=$(cpu "$chpid")
		k1=$(cpu "$kpid")
		if [ "$rc" -ne 0 ]; then
			cat "$log" >&2
			exit "$rc"
		fi
		events=$(grep -h -o '[0-9,]* events in' "$log" "$log.out" | head -1 | tr -d ', ' | sed 's/eventsin//')
		awk -v events="$events" -v run="$run" -v leg="$leg" -v chcpu="$(awk -v a="$ch1" -v b="$ch0" 'BEGIN { print a - b }')" -v kcpu="$(awk -v a="$k1" -v b="$k0" 'BEGIN { print a - b }')" -v load="$load0 $(cut -d' ' -f1 /proc/loadavg)" \
			-v ncpu="$(nproc)" -v rows="$inrange" -v refwall="${ref_wall:-0}" -v refch="${ref_chcpu:-0}" -v bench="backfill-$leg" '
			/Elapsed \(wall clock\)/ { n = split($NF, p, ":"); wall = (n == 3) ? p[1]*3600 + p[2]*60 + p[3] : p[1]*60 + p[2] }
			/User time/ { user = $NF }
			/System time/ { sys = $NF }
			/Maximum resident set size/ { rss = $NF }
			END {
				printf "%s run %d: %d events in %.2fs wall (%.2fs user, %.2fs sys): %.0f events/s, peak RSS %.0f MiB; clickhouse-server used %.1f CPU s meanwhile, the Kafka broker %.1f; load average %s (before, after)\n",
					leg, run, events, wall, user, sys, events / wall, rss / 1024, chcpu, kcpu, load
				# The CPU split: how many of the cores handoff and the
				# server kept busy between them (other clients of the
				# shared server count too).
				printf "%s run %d: CPU split: handoff %.2f cores, clickhouse-server %.2f, together %.2f of %d\n",
					leg, run, (user + sys) / wall, chcpu / wall, (user + sys + chcpu) / wall, ncpu
				split(load, l, " ")
				if (refwall > 0) {
					ref = rows / refwall
					printf "RESULT bench=%s metric=throughput value=%.0f unit=events/s ref=%.0f ratio=%.2f rss_mib=%.0f load=%s\n", bench, events / wall, ref, (events / wall) / ref, rss / 1024, l[1]
					printf "RESULT bench=%s metric=cpu value=%.2f unit=cpu_s ref=%.2f ratio=%.2f load=%s\n", bench, user + sys, refch, (refch > 0 ? (user + sys) / refch : 0), l[1]
				} else {
					printf "RESULT bench=%s metric=throughput value=%.0f unit=events/s rss_mib=%.0f load=%s\n", bench, events / wall, rss / 1024, l[1]
					printf "RESULT bench=%s metric=cpu value=%.2f unit=cpu_s load=%s\n", bench, user + sys, l[1]
				}
			}' "$log"
		grep -h -A14 '^backfill: [0-9-]*\.\.' "$log" "$log.out" | grep -v 'Command being timed' | sed 's/^/  /'
		if [ -n "$topic" ]; then
			bin/bench-load -delete-topics "$topic" >/dev/null 2>&1 || true
		fi
		rm -f "$log" "$log.out"
	done
done
