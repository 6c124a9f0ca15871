#!/usr/bin/env bash
# Benchmark `handoff diagnose` end to end: build handoff, generate a
# deterministic event file (deploy/bench/gen) into .data/bench/ if it is not
# there yet, run `handoff diagnose --format json > /dev/null` under
# /usr/bin/time -v, and print events/s and peak RSS.
#
#   deploy/bench/diagnose.sh                 # 1,000,000 events, 3 runs
#   EVENTS=200000 RUNS=1 deploy/bench/diagnose.sh
#
# Environment: EVENTS (1000000), SEED (1), RUNS (3), AS_OF
# (2026-10-03T00:00:00Z: two days after the generator's last business date).
# Prints one RESULT line: the median run's events/s, the highest peak RSS.
set -euo pipefail

cd "$(dirname "$0")/../.."
EVENTS=${EVENTS:-1000000}
SEED=${SEED:-1}
RUNS=${RUNS:-3}
AS_OF=${AS_OF:-2026-10-03T00:00:00Z}
DIR=.data/bench
FILE=$DIR/events-$EVENTS-seed$SEED.jsonl
CONTRACTS=$DIR/contracts-$EVENTS-seed$SEED

if [ ! -x /usr/bin/time ]; then
	echo "installing GNU time (Debian package time)" >&2
	apt-get install -y time >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y time >/dev/null; }
fi

mkdir -p "$DIR" bin
go build -o bin/handoff ./cmd/handoff
if [ ! -s "$FILE" ] || [ ! -d "$CONTRACTS" ]; then
	go run ./deploy/bench/gen -events "$EVENTS" -seed "$SEED" -out "$FILE.tmp" -contracts "$CONTRACTS"
	mv "$FILE.tmp" "$FILE"
fi
load=$(cut -d' ' -f1 /proc/loadavg)
echo "file: $FILE ($(du -h "$FILE" | cut -f1)), contracts: $CONTRACTS, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"

rates=()
rss_max=0
for run in $(seq "$RUNS"); do
	log=$(mktemp)
	rc=0
	/usr/bin/time -v bin/handoff diagnose --events "$FILE" --contract "$CONTRACTS" --as-of "$AS_OF" \
		--format json >/dev/null 2>"$log" || rc=$?
	if [ "$rc" -gt 1 ]; then # 0 and 1 are verdicts, not failures
		cat "$log" >&2
		exit "$rc"
	fi
	line=$(awk -v events="$EVENTS" -v run="$run" '
		/Elapsed \(wall clock\)/ { n = split($NF, p, ":"); wall = (n == 3) ? p[1]*3600 + p[2]*60 + p[3] : p[1]*60 + p[2] }
		/User time/ { user = $NF }
		/System time/ { sys = $NF }
		/Maximum resident set size/ { rss = $NF }
		END {
			printf "run %d: %d events in %.2fs wall (%.2fs user, %.2fs sys): %.0f events/s, peak RSS %.0f MiB\n",
				run, events, wall, user, sys, events / wall, rss / 1024
			printf "%.0f %.0f\n", events / wall, rss / 1024
		}' "$log")
	echo "${line%$'\n'*}"
	read -r rate rss <<<"${line##*$'\n'}"
	rates+=("$rate")
	if [ "$rss" -gt "$rss_max" ]; then rss_max=$rss; fi
	grep '^summary:' "$log" | sed 's/^/  /'
	rm -f "$log"
done
# The median run's rate and the highest peak RSS of the runs, with the
# load at the start (deploy/bench/README.md, "RESULT lines").
median=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
echo "RESULT bench=diagnose metric=throughput value=$median unit=events/s rss_mib=$rss_max load=$load"
