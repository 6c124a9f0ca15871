#!/usr/bin/env bash
# Local Prometheus Alertmanager for development and tests, and promtool (the
# rule checker of deploy/prometheus), both from Debian's packages.
#
#   deploy/services/alertmanager.sh install   apt-get install prometheus-alertmanager and prometheus (promtool) when missing
#   deploy/services/alertmanager.sh start     install if needed, start on loopback, wait until ready
#   deploy/services/alertmanager.sh stop      stop the instance started by 'start'
#   deploy/services/alertmanager.sh status    exit 0 when running and ready, 3 otherwise
#   deploy/services/alertmanager.sh restart
#
# Configuration: deploy/alertmanager/alertmanager.yml. Data (silences, the
# notification log) in $HANDOFF_DATA_DIR/alertmanager/data, log in
# .../alertmanager/logs. Clustering is off (one instance, no gossip port).
#
# Environment (all optional):
#   HANDOFF_DATA_DIR                    project data dir (default <repo>/.data)
#   HANDOFF_ALERTMANAGER_HOST           listen address (default 127.0.0.1)
#   HANDOFF_ALERTMANAGER_PORT           HTTP port (default 19095)
#   HANDOFF_ALERTMANAGER_START_TIMEOUT  seconds to wait for readiness (default 60)
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=alertmanager
# shellcheck source=deploy/services/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

AM_HOST="${HANDOFF_ALERTMANAGER_HOST:-127.0.0.1}"
AM_PORT="${HANDOFF_ALERTMANAGER_PORT:-19095}"
AM_TIMEOUT="${HANDOFF_ALERTMANAGER_START_TIMEOUT:-60}"
AM_CONF="$REPO_ROOT/deploy/alertmanager/alertmanager.yml"
AM_DIR="$DATA_DIR/alertmanager"
AM_DATA="$AM_DIR/data"
AM_LOG_DIR="$AM_DIR/logs"
AM_LOG="$AM_LOG_DIR/alertmanager.log"
AM_PID_FILE="$AM_DIR/alertmanager.pid"
AM_BIN=/usr/bin/prometheus-alertmanager

cmd_install() {
  local pkgs=()
  [ -x "$AM_BIN" ] || pkgs+=(prometheus-alertmanager)
  command -v promtool >/dev/null 2>&1 || pkgs+=(prometheus)
  command -v curl >/dev/null 2>&1 || pkgs+=(curl)
  if [ "${#pkgs[@]}" -gt 0 ]; then
    log "missing ${pkgs[*]}: installing"
    apt_install "${pkgs[@]}"
  fi
  [ -x "$AM_BIN" ] || die "$AM_BIN not found after installing prometheus-alertmanager"
  command -v promtool >/dev/null 2>&1 || die "promtool not found after installing prometheus"
}

am_pid() {
  local pid
  pid="$(pid_from_file "$AM_PID_FILE")" || return 1
  pid_matches "$pid" "alertmanager" || return 1
  printf '%s\n' "$pid"
}

am_ready() {
  curl -fsS -m 2 "http://$AM_HOST:$AM_PORT/-/ready" >/dev/null 2>&1
}

cmd_start() {
  cmd_install
  local pid
  if pid="$(am_pid)"; then
    if am_ready; then
      log "already running (pid $pid) at http://$AM_HOST:$AM_PORT; log: $AM_LOG"
      return 0
    fi
    log "process $pid is up but not ready yet; waiting"
  else
    rm -f "$AM_PID_FILE"
    if port_open "$AM_HOST" "$AM_PORT"; then
      die "port $AM_HOST:$AM_PORT is already taken by another process (not ours: no live pid in $AM_PID_FILE); stop it or set HANDOFF_ALERTMANAGER_PORT"
    fi
    "$AM_BIN" --version >/dev/null 2>&1 || die "$AM_BIN does not run"
    mkdir -p "$AM_DATA" "$AM_LOG_DIR"
    log "starting Alertmanager on http://$AM_HOST:$AM_PORT, config $AM_CONF, data $AM_DATA"
    setsid nohup "$AM_BIN" \
      --config.file="$AM_CONF" \
      --storage.path="$AM_DATA" \
      --web.listen-address="$AM_HOST:$AM_PORT" \
      --cluster.listen-address= \
      --log.level=info \
      >"$AM_LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$AM_PID_FILE"
  fi
  local deadline=$((SECONDS + AM_TIMEOUT))
  until am_ready; do
    if ! pid_alive "$pid"; then
      rm -f "$AM_PID_FILE"
      show_log_tail "$AM_LOG"
      die "Alertmanager (pid $pid) exited during startup; log: $AM_LOG"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      show_log_tail "$AM_LOG"
      die "Alertmanager (pid $pid) not ready on http://$AM_HOST:$AM_PORT after ${AM_TIMEOUT}s; log: $AM_LOG"
    fi
    sleep 0.5
  done
  log "ready: http://$AM_HOST:$AM_PORT (pid $pid); log: $AM_LOG"
}

cmd_stop() {
  local pid
  if ! pid="$(am_pid)"; then
    rm -f "$AM_PID_FILE"
    log "not running"
    return 0
  fi
  log "stopping Alertmanager (pid $pid)"
  stop_pid "$pid" "Alertmanager" 30
  pid_alive "$pid" && die "Alertmanager (pid $pid) did not exit; log: $AM_LOG"
  rm -f "$AM_PID_FILE"
  log "stopped"
}

cmd_status() {
  local pid
  if pid="$(am_pid)"; then
    if am_ready; then
      echo "alertmanager: running, pid $pid, url http://$AM_HOST:$AM_PORT, data $AM_DATA, log $AM_LOG"
      return 0
    fi
    echo "alertmanager: process $pid running but not ready on http://$AM_HOST:$AM_PORT; log $AM_LOG"
    return 3
  fi
  echo "alertmanager: not running (data $AM_DATA, log $AM_LOG)"
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
