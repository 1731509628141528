#!/usr/bin/env bash
# Stop the broker started by kafka-up.sh (TERM, up to 20 s, then KILL). Idempotent.
set -euo pipefail
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/common.sh"

GRACE_S="${HINDBRAIN_KAFKA_STOP_WAIT:-20}"

if [[ ! -d "$DATA" ]]; then
  echo "kafka not running (no data dir $DATA)"
  exit 0
fi
abs_data_dir

if pid="$(our_pid)"; then
  echo "kafka: stopping pid $pid ..."
  stop_pid "$pid" "$GRACE_S"
  rm -f "$PIDFILE"
  echo "kafka stopped"
else
  [[ -f "$PIDFILE" ]] && echo "kafka: removing stale pid file $PIDFILE"
  rm -f "$PIDFILE"
  echo "kafka not running"
fi
