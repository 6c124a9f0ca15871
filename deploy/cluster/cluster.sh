#!/usr/bin/env bash
# A local handoff cluster on loopback, for the cluster tests (make cluster,
# make cluster-test) and for trying a cluster deployment on one machine:
#
#   ZooKeeper       1 node   127.0.0.1:26181            (coordinates ClickHouse)
#   Kafka (KRaft)   3 nodes  127.0.0.1:26092..26094     (controllers 26192..26194)
#                   topics at replication factor 3, min.insync.replicas 2
#   ClickHouse      4 nodes  127.0.0.1:26001..26004     cluster "handoff":
#                   shard 1 = 26001, 26002; shard 2 = 26003, 26004
#   handoff ingest  2        metrics 127.0.0.1:26464, 26465
#   handoff detect  2        metrics 127.0.0.1:26466, 26467
#
# Usage:
#   deploy/cluster/cluster.sh up            start what is not running, wait until ready, write cluster.env
#   deploy/cluster/cluster.sh down          stop everything (data kept)
#   deploy/cluster/cluster.sh status        one line per node; exit 3 when a node is down
#   deploy/cluster/cluster.sh start NODE    start one node (zk, kafka1..3, ch1..4, ingest1..2, detect1..2)
#   deploy/cluster/cluster.sh stop NODE     stop one node (SIGTERM)
#   deploy/cluster/cluster.sh kill NODE     kill -9 one node (fault tests)
#   deploy/cluster/cluster.sh pid NODE      print the node's pid
#   deploy/cluster/cluster.sh wipe          down, then delete the cluster's data
#
# Data, configs and logs live under $HANDOFF_DATA_DIR/cluster (default
# <repo>/.data/cluster); $HANDOFF_DATA_DIR/cluster/cluster.env has the
# variables a client needs (HANDOFF_CLUSTER_KAFKA_BROKERS, ...). The ports are
# distinct from the single-node services of deploy/services (19000, 19092,
# ...), which keep running beside it. The handoff binary is built into
# <data>/cluster/bin on every `up`. Memory: JVM heaps and ClickHouse caches
# are small (about 3 GiB in all when idle).
#
# Environment (optional): HANDOFF_CLUSTER_PORT_BASE (default 26000; every port
# above is relative to it), HANDOFF_CLUSTER_START_TIMEOUT (seconds, default
# 180), HANDOFF_KAFKA_LIBS (Kafka jars; default: those deploy/services/kafka.sh
# installs, fetched when missing), HANDOFF_CLUSTER_MIN_FREE_GB (default 20:
# `up` refuses to start with less free disk under the data directory),
# HANDOFF_CLUSTER_PROFILE (1: the ingesters and detectors started write a
# CPU profile, NODE/ingest.pprof or NODE/detect.pprof, when stopped with
# `stop`; `kill` leaves none).
#
# Disk: Kafka keeps at most 256 MiB per partition replica (log.retention.bytes),
# ClickHouse's logs 2 x 50 MiB per server; the tables grow with what is sent
# (about 40 bytes per event per replica). `status` prints the data's size.
set -euo pipefail

# shellcheck disable=SC2034 # SVC is used by lib.sh
SVC=cluster
# shellcheck source=deploy/services/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../services/lib.sh"

BASE="${HANDOFF_CLUSTER_PORT_BASE:-26000}"
TIMEOUT="${HANDOFF_CLUSTER_START_TIMEOUT:-180}"
C_DIR="$DATA_DIR/cluster"
C_ENV="$C_DIR/cluster.env"
C_BIN="$C_DIR/bin/handoff"
K_SRC="$REPO_ROOT/deploy/kafka"
# The cluster stays on Kafka 3.9 (its jars bring the ZooKeeper server the
# ClickHouse replicas use, and its log4j 1 config).
CLUSTER_KAFKA_VERSION=3.9.2
K_LIBS="${HANDOFF_KAFKA_LIBS:-$DATA_DIR/kafka/libs/$CLUSTER_KAFKA_VERSION}"
HOST=127.0.0.1
CLUSTER=handoff
DB=handoff

ZK_PORT=$((BASE + 181))
kafka_port() { echo $((BASE + 91 + $1)); }      # 26092..26094
kafka_ctrl_port() { echo $((BASE + 191 + $1)); } # 26192..26194
ch_port() { echo $((BASE + $1)); }               # 26001..26004
ch_http_port() { echo $((BASE + 120 + $1)); }    # 26121..26124
ch_inter_port() { echo $((BASE + 10 + $1)); }    # 26011..26014
ingest_metrics() { echo $((BASE + 463 + $1)); }  # 26464, 26465
detect_metrics() { echo $((BASE + 465 + $1)); }  # 26466, 26467

KAFKA_NODES=(kafka1 kafka2 kafka3)
CH_NODES=(ch1 ch2 ch3 ch4)
APP_NODES=(ingest1 ingest2 detect1 detect2)
ALL_NODES=(zk "${KAFKA_NODES[@]}" "${CH_NODES[@]}" "${APP_NODES[@]}")

brokers() { echo "$HOST:$(kafka_port 1),$HOST:$(kafka_port 2),$HOST:$(kafka_port 3)"; }
# Each ingester and detector talks to one server of each shard first
# (clickhouse-go tries the addresses in order).
ch_addrs() {
  case "$1" in
    1) echo "$HOST:$(ch_port 1),$HOST:$(ch_port 3),$HOST:$(ch_port 2),$HOST:$(ch_port 4)" ;;
    *) echo "$HOST:$(ch_port 4),$HOST:$(ch_port 2),$HOST:$(ch_port 3),$HOST:$(ch_port 1)" ;;
  esac
}

java_tool() {
  java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$K_SRC/tools-log4j.properties" -cp "$K_LIBS/*" "$@"
}

# node_dir NODE, node_pidfile NODE
node_dir() { echo "$C_DIR/$1"; }
node_pidfile() { echo "$C_DIR/$1/pid"; }
node_pattern() {
  case "$1" in
    zk) echo "ZooKeeperServerMain" ;;
    kafka*) echo "$C_DIR/$1/server.properties" ;;
    ch*) echo "$C_DIR/$1/config.xml" ;;
    ingest* | detect*) echo "$C_BIN" ;;
  esac
}

node_pid() {
  local pid
  pid="$(pid_from_file "$(node_pidfile "$1")")" || return 1
  pid_matches "$pid" "$(node_pattern "$1")" || return 1
  echo "$pid"
}

# node_ready NODE: the node answers.
node_ready() {
  case "$1" in
    zk) [ "$(echo ruok | timeout 2 bash -c "exec 3<>/dev/tcp/$HOST/$ZK_PORT; cat >&3; cat <&3" 2>/dev/null)" = imok ] ;;
    kafka*) port_open "$HOST" "$(kafka_port "${1#kafka}")" ;;
    ch*) clickhouse-client --host "$HOST" --port "$(ch_port "${1#ch}")" --connect_timeout 2 -q 'SELECT 1' >/dev/null 2>&1 ;;
    ingest*) port_open "$HOST" "$(ingest_metrics "${1#ingest}")" ;;
    detect*) port_open "$HOST" "$(detect_metrics "${1#detect}")" ;;
  esac
}

launch() { # launch NODE LOGFILE CMD...: start in the background, record the pid
  local node="$1" logf="$2"
  shift 2
  setsid nohup "$@" >"$logf" 2>&1 </dev/null &
  echo $! >"$(node_pidfile "$node")"
}

install() {
  command -v clickhouse-server >/dev/null 2>&1 || bash "$REPO_ROOT/deploy/services/clickhouse.sh" install
  if [ ! -e "$K_LIBS/.installed" ] && [ -z "${HANDOFF_KAFKA_LIBS:-}" ]; then
    HANDOFF_KAFKA_VERSION=$CLUSTER_KAFKA_VERSION bash "$REPO_ROOT/deploy/services/kafka.sh" install
  fi
  ls "$K_LIBS"/zookeeper-3*.jar >/dev/null 2>&1 || die "no ZooKeeper jar in $K_LIBS (the Kafka 3.9 jars of deploy/kafka/pom.xml include it)"
  mkdir -p "$C_DIR/bin"
  log "building handoff into $C_BIN"
  (cd "$REPO_ROOT" && go build -o "$C_BIN.tmp" ./cmd/handoff) && mv "$C_BIN.tmp" "$C_BIN"
}

start_zk() {
  local d
  d="$(node_dir zk)"
  mkdir -p "$d/data"
  cat >"$d/zoo.cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$d/data
clientPort=$ZK_PORT
clientPortAddress=$HOST
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,stat,mntr
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
EOF
  launch zk "$d/zk.log" java -Xms64m -Xmx256m -XX:+UseSerialGC -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$K_SRC/tools-log4j.properties" -Dzookeeper.admin.enableServer=false \
    -cp "$K_LIBS/*" org.apache.zookeeper.server.ZooKeeperServerMain "$d/zoo.cfg"
}

start_kafka() {
  local n="${1#kafka}" d voters
  d="$(node_dir "$1")"
  mkdir -p "$d/data" "$d/logs"
  voters="1@$HOST:$(kafka_ctrl_port 1),2@$HOST:$(kafka_ctrl_port 2),3@$HOST:$(kafka_ctrl_port 3)"
  sed -e "s#@HOST@#$HOST#g" -e "s#@PORT@#$(kafka_port "$n")#g" \
      -e "s#@CONTROLLER_PORT@#$(kafka_ctrl_port "$n")#g" -e "s#@LOG_DIRS@#$d/data#g" \
      "$K_SRC/server.properties.in" >"$d/server.properties.tmp"
  # Three nodes, each broker and controller; replicated topics. The later
  # of two equal keys wins in a properties file.
  cat >>"$d/server.properties.tmp" <<EOF

# --- local cluster (deploy/cluster/cluster.sh) ---
node.id=$n
controller.quorum.voters=$voters
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
unclean.leader.election.enable=false
num.io.threads=2
num.network.threads=2
# Disk: a 1,000,000-event fault test writes about 100 MiB to each events
# and findings partition; without a cap, repeated runs filled a 250 GB
# disk. 256 MiB per partition replica (deleted by 32 MiB segments, checked
# each minute) bounds the busy topics at a few GiB per broker.
log.retention.bytes=268435456
log.segment.bytes=33554432
log.retention.check.interval.ms=60000
EOF
  mv "$d/server.properties.tmp" "$d/server.properties"
  if [ ! -f "$d/data/meta.properties" ]; then
    [ -s "$C_DIR/kafka.cluster.id" ] || java_tool kafka.tools.StorageTool random-uuid | tail -n1 >"$C_DIR/kafka.cluster.id"
    java_tool kafka.tools.StorageTool format -t "$(cat "$C_DIR/kafka.cluster.id")" -c "$d/server.properties" >"$d/logs/format.log" 2>&1 ||
      { cat "$d/logs/format.log" >&2; die "formatting $d/data failed"; }
  fi
  launch "$1" "$d/logs/stdout.log" java -Xms128m -Xmx384m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -Djava.awt.headless=true -Dkafka.logs.dir="$d/logs" \
    -Dlog4j.configuration="file:$K_SRC/log4j.properties" \
    -cp "$K_LIBS/*" kafka.Kafka "$d/server.properties"
}

start_ch() {
  local n="${1#ch}" d shard replica
  d="$(node_dir "$1")"
  mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/format_schemas" "$d/logs"
  shard=$(((n + 1) / 2))
  replica="$1"
  sed -e "s#@DIR@#$d#g" -e "s#@USERS@#$REPO_ROOT/deploy/clickhouse/users.xml#g" \
      -e "s#@TCP_PORT@#$(ch_port "$n")#g" -e "s#@HTTP_PORT@#$(ch_http_port "$n")#g" \
      -e "s#@INTERSERVER_PORT@#$(ch_inter_port "$n")#g" \
      -e "s#@CH1_PORT@#$(ch_port 1)#g" -e "s#@CH2_PORT@#$(ch_port 2)#g" \
      -e "s#@CH3_PORT@#$(ch_port 3)#g" -e "s#@CH4_PORT@#$(ch_port 4)#g" \
      -e "s#@ZK_PORT@#$ZK_PORT#g" -e "s#@SHARD@#$shard#g" -e "s#@REPLICA@#$replica#g" \
      "$REPO_ROOT/deploy/cluster/clickhouse.xml.in" >"$d/config.xml"
  launch "$1" "$d/logs/stdout.log" clickhouse-server --config-file="$d/config.xml"
}

# The application processes read the same variables as in production
# (docs/cluster.md, "In short").
app_env() {
  local n="$2"
  echo HANDOFF_KAFKA_BROKERS="$(brokers)"
  echo HANDOFF_CLICKHOUSE_ADDR="$(ch_addrs "$n")"
  echo HANDOFF_CLICKHOUSE_CLUSTER="$CLUSTER"
  echo HANDOFF_CLICKHOUSE_DATABASE="$DB"
  echo HANDOFF_TOPIC_REPLICATION=3
  echo HANDOFF_TOPIC_PARTITIONS=6
  echo HANDOFF_METRICS_ADDR="$HOST:$(ingest_metrics "$n")"
  echo HANDOFF_DETECT_METRICS_ADDR="$HOST:$(detect_metrics "$n")"
  echo HANDOFF_DETECT_INSTANCE="$1"
  echo HANDOFF_LOG_FORMAT=json
}

start_app() {
  local node="$1" cmd="${1%[0-9]}" n="${1: -1}" d
  d="$(node_dir "$node")"
  mkdir -p "$d"
  app_env "$node" "$n" >"$d/env"
  # GOMEMLIMIT keeps each ingester small beside eight servers on one box.
  # A detector holds every open batch (up to 3 GiB during the fault
  # tests): it runs with its own default, a limit that rises
  # with what it holds (docs/detect.md, "Memory"); a fixed 256 MiB made
  # its collector run back to back.
  local mem=(GOMEMLIMIT=256MiB GOGC=50)
  [ "$cmd" = detect ] && mem=()
  local prof=()
  [ "${HANDOFF_CLUSTER_PROFILE:-0}" != 1 ] || prof=(HANDOFF_CPUPROFILE="$d/$cmd.pprof")
  launch "$node" "$d/$cmd.log" env $(cat "$d/env") "${mem[@]}" "${prof[@]}" "$C_BIN" "$cmd"
}

start_node() {
  local node="$1" pid
  if pid="$(node_pid "$node")"; then
    return 0
  fi
  case "$node" in
    zk) start_zk ;;
    kafka[1-3]) start_kafka "$node" ;;
    ch[1-4]) start_ch "$node" ;;
    ingest[12] | detect[12]) start_app "$node" ;;
    *) die "unknown node $node: one of ${ALL_NODES[*]}" ;;
  esac
  log "started $node (pid $(cat "$(node_pidfile "$node")"))"
}

wait_ready() { # wait_ready NODE...
  local deadline=$((SECONDS + TIMEOUT)) node
  for node in "$@"; do
    until node_ready "$node"; do
      # The recorded pid, alive: its command line may not show the
      # pattern yet while it execs (env, then handoff).
      pid_from_file "$(node_pidfile "$node")" >/dev/null ||
        { show_log_tail "$C_DIR/$node"/*.log "$C_DIR/$node"/logs/*.log; die "$node exited during startup; logs under $C_DIR/$node"; }
      [ "$SECONDS" -lt "$deadline" ] || die "$node not ready after ${TIMEOUT}s; logs under $C_DIR/$node"
      sleep 0.5
    done
  done
}

# The ingesters create the schema ON CLUSTER on their first start: wait until
# every server has the Distributed events table.
wait_schema() {
  local deadline=$((SECONDS + TIMEOUT)) n
  for n in 1 2 3 4; do
    until [ "$(clickhouse-client --host "$HOST" --port "$(ch_port "$n")" -q "SELECT count() FROM system.tables WHERE database = '$DB' AND name = 'events'" 2>/dev/null)" = 1 ]; do
      [ "$SECONDS" -lt "$deadline" ] || die "no table $DB.events on ch$n after ${TIMEOUT}s; see $C_DIR/ingest1/ingest.log"
      sleep 0.5
    done
  done
}

write_env() {
  cat >"$C_ENV.tmp" <<EOF
# Written by deploy/cluster/cluster.sh up; the local cluster's addresses.
export HANDOFF_CLUSTER_DIR=$C_DIR
export HANDOFF_CLUSTER_SCRIPT=$REPO_ROOT/deploy/cluster/cluster.sh
export HANDOFF_CLUSTER_KAFKA_BROKERS=$(brokers)
export HANDOFF_CLUSTER_CLICKHOUSE_ADDRS=$HOST:$(ch_port 1),$HOST:$(ch_port 2),$HOST:$(ch_port 3),$HOST:$(ch_port 4)
export HANDOFF_CLUSTER_CLICKHOUSE_CLUSTER=$CLUSTER
export HANDOFF_CLUSTER_DATABASE=$DB
export HANDOFF_CLUSTER_ZOOKEEPER=$HOST:$ZK_PORT
export HANDOFF_KAFKA_LIBS=$K_LIBS
EOF
  mv "$C_ENV.tmp" "$C_ENV"
}

# check_disk refuses to start the cluster on a nearly full disk: brokers and
# servers fail in confusing ways when writes fail, and a full disk stops
# every other process on the machine too.
check_disk() {
  local want="${HANDOFF_CLUSTER_MIN_FREE_GB:-20}" free
  mkdir -p "$C_DIR"
  free=$(df -Pk "$C_DIR" | awk 'NR==2 {print int($4 / 1048576)}')
  [ "$free" -ge "$want" ] ||
    die "only ${free} GiB free under $C_DIR, want ${want} (HANDOFF_CLUSTER_MIN_FREE_GB): free space, or delete the cluster's data with: $0 wipe"
}

cmd_up() {
  check_disk
  install
  local node
  start_node zk
  # A ClickHouse server attaches its replicated tables at start and exits
  # when ZooKeeper does not answer (seen on every restart of a cluster
  # that has tables): ZooKeeper first.
  wait_ready zk
  for node in "${KAFKA_NODES[@]}" "${CH_NODES[@]}"; do start_node "$node"; done
  wait_ready "${KAFKA_NODES[@]}" "${CH_NODES[@]}"
  write_env
  for node in "${APP_NODES[@]}"; do start_node "$node"; done
  wait_ready "${APP_NODES[@]}"
  wait_schema
  log "ready; addresses in $C_ENV"
  cmd_status
}

stop_node() { # stop_node NODE SIGNAL
  local pid
  if ! pid="$(node_pid "$1")"; then
    rm -f "$(node_pidfile "$1")"
    return 0
  fi
  if [ "$2" = KILL ]; then
    kill -KILL "$pid"
    while pid_alive "$pid"; do sleep 0.1; done
  else
    stop_pid "$pid" "$1" 60
  fi
  rm -f "$(node_pidfile "$1")"
  log "stopped $1 (pid $pid, SIG$2)"
}

cmd_down() {
  local i
  # Applications first (they flush and commit), servers last.
  for ((i = ${#ALL_NODES[@]} - 1; i >= 0; i--)); do stop_node "${ALL_NODES[$i]}" TERM; done
  rm -f "$C_ENV"
}

cmd_status() {
  local node pid rc=0
  for node in "${ALL_NODES[@]}"; do
    if pid="$(node_pid "$node")"; then
      if node_ready "$node"; then
        echo "$node: running, pid $pid, rss $(($(awk '/VmRSS/{print $2}' "/proc/$pid/status") / 1024)) MiB"
      else
        echo "$node: running, pid $pid, not answering"
        rc=3
      fi
    else
      echo "$node: down"
      rc=3
    fi
  done
  [ -d "$C_DIR" ] && echo "data: $(du -sh "$C_DIR" 2>/dev/null | cut -f1) under $C_DIR, $(df -Ph "$C_DIR" | awk 'NR==2 {print $4}') free"
  return $rc
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  start) [ -n "${2:-}" ] || die "usage: $0 start NODE"; start_node "$2"; wait_ready "$2" ;;
  stop) [ -n "${2:-}" ] || die "usage: $0 stop NODE"; stop_node "$2" TERM ;;
  kill) [ -n "${2:-}" ] || die "usage: $0 kill NODE"; stop_node "$2" KILL ;;
  pid) node_pid "${2:-}" ;;
  wipe) cmd_down; rm -rf "$C_DIR"; log "deleted $C_DIR" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
    exit 2
    ;;
esac
