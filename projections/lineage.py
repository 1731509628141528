"""``lineage``: which records concern which subject (event, fragment, belief, recall ...).

One row per (subject, record, relation). ``Brain.explain`` reads a subject's rows to find
the log positions of every record and decision behind it, then reads those records from
the log itself: the explanation is the evidence, not a summary of it.
"""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="lineage",
    columns=(
        ("tenant", "String"),
        ("subject_id", "String"),
        ("relation", "LowCardinality(String)"),
        ("record_id", "String"),
        ("record_type", "LowCardinality(String)"),
        ("ts", "DateTime64(6, 'UTC')"),
    ),
    order_by=("tenant", "subject_id", "record_id", "relation"),
)
RECORD_TYPES = ("perception", "cognition", "recall", "injection", "outcome", "decision")


def _relations(record_type: str, record: dict) -> list[tuple[str, str]]:
    env = record["envelope"]
    if record_type == "perception":
        return [(env["record_id"], "perceived")]
    if record_type == "cognition":
        return [(record["fragment_id"], "proposed")] + [(e, "supports") for e in record["event_ids"]]
    if record_type == "recall":
        return [(record["recall_id"], "issued")] + [(c["item_id"], "recalled") for c in record["candidates"]]
    if record_type == "injection":
        return [(record["recall_id"], "injected_for")] + [(i["item_id"], "injected") for i in record["items"]]
    if record_type == "outcome":
        subjects = [(a, "applied") for a in record["applied"]]
        return subjects + ([(record["recall_id"], "outcome_of")] if record["recall_id"] else [])
    return [(s, f"decision:{record['kind']}") for s in record["subject_ids"]] + [
        (e, "evidence_for_decision") for e in record["evidence_ids"]
    ]


def project(record_type: str, record: dict, position) -> list[dict]:
    env = record["envelope"]
    return [
        stamp({"tenant": env["tenant"], "subject_id": subject, "relation": relation,
               "record_id": env["record_id"], "record_type": record_type, "ts": env["ts_us"]}, position)
        for subject, relation in dict.fromkeys(_relations(record_type, record))
    ]
