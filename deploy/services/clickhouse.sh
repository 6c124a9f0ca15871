#!/usr/bin/env bash
# Local ClickHouse for development and tests.
#
#   deploy/services/clickhouse.sh install   apt-get install clickhouse-server/-client when missing
#   deploy/services/clickhouse.sh start     install if needed, start, wait until it answers
#   deploy/services/clickhouse.sh stop      stop the server started by 'start'
#   deploy/services/clickhouse.sh status    exit 0 when running and answering, 3 otherwise
#   deploy/services/clickhouse.sh restart
#
# It is not the system service: it runs as its own process with
# deploy/clickhouse/config.xml, its data, tmp and logs under
# $HANDOFF_DATA_DIR/clickhouse (default <repo>/.data/clickhouse), on loopback.
#
# Environment (all optional):
#   HANDOFF_DATA_DIR                 project data dir (default <repo>/.data)
#   HANDOFF_CLICKHOUSE_HOST          listen address (default 127.0.0.1)
#   HANDOFF_CLICKHOUSE_PORT          native TCP port (default 19000)
#   HANDOFF_CLICKHOUSE_HTTP_PORT     HTTP port (default 18123)
#   HANDOFF_CLICKHOUSE_START_TIMEOUT seconds to wait for readiness (default 90)
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=clickhouse
# shellcheck source=deploy/services/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CH_HOST="${HANDOFF_CLICKHOUSE_HOST:-127.0.0.1}"
CH_PORT="${HANDOFF_CLICKHOUSE_PORT:-19000}"
CH_HTTP_PORT="${HANDOFF_CLICKHOUSE_HTTP_PORT:-18123}"
CH_TIMEOUT="${HANDOFF_CLICKHOUSE_START_TIMEOUT:-90}"

CH_CONFIG="$REPO_ROOT/deploy/clickhouse/config.xml"
CH_DIR="$DATA_DIR/clickhouse"
CH_LOG_DIR="$CH_DIR/logs"
CH_LOG="$CH_LOG_DIR/clickhouse-server.log"
CH_ERR_LOG="$CH_LOG_DIR/clickhouse-server.err.log"
CH_STDOUT_LOG="$CH_LOG_DIR/stdout.log"
CH_PID_FILE="$CH_DIR/clickhouse-server.pid"

CH_SERVER_BIN="${HANDOFF_CLICKHOUSE_SERVER_BIN:-clickhouse-server}"
CH_CLIENT_BIN="${HANDOFF_CLICKHOUSE_CLIENT_BIN:-clickhouse-client}"

ch_installed() {
  command -v "$CH_SERVER_BIN" >/dev/null 2>&1 && command -v "$CH_CLIENT_BIN" >/dev/null 2>&1
}

cmd_install() {
  if ch_installed; then
    return 0
  fi
  log "clickhouse-server/clickhouse-client not found: installing Debian's packages"
  apt_install clickhouse-server clickhouse-client
  ch_installed || die "clickhouse-server or clickhouse-client still missing after apt-get install"
  log "installed $("$CH_CLIENT_BIN" --version 2>/dev/null | head -n1)"
}

ch_query() {
  "$CH_CLIENT_BIN" --host "$CH_HOST" --port "$CH_PORT" --connect_timeout 2 -q "$1" 2>/dev/null
}

# Prints the pid of our server when it is running.
ch_pid() {
  local pid
  pid="$(pid_from_file "$CH_PID_FILE")" || return 1
  pid_matches "$pid" "clickhouse" || return 1
  printf '%s\n' "$pid"
}

ch_fail() {
  log "$1"
  show_log_tail "$CH_STDOUT_LOG" "$CH_ERR_LOG" "$CH_LOG"
  die "ClickHouse did not start; logs: $CH_LOG_DIR (server log $CH_LOG, errors $CH_ERR_LOG, stdout $CH_STDOUT_LOG)"
}

cmd_start() {
  cmd_install
  mkdir -p "$CH_DIR/data" "$CH_DIR/tmp" "$CH_DIR/user_files" "$CH_DIR/format_schemas" "$CH_LOG_DIR"

  local pid
  if pid="$(ch_pid)"; then
    if ch_query 'SELECT 1' >/dev/null; then
      log "already running (pid $pid) at $CH_HOST:$CH_PORT; logs: $CH_LOG"
      return 0
    fi
    log "process $pid is up but not answering yet; waiting"
  else
    rm -f "$CH_PID_FILE"
    if port_open "$CH_HOST" "$CH_PORT"; then
      die "port $CH_HOST:$CH_PORT is already taken by another process (not ours: no live pid in $CH_PID_FILE); stop it or set HANDOFF_CLICKHOUSE_PORT"
    fi
    if port_open "$CH_HOST" "$CH_HTTP_PORT"; then
      die "HTTP port $CH_HOST:$CH_HTTP_PORT is already taken by another process; stop it or set HANDOFF_CLICKHOUSE_HTTP_PORT"
    fi
    log "starting clickhouse-server on $CH_HOST:$CH_PORT (http $CH_HTTP_PORT), data $CH_DIR"
    # Options after "--" override keys of config.xml (supported by 18.16 and
    # current releases). setsid+nohup: survive the calling shell.
    setsid nohup "$CH_SERVER_BIN" --config-file="$CH_CONFIG" -- \
      --path="$CH_DIR/data/" \
      --tmp_path="$CH_DIR/tmp/" \
      --user_files_path="$CH_DIR/user_files/" \
      --format_schema_path="$CH_DIR/format_schemas/" \
      --logger.log="$CH_LOG" \
      --logger.errorlog="$CH_ERR_LOG" \
      --listen_host="$CH_HOST" \
      --tcp_port="$CH_PORT" \
      --http_port="$CH_HTTP_PORT" \
      >"$CH_STDOUT_LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$CH_PID_FILE"
  fi

  local deadline=$((SECONDS + CH_TIMEOUT))
  while :; do
    if ! pid_alive "$pid"; then
      rm -f "$CH_PID_FILE"
      ch_fail "clickhouse-server (pid $pid) exited during startup"
    fi
    if ch_query 'SELECT 1' >/dev/null; then
      break
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      ch_fail "clickhouse-server (pid $pid) not answering 'SELECT 1' on $CH_HOST:$CH_PORT after ${CH_TIMEOUT}s"
    fi
    sleep 0.5
  done
  log "ready: $CH_HOST:$CH_PORT (pid $pid, version $(ch_query 'SELECT version()' || echo '?')); logs: $CH_LOG"
}

cmd_stop() {
  local pid
  if ! pid="$(ch_pid)"; then
    rm -f "$CH_PID_FILE"
    log "not running"
    return 0
  fi
  log "stopping clickhouse-server (pid $pid)"
  stop_pid "$pid" clickhouse-server 60
  pid_alive "$pid" && die "clickhouse-server (pid $pid) did not exit; logs: $CH_LOG"
  rm -f "$CH_PID_FILE"
  log "stopped"
}

cmd_status() {
  local pid
  if pid="$(ch_pid)"; then
    if ch_query 'SELECT 1' >/dev/null; then
      echo "clickhouse: running, pid $pid, native $CH_HOST:$CH_PORT, http $CH_HOST:$CH_HTTP_PORT, data $CH_DIR, log $CH_LOG"
      return 0
    fi
    echo "clickhouse: process $pid running but not answering on $CH_HOST:$CH_PORT; log $CH_LOG"
    return 3
  fi
  echo "clickhouse: not running (data $CH_DIR, log $CH_LOG)"
  return 3
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 {install|start|stop|restart|status}" >&2
    exit 2
    ;;
esac
