#!/usr/bin/env bash
# A shell session against `hindbrain serve`: an agent key learns, recalls and reports the
# outcome; an analyst key reads the tenant's own views. Needs curl and jq.
#   hindbrain --home ./brain keys create --tenant acme                    # an agent key, printed once
#   hindbrain --home ./brain keys create --tenant acme --role analyst     # an analyst key
#   hindbrain --home ./brain serve --port 8080 &
#   HINDBRAIN_API_KEY=hb_... HINDBRAIN_ANALYST_KEY=hb_... bash examples/curl.sh
set -euo pipefail
BASE=${HINDBRAIN_URL:-http://127.0.0.1:8080}
AUTH="Authorization: Bearer ${HINDBRAIN_API_KEY:?set HINDBRAIN_API_KEY to an agent key from 'hindbrain keys create'}"
ANALYST="Authorization: Bearer ${HINDBRAIN_ANALYST_KEY:?set HINDBRAIN_ANALYST_KEY to a key from 'hindbrain keys create --role analyst'}"
post() { curl -sS -X POST "$BASE$1" -H "$AUTH" -H 'Content-Type: application/json' -d "$2"; }

curl -sS "$BASE/readyz"; echo
FR=$(post /v1/learn '{"condition": "submit does nothing in IAM", "action": "switch to the admin account"}' \
     | jq -r .fragment_id)
PACK=$(post /v1/recall '{"query": "IAM submit does nothing", "agent": "sh-agent", "task": "t-1"}')
echo "$PACK" | jq -r .prompt
RECALL=$(echo "$PACK" | jq -r .recall_id)
post /v1/outcome "{\"recall_id\": \"$RECALL\", \"task\": \"t-1\", \"applied\": [\"$FR\"], \"success\": true}"; echo
post /v1/perceive '{"kind": "nonsense", "text": "x"}' | jq .   # a 422 naming the field "kind"
post /v1/sql '{"query": "SELECT 1"}' | jq .                      # a 403: SQL needs an analyst key
curl -sS -X POST "$BASE/v1/sql" -H "$ANALYST" -H 'Content-Type: application/json' \
     -d '{"query": "SELECT item_id, applied, success FROM feedback"}' | jq .
