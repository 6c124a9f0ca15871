#!/usr/bin/env bash
# The seed case's files, byte for byte the same on every machine:
#
#   files.sh DIR
#
# writes DIR/outbox (the producer's side) and DIR/inbox/finance (the
# receiving side of the exchange) as the seed case finds them:
#   - 2026-09-29 (batch 20260929): data file and flag at both ends;
#   - 2026-09-30 (batch 20260930): the data file at both ends, its flag
#     only in the outbox: the exchange never delivered it.
# A data file is an AccountBalanceSnapshot: a header, then one row per
# account (grain: account x snapshot_date, business_date = snapshot_date).
# The rows, sizes and sha256 recorded in deploy/demo/seed-case.jsonl are
# those of these files (deploy/demo/check-files.sh checks it).
# Existing files are left as they are when their content is right, so a
# second run changes nothing; a file with other content is rewritten.
set -euo pipefail
dir=${1:?usage: files.sh DIR}
mkdir -p "$dir/outbox" "$dir/inbox/finance"

# snapshot DATE ROWS: the data file's content on stdout. Integer arithmetic
# only, so mawk and gawk write the same bytes.
snapshot() {
  awk -v date="$1" -v n="$2" 'BEGIN {
    print "account_id,snapshot_date,currency,balance"
    x = 20260930
    for (i = 1; i <= n; i++) {
      x = (x * 1103 + 12345) % 1000003
      printf "AC%08d,%s,CNY,%d.%02d\n", i, date, x % 500000, x % 100
    }
  }'
}

# put FILE: write stdin to FILE (via a temporary name and a rename) unless
# FILE already holds exactly those bytes.
put() {
  local f=$1 tmp
  tmp=$(mktemp "$f.XXXXXX.part")
  cat >"$tmp"
  chmod 0644 "$tmp"
  if [ -f "$f" ] && cmp -s "$tmp" "$f"; then rm -f "$tmp"; else mv -f "$tmp" "$f"; fi
}

for spec in "2026-09-29 20260929 120118" "2026-09-30 20260930 120345"; do
  read -r date id rows <<<"$spec"
  csv=account_balance_snapshot_$id.csv
  snapshot "$date" "$rows" | put "$dir/outbox/$csv"
  put "$dir/inbox/finance/$csv" <"$dir/outbox/$csv"
  : | put "$dir/outbox/account_balance_snapshot_$id.flag"
done
# Only the earlier batch's flag reached the receiver.
: | put "$dir/inbox/finance/account_balance_snapshot_20260929.flag"
rm -f "$dir/inbox/finance/account_balance_snapshot_20260930.flag"
