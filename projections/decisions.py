"""``decisions``: every learning decision, with who decided it, from what, and why."""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="decisions",
    columns=(
        ("tenant", "String"),
        ("decision_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("kind", "LowCardinality(String)"),
        ("subject_ids", "Array(String)"),
        ("evidence_ids", "Array(String)"),
        ("inputs_json", "String"),
        ("reason", "String"),
        ("job", "LowCardinality(String)"),
        ("job_version", "String"),
        ("parameters_json", "String"),
        ("payload_json", "String"),
    ),
    order_by=("tenant", "decision_id"),
)
RECORD_TYPES = ("decision",)


def project(record_type: str, record: dict, position) -> list[dict]:
    env, by = record["envelope"], record["decided_by"]
    row = {
        "tenant": env["tenant"],
        "decision_id": record["decision_id"],
        "ts": env["ts_us"],
        "kind": record["kind"],
        "subject_ids": record["subject_ids"],
        "evidence_ids": record["evidence_ids"],
        "inputs_json": record["inputs_json"],
        "reason": record["reason"],
        "job": by["job"],
        "job_version": by["version"],
        "parameters_json": by["parameters_json"],
        "payload_json": record["payload_json"],
    }
    return [stamp(row, position)]
