#!/usr/bin/env bash
# Stop the local Kafka and ClickHouse started by deploy/services/up.sh and
# remove $HANDOFF_DATA_DIR/services.env. Data stays (delete the data dir,
# default <repo>/.data, for a clean slate). Stopping what is not running is
# not an error.
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=down
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/services/lib.sh
. "$HERE/lib.sh"

rc=0
"$HERE/alertmanager.sh" stop || rc=1
"$HERE/kafka.sh" stop || rc=1
"$HERE/clickhouse.sh" stop || rc=1
"$HERE/chdb.sh" stop || rc=1
rm -f "$DATA_DIR/services.env"
exit "$rc"
