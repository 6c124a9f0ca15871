#!/usr/bin/env bash
# `make bench`: every benchmark of deploy/bench in sequence, each with its
# defaults, then one markdown table of their RESULT lines
# (deploy/bench/table; deploy/bench/README.md, "make bench").
#
#   make bench                      # all of them: tens of minutes of both cores
#   make bench BENCH=serve          # one (or several: BENCH="replay openbatch")
#
# Names: ingest backfill detect diagnose serve (deploy/bench/<name>.sh),
# detect-memory (MODE=memory deploy/bench/detect.sh: one detector process
# holding 1,000,000 quiet open batches, heap and RSS per batch) and the Go
# micro benchmarks replay (go test -bench Replay -cpu 1
# ./analyzer/replay/) and openbatch (go test -bench OpenBatchMemory
# ./analyzer/detect/). Each one's output is kept in
# .data/bench/make-bench-<time>/<name>.txt, the RESULT lines of all in
# results.txt there. A benchmark that fails is named at the end, the others
# still run, and the exit status is 1.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ALL="ingest backfill detect diagnose serve replay openbatch detect-memory"
BENCH="${BENCH:-$ALL}"
for name in $BENCH; do
  case " $ALL " in *" $name "*) ;; *) echo "make bench: unknown BENCH name $name (want some of: $ALL)" >&2; exit 2 ;; esac
done
out=".data/bench/make-bench-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out" bin
go build -o bin/bench-table ./deploy/bench/table || exit 1
failed=()
for name in $BENCH; do
  echo "== $name: $(date -u +%H:%M:%S) UTC, $(uptime)"
  load=$(cut -d' ' -f1 /proc/loadavg)
  {
    case $name in
      replay) go test -run '^$' -bench Replay -cpu 1 ./analyzer/replay/ | tee "$out/$name.go.txt" | bin/bench-table -gobench replay -load "$load" ;;
      openbatch) go test -run '^$' -bench OpenBatchMemory ./analyzer/detect/ | tee "$out/$name.go.txt" | bin/bench-table -gobench openbatch -load "$load" ;;
      # backfill keeps its database (a year of 1,000 pipelines takes
      # minutes to load) for the next run and for other benchmarks.
      backfill) KEEP="${KEEP:-1}" bash deploy/bench/backfill.sh ;;
      detect-memory) MODE=memory bash deploy/bench/detect.sh ;;
      *) bash "deploy/bench/$name.sh" ;;
    esac
  } 2>&1 | tee "$out/$name.txt"
  rc=${PIPESTATUS[0]}
  if [ "$rc" != 0 ]; then
    echo "== $name FAILED (exit $rc): $out/$name.txt"
    failed+=("$name")
  fi
done
# In the order run.
: > "$out/results.txt"
for name in $BENCH; do grep -h '^RESULT ' "$out/$name.txt" >> "$out/results.txt" || true; done
echo
echo "Results ($out/results.txt), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) CPUs:"
echo
bin/bench-table "$out/results.txt"
rc=$?
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}" >&2
  exit 1
fi
exit "$rc"
