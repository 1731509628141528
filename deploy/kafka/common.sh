# shellcheck shell=bash disable=SC2034  # variables are used by the scripts that source this
# Shared by kafka-up.sh and kafka-down.sh (sourced, not run).
# Layout:  $KAFKA_HOME_DIR/cache/libs       jars from Maven Central (+ .stamp)
#          $DATA/server.properties          rendered from ../server.properties
#          $DATA/kraft-logs/                log.dirs (topics + KRaft metadata log)
#          $DATA/logs/server.log            broker log (log4j2.properties); kafka.out = JVM stdout/err
#          $DATA/kafka.pid, broker.port, controller.port

KAFKA_HOME_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="$KAFKA_HOME_DIR/cache"
LIBS="$CACHE/libs"
# ACL mode (HINDBRAIN_KAFKA_ACL=1, README.md): SASL/PLAIN and ACLs, its own data dir by default.
ACL="${HINDBRAIN_KAFKA_ACL:-0}"
if [[ "$ACL" == 1 ]]; then
  DATA="${HINDBRAIN_KAFKA_DATA:-$CACHE/data-acl}"
else
  DATA="${HINDBRAIN_KAFKA_DATA:-$CACHE/data}"
fi
PORT="${HINDBRAIN_KAFKA_PORT:-19092}"
PROBE=(python3 "$KAFKA_HOME_DIR/probe.py")

abs_data_dir() {  # make $DATA absolute (it is handed to a JVM whose cwd may differ)
  mkdir -p "$DATA"
  DATA="$(cd "$DATA" && pwd)"
  PIDFILE="$DATA/kafka.pid"
  LOGDIR="$DATA/logs"
}

# Print the pid in $PIDFILE if it is a live kafka.Kafka JVM for this data dir; else return 1.
our_pid() {
  local pid cmd
  [[ -f "$PIDFILE" ]] || return 1
  pid="$(tr -dc '0-9' <"$PIDFILE")"
  [[ -n "$pid" ]] || return 1
  alive "$pid" || return 1
  cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  [[ "$cmd" == *kafka.Kafka*"$DATA/server.properties"* ]] || return 1
  echo "$pid"
}

# True while the pid exists and is not a zombie (a dead child not yet reaped).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  local state
  state="$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null || true)"
  [[ "$state" != "Z" ]]
}

# Stop a pid: TERM, wait up to $2 seconds (default 20), then KILL.
stop_pid() {
  local pid="$1" grace="${2:-20}" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    alive "$pid" || return 0
    sleep 0.1
  done
  echo "kafka: pid $pid still alive after ${grace}s, sending KILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    alive "$pid" || return 0
    sleep 0.1
  done
  echo "kafka: pid $pid did not exit after KILL" >&2
  return 1
}
