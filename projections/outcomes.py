"""``outcomes``: how each task turned out, which items were applied, in how many steps."""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="outcomes",
    columns=(
        ("tenant", "String"),
        ("outcome_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("agent", "Nullable(String)"),
        ("task", "Nullable(String)"),
        ("recall_id", "Nullable(String)"),
        ("applied", "Array(String)"),
        ("success", "Bool"),
        ("steps", "Nullable(Int32)"),
        ("notes", "Nullable(String)"),
        ("producer", "String"),  # who sent it: the API key for the service's edge (windows count senders by it)
    ),
    order_by=("tenant", "outcome_id"),
)
RECORD_TYPES = ("outcome",)


def project(record_type: str, record: dict, position) -> list[dict]:
    env = record["envelope"]
    row = {
        "tenant": env["tenant"],
        "outcome_id": env["record_id"],
        "ts": env["ts_us"],
        "agent": env["agent"],
        "task": env["task"],
        "recall_id": record["recall_id"],
        "applied": record["applied"],
        "success": record["success"],
        "steps": record["steps"],
        "notes": record["notes"],
        "producer": env["producer"],
    }
    return [stamp(row, position)]
