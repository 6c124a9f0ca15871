#!/usr/bin/env bash
# Benchmark handoff detect's detection latency (the target, docs/performance.md:
# deadline to finding on the topic under 1 s at p99 while ingesting 20,000 events/s), on the
# shared ClickHouse and Kafka with private topics, groups and database.
#
#   deploy/bench/detect.sh                        # 20,000 events/s for 3 min, 300 deadlines, tick 250ms
#   RATE=20000 DURATION=3m PROBES=300 TICK=1s deploy/bench/detect.sh
#   RATE=0 DURATION=90s deploy/bench/detect.sh    # an idle detector: deadlines only; its CPU
#   MODE=memory BATCHES=1000000 deploy/bench/detect.sh  # heap and RSS of a detector holding 1M quiet open batches
#
# What it does:
#   1. Uses the services of HANDOFF_KAFKA_BROKERS and HANDOFF_CLICKHOUSE_ADDR
#      when set (for example `. /path/to/.data/services.env`), otherwise
#      starts them (deploy/services/up.sh; they are left running).
#   2. Builds bin/handoff and bin/bench-detectlat.
#   3. Writes PROBES contracts (deploy/bench/detectlat): pipelines that never
#      send an event, each due at a time of today, spread over the middle
#      of the run (from LEAD after the start, over the run minus LEAD and 20 s).
#   4. Starts `handoff ingest` (new topic handoff.bench.detect.<id>.*, new
#      database handoff_bench_detect_<id>, new groups) and `handoff detect`
#      (--expect-from today, --tick TICK) on them, with the real clock.
#   5. `detectlat run` sends RATE events/s for DURATION (delivered batches of
#      pipelines without a contract: they raise nothing, they only load
#      ingest and detect) and reads the findings topic: for each probe's
#      `missing` finding the latency from its deadline to raised_at, to the
#      record's timestamp on the topic, and to when it was read. Prints the
#      percentiles; fails if a probe's finding never came.
#   6. Prints how far ingest and detect were behind at the end (their lag
#      metrics), their peak RSS, and removes the topics, groups and database
#      (KEEP=1 keeps them). Logs stay in .data/bench/detect-<id>/.
#
# The latency is not bounded by the tick: the detector reads the end offsets
# when a deadline falls due (while it keeps folding) and fires it as soon as
# every event that was in the topic then has been folded (a round trip to
# the brokers and the events in flight). It reads them once more 50 ms
# ahead of the deadline, so that the deadline's own advance has only the
# events since to judge. The tick only commits, reports lag and evaluates
# new events.
#
# Where the time went: the detector's handoff_detect_stage_seconds, printed
# per stage (p50 and p99 within its buckets): fire (deadline to the
# detector waking), ends (the end offsets read), reach (folded up to them),
# advance (judged and published), and of every advance judge and publish.
#
# It also prints the CPU seconds handoff detect and ingest used over the run
# (with RATE=0: what an idle detector costs) and RESULT lines (the p99s
# against the 100 ms target, detect's CPU per second of run).
#
# MODE=memory runs `detectlat memory` instead (no services needed): a
# detector in one process holding BATCHES quiet open batches (1,000,000),
# heap and resident bytes per open batch against the 512-byte target.
#
# PIN=1 gives the detector a core of its own: `handoff detect` runs on CPU
# 1, the load generator and `handoff ingest` on CPU 0 (taskset; Kafka and
# ClickHouse stay where the scheduler puts them). It separates what the
# detector's code costs from waiting for a core on a box where the load,
# the ingester and the services all run, as a detector deployed on a
# machine or a pod of its own would not.
#
# Environment: MODE (latency), RATE (20000), DURATION (3m), PROBES (300),
# TICK (250ms), LEAD (40: seconds before the first deadline), PARTITIONS (4),
# KEEP (0), BATCHES (1000000), HANDOFF_BIN (bin/handoff, built; set: that
# build instead, for A/B runs), PROFILE (0; 1: a CPU profile of detect in
# the run's directory, detect.pprof), PIN (0; 1: see above).
set -euo pipefail

cd "$(dirname "$0")/../.."
if [ "${MODE:-latency}" = memory ]; then
	mkdir -p bin
	go build -o bin/bench-detectlat ./deploy/bench/detectlat
	exec bin/bench-detectlat memory -batches "${BATCHES:-1000000}"
fi
RATE=${RATE:-20000}
DURATION=${DURATION:-3m}
PROBES=${PROBES:-300}
TICK=${TICK:-250ms}
LEAD=${LEAD:-40}
PARTITIONS=${PARTITIONS:-4}
KEEP=${KEEP:-0}

say() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

if [ -z "${HANDOFF_KAFKA_BROKERS:-}" ] || [ -z "${HANDOFF_CLICKHOUSE_ADDR:-}" ]; then
	bash deploy/services/up.sh >&2
	# shellcheck disable=SC1091 # written by up.sh
	. "${HANDOFF_DATA_DIR:-.data}/services.env"
fi
CH_HOST=${HANDOFF_CLICKHOUSE_ADDR%:*}
CH_PORT=${HANDOFF_CLICKHOUSE_ADDR##*:}

mkdir -p bin .data/bench
# HANDOFF_BIN runs another build of handoff (an A/B comparison: the same
# detectlat measures both).
bin=${HANDOFF_BIN:-bin/handoff}
[ -n "${HANDOFF_BIN:-}" ] || go build -o bin/handoff ./cmd/handoff
[ -x "$bin" ] || die "HANDOFF_BIN $bin: not an executable"
go build -o bin/bench-detectlat ./deploy/bench/detectlat

id=$(date +%s)
dir=.data/bench/detect-$id
mkdir -p "$dir"
pre=handoff.bench.detect.$id
db=handoff_bench_detect_$id
case "$DURATION" in
*m) secs=$((${DURATION%m} * 60)) ;;
*s) secs=${DURATION%s} ;;
*) secs=$DURATION ;;
esac
[[ "$secs" =~ ^[0-9]+$ ]] || die "DURATION $DURATION: want seconds (180, 180s) or minutes (3m)"
span=$((secs - LEAD - 20))
[ "$span" -ge 10 ] || die "DURATION $DURATION too short for LEAD $LEAD s: want at least LEAD + 30 s"
first=$(date -u -d "@$(($(date +%s) + LEAD))" +%Y-%m-%dT%H:%M:%SZ)
bin/bench-detectlat contracts -dir "$dir/contracts" -probes "$PROBES" -first "$first" -span "${span}s"
say "run $id: $RATE events/s for $DURATION; $PROBES deadlines from $first over ${span}s; detect --tick $TICK; logs in $dir"

# Only this run's settings reach the two processes.
export HANDOFF_TOPIC=$pre.events HANDOFF_DLQ_TOPIC=$pre.dlq HANDOFF_FINDINGS_TOPIC=$pre.findings \
	HANDOFF_DIAGNOSES_TOPIC=$pre.diagnoses HANDOFF_GROUP=$db-ingest HANDOFF_RESULTS_GROUP=$db-results \
	HANDOFF_DETECT_GROUP=$db-detect HANDOFF_CLICKHOUSE_DATABASE=$db HANDOFF_TOPIC_PARTITIONS=$PARTITIONS
ingest_metrics=127.0.0.1:$((20000 + id % 10000))
detect_metrics=127.0.0.1:$((30000 + id % 10000))

pids=()
cleanup() {
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill -TERM "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	if [ "$KEEP" != 1 ]; then
		clickhouse-client --host "$CH_HOST" --port "$CH_PORT" -q "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
		go run ./deploy/bench/load -delete-topics "$pre.events,$pre.dlq,$pre.findings,$pre.diagnoses" \
			-delete-groups "$db-ingest,$db-results,$db-detect" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

pin_detect=() pin_rest=() rate_tag=$RATE
if [ "${PIN:-0}" = 1 ]; then
	[ "$(nproc)" -ge 2 ] || die "PIN=1 needs two cores; this machine has $(nproc)"
	pin_detect=(taskset -c 1) pin_rest=(taskset -c 0) rate_tag=${RATE}_pinned
fi
"${pin_rest[@]}" "$bin" ingest --metrics-addr "$ingest_metrics" >"$dir/ingest.log" 2>&1 &
pids+=($!)
ingest_pid=$!
prof=()
[ "${PROFILE:-0}" != 1 ] || prof=(--cpuprofile "$dir/detect.pprof")
"${pin_detect[@]}" "$bin" detect --contract "$dir/contracts" --expect-from today --tick "$TICK" "${prof[@]}" \
	--metrics-addr "$detect_metrics" --instance "bench-$id" >"$dir/detect.log" 2>&1 &
pids+=($!)
detect_pid=$!
status=0 # detectlat's: a probe whose finding never came fails the run, after the figures

hz=$(getconf CLK_TCK)
cpu() { awk -v hz="$hz" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
cpu_d0=$(cpu "$detect_pid") cpu_i0=$(cpu "$ingest_pid") t0=$(date +%s.%N)
"${pin_rest[@]}" bin/bench-detectlat run -topic "$pre.events" -findings-topic "$pre.findings" -partitions "$PARTITIONS" \
	-rate "$RATE" -duration "$DURATION" -probes "$PROBES" | tee "$dir/result.txt" || status=$?

cpu_d1=$(cpu "$detect_pid") cpu_i1=$(cpu "$ingest_pid") t1=$(date +%s.%N)
metric() { curl -s "http://$1/metrics" | awk -v m="$2" '$1 ~ "^"m {s += $2} END {print s + 0}'; }
{
	awk -v d0="$cpu_d0" -v d1="$cpu_d1" -v i0="$cpu_i0" -v i1="$cpu_i1" -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "CPU seconds over the %.0f s run: detect %.2f (%.1f%% of a core), ingest %.2f\n", t1 - t0, d1 - d0, 100 * (d1 - d0) / (t1 - t0), i1 - i0 }'
	load=$(cut -d' ' -f1 /proc/loadavg)
	rss=$(awk '/VmHWM/ {printf "%.0f", $2 / 1024}' /proc/$detect_pid/status)
	awk -v load="$load" -v rss="$rss" -v rate="$rate_tag" '
		/^raised_at - deadline/ { for (i = 1; i < NF; i++) if ($i == "p99") printf "RESULT bench=detect metric=raised_p99_rate%s value=%s unit=ms ref=100 ratio=%.2f rss_mib=%s load=%s\n", rate, $(i + 1), $(i + 1) / 100, rss, load }
		/^on the topic - deadline/ { for (i = 1; i < NF; i++) if ($i == "p99") printf "RESULT bench=detect metric=on_topic_p99_rate%s value=%s unit=ms ref=100 ratio=%.2f rss_mib=%s load=%s\n", rate, $(i + 1), $(i + 1) / 100, rss, load }' "$dir/result.txt"
	awk -v d0="$cpu_d0" -v d1="$cpu_d1" -v t0="$t0" -v t1="$t1" -v load="$load" -v rss="$rss" -v rate="$rate_tag" \
		'BEGIN { printf "RESULT bench=detect metric=detect_cpu_rate%s value=%.4f unit=cpu_s_per_s rss_mib=%s load=%s\n", rate, (d1 - d0) / (t1 - t0), rss, load }'

	echo "ingest lag at the end: $(metric "$ingest_metrics" handoff_ingest_consumer_lag) messages; detect lag: $(metric "$detect_metrics" handoff_detect_consumer_lag) messages, evidence age $(metric "$detect_metrics" handoff_detect_evidence_age_seconds) s"
	# Where the time from a deadline to its findings went, per stage
	# (handoff_detect_stage_seconds; interpolated within its buckets).
	curl -s "http://$detect_metrics/metrics" | awk '
		/^handoff_detect_stage_seconds_bucket/ {
			match($0, /stage="[^"]*"/); st = substr($0, RSTART + 7, RLENGTH - 8)
			match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5)
			n[st]++; les[st, n[st]] = le; cnt[st, n[st]] = $2
		}
		function q(st, p,   i, want, lo, plo, hi) {
			want = p * cnt[st, n[st]]; lo = 0; plo = 0
			for (i = 1; i <= n[st]; i++) {
				if (cnt[st, i] >= want) {
					hi = les[st, i]; if (hi == "+Inf") return lo * 1000
					if (cnt[st, i] == plo) return hi * 1000
					return 1000 * (lo + (hi - lo) * (want - plo) / (cnt[st, i] - plo))
				}
				lo = les[st, i]; plo = cnt[st, i]
			}
		}
		END {
			split("fire ends reach advance judge publish", order, " ")
			for (k = 1; k <= 6; k++) { st = order[k]; if (n[st] && cnt[st, n[st]] > 0)
				printf "stage %-8s p50 %6.1f ms  p99 %6.1f ms  (n=%d)\n", st, q(st, .5), q(st, .99), cnt[st, n[st]] }
		}'
	echo "peak RSS: ingest $(awk '/VmHWM/ {print $2 / 1024 " MiB"}' /proc/$ingest_pid/status), detect $(awk '/VmHWM/ {print $2 / 1024 " MiB"}' /proc/$detect_pid/status)"
	echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$dir/result.txt"
printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$RATE" "$DURATION" "$PROBES" "$TICK" \
	"$(grep 'on the topic' "$dir/result.txt" | sed 's/  */ /g')" >>.data/bench/detect-results.tsv
exit "$status"
