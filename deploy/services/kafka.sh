#!/usr/bin/env bash
# Local Apache Kafka broker (KRaft combined mode) for development and tests.
#
#   deploy/services/kafka.sh install   fetch the broker jars from Maven Central when missing
#   deploy/services/kafka.sh start     install if needed, format storage once, start, wait until ready
#   deploy/services/kafka.sh stop      stop the broker started by 'start'
#   deploy/services/kafka.sh status    exit 0 when running and answering, 3 otherwise
#   deploy/services/kafka.sh restart
#   deploy/services/kafka.sh libs      print the jar directory of the chosen version
#
# Version: Apache Kafka 4.x by default (the pom's kafka.version); set
# HANDOFF_KAFKA_VERSION=3.9.2 (any 3.9.x) to run on the 3.9 line, which stays
# supported. Jars: deploy/kafka/pom.xml, copied by Maven into
# $HANDOFF_DATA_DIR/kafka/libs/<version> (one directory per version, so a
# switch back fetches nothing). Data in .../kafka/data-<major> (a log dir
# formatted by 4.x cannot be read by 3.9, so each line keeps its own), logs
# in .../kafka/logs. One broker runs at a time: stop it to switch versions.
#
# Environment (all optional):
#   HANDOFF_DATA_DIR               project data dir (default <repo>/.data)
#   HANDOFF_KAFKA_VERSION          Kafka release (default: kafka.version in deploy/kafka/pom.xml)
#   HANDOFF_KAFKA_HOST             listen address (default 127.0.0.1)
#   HANDOFF_KAFKA_PORT             client (PLAINTEXT) port (default 19092)
#   HANDOFF_KAFKA_CONTROLLER_PORT  KRaft controller port (default 19093)
#   HANDOFF_KAFKA_START_TIMEOUT    seconds to wait for readiness (default 120)
#   HANDOFF_KAFKA_HEAP_OPTS        JVM heap options (default -Xms256m -Xmx1g)
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=kafka
# shellcheck source=deploy/services/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

K_HOST="${HANDOFF_KAFKA_HOST:-127.0.0.1}"
K_PORT="${HANDOFF_KAFKA_PORT:-19092}"
K_CTRL_PORT="${HANDOFF_KAFKA_CONTROLLER_PORT:-19093}"
K_TIMEOUT="${HANDOFF_KAFKA_START_TIMEOUT:-120}"
K_HEAP_OPTS="${HANDOFF_KAFKA_HEAP_OPTS:--Xms256m -Xmx1g}"

K_SRC="$REPO_ROOT/deploy/kafka"
K_POM="$K_SRC/pom.xml"
K_DEFAULT_VERSION="$(sed -n 's#.*<kafka.version>\(.*\)</kafka.version>.*#\1#p' "$K_POM")"
K_VERSION="${HANDOFF_KAFKA_VERSION:-$K_DEFAULT_VERSION}"
case "$K_VERSION" in
  3.9.* | 4.*) ;;
  *) die "HANDOFF_KAFKA_VERSION=$K_VERSION: supported are 4.x (default $K_DEFAULT_VERSION) and 3.9.x" ;;
esac
K_MAJOR="${K_VERSION%%.*}"
K_DIR="$DATA_DIR/kafka"
K_LIBS="$K_DIR/libs/$K_VERSION"
K_STAMP="$K_LIBS/.installed"
K_CONF_DIR="$K_DIR/config"
K_PROPS="$K_CONF_DIR/server.properties"
K_DATA="$K_DIR/data-$K_MAJOR"
K_LOG_DIR="$K_DIR/logs"
K_LOG="$K_LOG_DIR/server.log"
K_STDOUT_LOG="$K_LOG_DIR/stdout.log"
K_PID_FILE="$K_DIR/kafka.pid"
K_VERSION_FILE="$K_DIR/kafka.version" # the version the running broker was started with
K_CLUSTER_ID_FILE="$K_DATA.cluster.id"

# Kafka 3.x logs through the log4j 1.x API (reload4j), 4.x through log4j 2:
# the Maven profile, the JVM property and the config file follow the line.
if [ "$K_MAJOR" = 3 ]; then
  K_MVN_PROFILE=log4j1
  K_LOG_OPT="-Dlog4j.configuration=file:$K_SRC/log4j.properties"
  K_TOOLS_LOG_OPT="-Dlog4j.configuration=file:$K_SRC/tools-log4j.properties"
else
  K_MVN_PROFILE=log4j2
  K_LOG_OPT="-Dlog4j2.configurationFile=file:$K_SRC/log4j2.xml"
  K_TOOLS_LOG_OPT="-Dlog4j2.configurationFile=file:$K_SRC/tools-log4j2.xml"
fi

# The stamp records which pom and version the jars came from: edit the pom
# (e.g. another dependency) and the next install fetches again.
pom_hash() { printf '%s %s\n' "$(sha256sum "$K_POM" | cut -d' ' -f1)" "$K_VERSION"; }

k_installed() {
  [ -f "$K_STAMP" ] && [ "$(cat "$K_STAMP")" = "$(pom_hash)" ]
}

ensure_tools() {
  local pkgs=()
  command -v java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
  if [ "${#pkgs[@]}" -gt 0 ]; then
    log "missing ${pkgs[*]}: installing"
    apt_install "${pkgs[@]}"
  fi
  command -v java >/dev/null 2>&1 || die "java not found after install"
}

cmd_install() {
  if k_installed && command -v java >/dev/null 2>&1; then
    return 0
  fi
  ensure_tools
  if k_installed; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found after install"
  log "fetching Kafka $K_VERSION broker jars with Maven ($K_POM) into $K_LIBS"
  local tmp="$K_LIBS.tmp" mvn_log="$K_DIR/maven-install-$K_VERSION.log"
  mkdir -p "$K_DIR/libs"
  rm -rf "$tmp"
  if ! mvn -B -q -Dstyle.color=never -f "$K_POM" -P "$K_MVN_PROFILE" \
      -Dkafka.version="$K_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$tmp" >"$mvn_log" 2>&1; then
    tail -n 40 "$mvn_log" >&2 || true
    die "Maven could not fetch the Kafka $K_VERSION jars (pom $K_POM); full log: $mvn_log"
  fi
  ls "$tmp/kafka_2.13-$K_VERSION.jar" >/dev/null 2>&1 || die "no kafka_2.13-$K_VERSION.jar in $tmp after Maven; log: $mvn_log"
  rm -rf "$K_LIBS"
  mv "$tmp" "$K_LIBS"
  pom_hash >"$K_STAMP"
  log "installed kafka_2.13-$K_VERSION ($(find "$K_LIBS" -name "*.jar" | wc -l) jars) in $K_LIBS"
}

# Run a Kafka command-line class from the installed jars.
k_tool() {
  java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    "$K_TOOLS_LOG_OPT" -cp "$K_LIBS/*" "$@"
}

write_config() {
  mkdir -p "$K_CONF_DIR" "$K_DATA" "$K_LOG_DIR"
  sed -e "s#@HOST@#$K_HOST#g" \
      -e "s#@PORT@#$K_PORT#g" \
      -e "s#@CONTROLLER_PORT@#$K_CTRL_PORT#g" \
      -e "s#@LOG_DIRS@#$K_DATA#g" \
      "$K_SRC/server.properties.in" >"$K_PROPS.tmp"
  mv "$K_PROPS.tmp" "$K_PROPS"
}

# Format the KRaft storage once (a formatted dir has meta.properties).
format_storage() {
  if [ -f "$K_DATA/meta.properties" ]; then
    return 0
  fi
  local cid
  if [ -s "$K_CLUSTER_ID_FILE" ]; then
    cid="$(cat "$K_CLUSTER_ID_FILE")"
  else
    cid="$(k_tool kafka.tools.StorageTool random-uuid | tail -n1)" ||
      die "kafka.tools.StorageTool random-uuid failed"
    echo "$cid" >"$K_CLUSTER_ID_FILE"
  fi
  log "formatting KRaft storage $K_DATA (cluster id $cid)"
  local fmt_log="$K_LOG_DIR/format.log"
  if ! k_tool kafka.tools.StorageTool format -t "$cid" -c "$K_PROPS" >"$fmt_log" 2>&1; then
    cat "$fmt_log" >&2
    die "kafka.tools.StorageTool format failed for $K_DATA; log: $fmt_log"
  fi
}

k_pid() {
  local pid
  pid="$(pid_from_file "$K_PID_FILE")" || return 1
  pid_matches "$pid" "kafka.Kafka" || return 1
  printf '%s\n' "$pid"
}

# The broker answers a metadata request (lists topics).
# running_version PID: the Kafka version of the running broker, from the
# version file start writes or, for a broker started before there was one,
# from the kafka_2.13 jar on its class path.
running_version() {
  if [ -s "$K_VERSION_FILE" ]; then
    cat "$K_VERSION_FILE"
    return 0
  fi
  local cp jar
  cp="$(tr '\0' '\n' <"/proc/$1/cmdline" | grep -A1 -x -- -cp | tail -n1)"
  jar="$(ls "${cp%/\*}"/kafka_2.13-*.jar 2>/dev/null | head -n1)"
  jar="${jar##*/kafka_2.13-}"
  jar="${jar%.jar}"
  echo "${jar:-unknown}"
}

k_answers() {
  port_open "$K_HOST" "$K_PORT" || return 1
  timeout 30 java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    "$K_TOOLS_LOG_OPT" -cp "$K_LIBS/*" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "$K_HOST:$K_PORT" --list >/dev/null 2>&1
}

k_fail() {
  log "$1"
  show_log_tail "$K_STDOUT_LOG" "$K_LOG"
  die "Kafka did not start; logs: $K_LOG_DIR (broker log $K_LOG, stdout $K_STDOUT_LOG)"
}

cmd_start() {
  local pid running
  if pid="$(k_pid)"; then
    running="$(running_version "$pid")"
    if [ "$running" != "$K_VERSION" ]; then
      die "Kafka $running is running (pid $pid) but $K_VERSION was asked for (HANDOFF_KAFKA_VERSION); stop it first: deploy/services/kafka.sh stop"
    fi
  fi
  cmd_install
  if pid="$(k_pid)"; then
    if k_answers; then
      log "already running Kafka $K_VERSION (pid $pid) at $K_HOST:$K_PORT; logs: $K_LOG"
      return 0
    fi
    log "process $pid is up but not answering yet; waiting"
  else
    rm -f "$K_PID_FILE"
    local p
    for p in "$K_PORT" "$K_CTRL_PORT"; do
      if port_open "$K_HOST" "$p"; then
        die "port $K_HOST:$p is already taken by another process (not ours: no live pid in $K_PID_FILE); stop it or set HANDOFF_KAFKA_PORT / HANDOFF_KAFKA_CONTROLLER_PORT"
      fi
    done
    write_config
    format_storage
    log "starting Kafka $K_VERSION broker on $K_HOST:$K_PORT (controller $K_CTRL_PORT), data $K_DATA"
    # shellcheck disable=SC2086 # heap options are a word list
    setsid nohup java $K_HEAP_OPTS \
      -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
      -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
      -Dkafka.logs.dir="$K_LOG_DIR" \
      "$K_LOG_OPT" -cp "$K_LIBS/*" kafka.Kafka "$K_PROPS" \
      >"$K_STDOUT_LOG" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$K_PID_FILE"
    echo "$K_VERSION" >"$K_VERSION_FILE"
  fi

  local deadline=$((SECONDS + K_TIMEOUT))
  while :; do
    if ! pid_alive "$pid"; then
      rm -f "$K_PID_FILE"
      k_fail "Kafka broker (pid $pid) exited during startup"
    fi
    if k_answers; then
      break
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      k_fail "Kafka broker (pid $pid) not answering on $K_HOST:$K_PORT after ${K_TIMEOUT}s"
    fi
    sleep 1
  done
  warm_up_groups
  log "ready: Kafka $K_VERSION at $K_HOST:$K_PORT (pid $pid); logs: $K_LOG"
}

# On a new data dir, have the broker create __consumer_offsets now: the first
# FindCoordinator otherwise gets COORDINATOR_NOT_AVAILABLE while it is being
# created, and kafka-go's Reader then backs off JoinGroupBackoff (5s).
warm_up_groups() {
  if ls -d "$K_DATA"/__consumer_offsets-* >/dev/null 2>&1; then
    return 0
  fi
  log "creating __consumer_offsets (first start on this data dir)"
  for _ in 1 2 3; do
    timeout 60 java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
      "$K_TOOLS_LOG_OPT" -cp "$K_LIBS/*" org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
      --bootstrap-server "$K_HOST:$K_PORT" --describe --group handoff-warmup >/dev/null 2>&1 || true
    if ls -d "$K_DATA"/__consumer_offsets-* >/dev/null 2>&1; then
      return 0
    fi
  done
  log "warning: __consumer_offsets not created yet (the first consumer group join may be slow); log: $K_LOG"
}

cmd_stop() {
  local pid
  if ! pid="$(k_pid)"; then
    rm -f "$K_PID_FILE" "$K_VERSION_FILE"
    log "not running"
    return 0
  fi
  log "stopping Kafka broker (pid $pid)"
  stop_pid "$pid" "Kafka broker" 60
  pid_alive "$pid" && die "Kafka broker (pid $pid) did not exit; logs: $K_LOG"
  rm -f "$K_PID_FILE" "$K_VERSION_FILE"
  log "stopped"
}

cmd_status() {
  local pid
  if pid="$(k_pid)"; then
    if k_answers; then
      echo "kafka: running Kafka $(running_version "$pid"), pid $pid, brokers $K_HOST:$K_PORT, controller $K_HOST:$K_CTRL_PORT, data $K_DATA, log $K_LOG"
      return 0
    fi
    echo "kafka: process $pid running but not answering on $K_HOST:$K_PORT; log $K_LOG"
    return 3
  fi
  echo "kafka: not running (Kafka $K_VERSION would use data $K_DATA; log $K_LOG)"
  return 3
}

case "${1:-}" in
  install) cmd_install ;;
  libs) echo "$K_LIBS" ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  *)
    echo "usage: $0 {install|start|stop|restart|status|libs}" >&2
    exit 2
    ;;
esac
