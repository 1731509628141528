#!/usr/bin/env bash
# A shell session against `hindbrain serve`: create a key, learn, recall, report the outcome,
# read the tenant's own views. Needs curl and jq.
#   hindbrain --home ./brain keys create --tenant acme     # prints the key once
#   hindbrain --home ./brain serve --port 8080 &
#   HINDBRAIN_API_KEY=hb_... bash examples/curl.sh
set -euo pipefail
BASE=${HINDBRAIN_URL:-http://127.0.0.1:8080}
AUTH="Authorization: Bearer ${HINDBRAIN_API_KEY:?set HINDBRAIN_API_KEY to a key from 'hindbrain keys create'}"
post() { curl -sS -X POST "$BASE$1" -H "$AUTH" -H 'Content-Type: application/json' -d "$2"; }

curl -sS "$BASE/readyz"; echo
FR=$(post /v1/learn '{"condition": "submit does nothing in IAM", "action": "switch to the admin account"}' \
     | jq -r .fragment_id)
PACK=$(post /v1/recall '{"query": "IAM submit does nothing", "agent": "sh-agent", "task": "t-1"}')
echo "$PACK" | jq -r .prompt
RECALL=$(echo "$PACK" | jq -r .recall_id)
post /v1/outcome "{\"recall_id\": \"$RECALL\", \"task\": \"t-1\", \"applied\": [\"$FR\"], \"success\": true}"; echo
post /v1/sql '{"query": "SELECT item_id, applied, success FROM feedback"}' | jq .
post /v1/perceive '{"kind": "nonsense", "text": "x"}' | jq .   # a 422 naming the field "kind"
