#!/usr/bin/env bash
# Install (when missing) and start the local ClickHouse and Kafka, then write
# $HANDOFF_DATA_DIR/services.env (default <repo>/.data/services.env) for the
# Makefile and tests to source:
#   . .data/services.env   # HANDOFF_CLICKHOUSE_ADDR, HANDOFF_KAFKA_BROKERS, ...
# Idempotent: services already running are left as they are.
# Stop both with deploy/services/down.sh.
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=up
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/services/lib.sh
. "$HERE/lib.sh"

started=$SECONDS
"$HERE/clickhouse.sh" install
"$HERE/kafka.sh" install
"$HERE/clickhouse.sh" start
"$HERE/kafka.sh" start
"$HERE/chdb.sh" start # no server: installs chdb-core (current ClickHouse in-process) for query/dash
"$HERE/alertmanager.sh" start # also installs promtool (deploy/prometheus rule tests)

env_file="$DATA_DIR/services.env"
ch_host="${HANDOFF_CLICKHOUSE_HOST:-127.0.0.1}"
k_host="${HANDOFF_KAFKA_HOST:-127.0.0.1}"
cat >"$env_file.tmp" <<EOT
# Written by deploy/services/up.sh; removed by deploy/services/down.sh.
export HANDOFF_DATA_DIR=$DATA_DIR
export HANDOFF_CLICKHOUSE_ADDR=$ch_host:${HANDOFF_CLICKHOUSE_PORT:-19000}
export HANDOFF_CLICKHOUSE_HTTP_ADDR=$ch_host:${HANDOFF_CLICKHOUSE_HTTP_PORT:-18123}
export HANDOFF_KAFKA_BROKERS=$k_host:${HANDOFF_KAFKA_PORT:-19092}
export HANDOFF_CHDB_PYTHON=$("$HERE/chdb.sh" python)
export HANDOFF_ALERTMANAGER_URLS=http://${HANDOFF_ALERTMANAGER_HOST:-127.0.0.1}:${HANDOFF_ALERTMANAGER_PORT:-19095}
EOT
mv "$env_file.tmp" "$env_file"
log "services up in $((SECONDS - started))s; environment: $env_file"
log "logs: $DATA_DIR/clickhouse/logs/clickhouse-server.log, $DATA_DIR/kafka/logs/server.log"
