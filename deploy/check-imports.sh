#!/usr/bin/env bash
# Checks the import rules of the rooms (design.md section 7):
#   model imports no other room and no I/O library;
#   analyzer imports only model (from within the project);
#   only ingest writes to ClickHouse (query may read; nothing else imports the driver).
#   (internal/testenv opens connections for integration tests.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mod=$(go list -m)
fail=0
deps() { go list -f '{{join .Imports "\n"}}' "$1"; }

for pkg in $(go list ./model/...); do
  while read -r imp; do
    case "$imp" in
      "$mod"/model|"$mod"/model/*) ;;
      "$mod"/*) echo "check-imports: $pkg imports $imp: model must import no other room"; fail=1 ;;
      os|os/*|net|net/*|io/ioutil|database/*|syscall|github.com/segmentio/*|github.com/ClickHouse/*)
        echo "check-imports: $pkg imports $imp: model must stay free of I/O"; fail=1 ;;
    esac
  done < <(deps "$pkg")
done
for pkg in $(go list ./analyzer/...); do
  while read -r imp; do
    case "$imp" in
      "$mod"/model|"$mod"/model/*|"$mod"/analyzer|"$mod"/analyzer/*) ;;
      "$mod"/*) echo "check-imports: $pkg imports $imp: analyzer imports only model"; fail=1 ;;
      os|os/*|net|net/*|io/ioutil|database/*|syscall|github.com/segmentio/*|github.com/ClickHouse/*)
        echo "check-imports: $pkg imports $imp: analyzer must stay pure (no I/O)"; fail=1 ;;
    esac
  done < <(deps "$pkg")
done
for pkg in $(go list ./... | grep -v -e "^$mod/ingest" -e "^$mod/query" -e "^$mod/cmd" -e "^$mod/deploy" -e "^$mod/internal/testenv"); do
  if deps "$pkg" | grep -q '^github.com/ClickHouse/'; then
    echo "check-imports: $pkg imports the ClickHouse driver: only ingest writes, only query reads"; fail=1
  fi
done
# query reads: neither its code nor its tests send an INSERT, DDL or
# mutation (tests load their fixtures through ingest's schema.Ensure, rows
# and sink, as handoff ingest stores them).
if grep -nE '\.(PrepareBatch|Exec)\(|"(INSERT|CREATE|ALTER|DROP|TRUNCATE|OPTIMIZE) ' \
    $(find query -name '*.go'); then
  echo "check-imports: query writes to ClickHouse (above): only ingest writes"; fail=1
fi
exit $fail
