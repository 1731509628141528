#!/usr/bin/env bash
# Start a single-node Apache Kafka 4.x broker (KRaft, broker+controller in one JVM) on
# 127.0.0.1:${HINDBRAIN_KAFKA_PORT:-19092}; return once it answers clients. See README.md.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

WAIT_S="${HINDBRAIN_KAFKA_WAIT:-60}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
# JIT and GC flags (Kafka's own variable name): G1 and the full JIT suit a broker that lives long.
# The test suite's broker (Makefile) lives minutes: it sets C1 only (issue 31: see deploy/kafka/README.md).
PERF_OPTS="${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20}"
T0=$SECONDS

die() { echo "kafka-up: $*" >&2; exit 1; }

show_logs() {
  local f
  for f in "$LOGDIR/server.log" "$LOGDIR/kafka.out"; do
    if [[ -s "$f" ]]; then
      echo "----- last 40 lines of $f -----" >&2
      tail -n 40 "$f" >&2
    fi
  done
  if grep -qE '^\[[^]]*\] (ERROR|FATAL)' "$LOGDIR/server.log" 2>/dev/null; then
    echo "----- last ERROR lines of $LOGDIR/server.log -----" >&2
    grep -E '^\[[^]]*\] (ERROR|FATAL)' "$LOGDIR/server.log" | tail -n 5 >&2
  fi
}

fail() {  # stop what we started, show the log, exit non-zero
  echo "kafka-up: $*" >&2
  show_logs
  local pid
  if pid="$(our_pid)"; then stop_pid "$pid" 10 || true; fi
  rm -f "$PIDFILE"
  exit 1
}

wait_ready() {  # $1 = pid, $2 = port
  local deadline=$((SECONDS + WAIT_S))
  until "${PROBE[@]}" ready "$2" 1; do
    alive "$1" || fail "broker (pid $1) exited during startup"
    ((SECONDS < deadline)) || fail "broker not ready on 127.0.0.1:$2 after ${WAIT_S}s"
    sleep 0.5
  done
}

if [[ "$ACL" == 1 ]]; then  # no default secrets: the brain's and the agents' passwords come from the caller
  [[ -n "${HINDBRAIN_KAFKA_BRAIN_PASSWORD:-}" && -n "${HINDBRAIN_KAFKA_AGENT_PASSWORD:-}" ]] ||
    die "HINDBRAIN_KAFKA_ACL=1 needs HINDBRAIN_KAFKA_BRAIN_PASSWORD and HINDBRAIN_KAFKA_AGENT_PASSWORD"
  export HINDBRAIN_KAFKA_ACL  # probe.py logs in as the brain
fi

grant_agent() {  # ACL mode: the agent principal may write its own perceptions topic (perceptions.by.agent), nothing else
  [[ "$ACL" == 1 ]] || return 0
  "${PROBE[@]}" grant-agent "$PORT" "${HINDBRAIN_KAFKA_PREFIX:-hindbrain.}" || fail "granting the agent's ACLs failed"
  echo "  (ACL mode: SASL/PLAIN as brain or agent; agent may write ${HINDBRAIN_KAFKA_PREFIX:-hindbrain.}perceptions.by.agent only)"
}

command -v java >/dev/null || die "java not found (Kafka 4.x needs Java 17+)"
command -v python3 >/dev/null || die "python3 not found"
java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
[[ "${java_major%%.*}" -ge 17 ]] 2>/dev/null || die "Java ${java_major:-?} found; Kafka 4.x brokers need Java 17+"

mkdir -p "$CACHE"
abs_data_dir
mkdir -p "$LOGDIR"

# One kafka-up at a time per data dir (fd 9, closed for the JVM so it does not hold the lock).
if command -v flock >/dev/null; then
  exec 9>"$DATA/.up.lock"
  flock 9
fi

# ---- 1. jars from Maven Central (skipped when the stamp matches pom.xml) ----
want_stamp="$(sha256sum "$KAFKA_HOME_DIR/pom.xml" | cut -d' ' -f1)"
have_stamp() { [[ "$(cat "$LIBS/.stamp" 2>/dev/null || true)" == "$want_stamp" ]]; }
if ! have_stamp && command -v flock >/dev/null; then
  exec 8>"$CACHE/.fetch.lock"  # data dirs may differ, the jar cache is shared
  flock 8
fi
if ! have_stamp; then
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch the Kafka jars)"
  echo "kafka-up: fetching Kafka jars with Maven into $LIBS ..."
  tmp="$CACHE/libs.tmp.$$"
  rm -rf "$tmp"
  # (Debian's mvn 3.8 prints bare ANSI resets even with -q -B: filtered out.)
  if ! mvn -q -B -f "$KAFKA_HOME_DIR/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp" 2>&1 | sed -u 's/\x1b\[0m//g'; then
    rm -rf "$tmp"
    die "mvn failed (see above)"
  fi
  ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || { rm -rf "$tmp"; die "mvn copied no kafka jar"; }
  echo "$want_stamp" >"$tmp/.stamp"
  rm -rf "$LIBS"
  mv "$tmp" "$LIBS"
fi
exec 8>&-

# ---- 2. already running? ----
if pid="$(our_pid)"; then
  run_port="$(cat "$DATA/broker.port" 2>/dev/null || echo "$PORT")"
  [[ "$run_port" == "$PORT" ]] ||
    die "a broker for $DATA already runs on port $run_port (pid $pid), not $PORT; run kafka-down.sh first"
  wait_ready "$pid" "$PORT"
  echo "kafka ready on 127.0.0.1:$PORT"
  echo "  (already running: pid $pid, data $DATA, log $LOGDIR/server.log)"
  grant_agent
  exit 0
fi
rm -f "$PIDFILE"

# ---- 3. ports ----
"${PROBE[@]}" port-free "$PORT" ||
  die "port 127.0.0.1:$PORT is in use by another process (set HINDBRAIN_KAFKA_PORT to use another)"
ctl_port="$(cat "$DATA/controller.port" 2>/dev/null || true)"
if [[ -z "$ctl_port" || "$ctl_port" == "$PORT" ]] || ! "${PROBE[@]}" port-free "$ctl_port"; then
  ctl_port="$("${PROBE[@]}" free-port)"
  [[ "$ctl_port" != "$PORT" ]] || ctl_port="$("${PROBE[@]}" free-port)"
fi
echo "$PORT" >"$DATA/broker.port"
echo "$ctl_port" >"$DATA/controller.port"

# ---- 4. config ----
BROKER_PORT="$PORT" CONTROLLER_PORT="$ctl_port" DATA_DIR="$DATA" python3 - \
  "$KAFKA_HOME_DIR/server.properties" "$DATA/server.properties" <<'PY'
import os, sys
text = open(sys.argv[1]).read()
for key in ("BROKER_PORT", "CONTROLLER_PORT", "DATA_DIR"):
    text = text.replace(f"@{key}@", os.environ[key])
open(sys.argv[2], "w").write(text)
PY
if [[ "$ACL" == 1 ]]; then
  chmod 600 "$DATA/server.properties"
  BROKER_PORT="$PORT" CONTROLLER_PORT="$ctl_port" python3 "$KAFKA_HOME_DIR/acl_properties.py" \
    >>"$DATA/server.properties"
fi

CP="$LIBS/*"
read -r -a HEAP <<<"$HEAP_OPTS"
read -r -a PERF <<<"$PERF_OPTS"
JVM_OPTS=(
  "${PERF[@]}" -XX:+ExitOnOutOfMemoryError
  -Djava.awt.headless=true
  "-Dkafka.logs.dir=$LOGDIR"
  "-Dlog4j2.configurationFile=$KAFKA_HOME_DIR/log4j2.properties"
)

# ---- 5. format storage once (a fresh random cluster id) ----
if [[ ! -f "$DATA/kraft-logs/meta.properties" ]]; then
  cluster_id="$("${PROBE[@]}" cluster-id)"
  echo "kafka-up: formatting $DATA/kraft-logs (cluster id $cluster_id)"
  if ! java -Xmx256m "${JVM_OPTS[@]}" -cp "$CP" kafka.tools.StorageTool format \
      --cluster-id "$cluster_id" --config "$DATA/server.properties" \
      >"$LOGDIR/format.log" 2>&1 9>&-; then
    cat "$LOGDIR/format.log" >&2
    die "storage format failed"
  fi
fi

# ---- 6. start in the background, in its own session (survives the calling shell/make) ----
{
  echo
  echo "===== $(date -Is) kafka-up: starting broker on 127.0.0.1:$PORT (controller $ctl_port) ====="
} >>"$LOGDIR/kafka.out"
setsid java "${HEAP[@]}" "${JVM_OPTS[@]}" -cp "$CP" kafka.Kafka "$DATA/server.properties" \
  >>"$LOGDIR/kafka.out" 2>&1 </dev/null 9>&- &
pid=$!
echo "$pid" >"$PIDFILE"

wait_ready "$pid" "$PORT"
echo "kafka ready on 127.0.0.1:$PORT"
echo "  (pid $pid, ready in $((SECONDS - T0))s, data $DATA, log $LOGDIR/server.log)"
grant_agent
