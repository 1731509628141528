"""``beliefs``: beliefs induced by the hindsight jobs, from ``belief_induced`` decisions.

Jobs never write this table: they append a decision record whose ``payload_json`` holds
the belief, and this projector turns it into a row, so replaying the log rebuilds it.
"""

from __future__ import annotations

import json

from hindbrain.projections.table import Table, stamp
from hindbrain.schemas.decision_kinds import DecisionKind

TABLE = Table(
    name="beliefs",
    columns=(
        ("tenant", "String"),
        ("belief_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("text", "String"),
        ("confidence", "Float64"),
        ("support", "UInt64"),
        ("event_ids", "Array(String)"),
        ("status", "LowCardinality(String)"),
        ("scope", "Map(String, String)"),
        ("inducer", "String"),
        ("decision_id", "String"),
    ),
    order_by=("tenant", "belief_id"),
)
RECORD_TYPES = ("decision",)
BELIEF_INDUCED = DecisionKind.BELIEF_INDUCED


def project(record_type: str, record: dict, position) -> list[dict]:
    if record["kind"] != BELIEF_INDUCED:
        return []
    belief = json.loads(record["payload_json"])
    by = record["decided_by"]
    row = {
        "tenant": record["envelope"]["tenant"],
        "belief_id": belief["belief_id"],
        "ts": record["envelope"]["ts_us"],
        "text": belief["text"],
        "confidence": float(belief["confidence"]),
        "support": int(belief["support"]),
        "event_ids": list(record["evidence_ids"]),
        "status": belief.get("status", "active"),
        "scope": dict(belief.get("scope", {})),
        "inducer": f"{by['job']}@{by['version']} {by['parameters_json']}",
        "decision_id": record["decision_id"],
    }
    return [stamp(row, position)]
