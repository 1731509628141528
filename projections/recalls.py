"""``recalls``: every recall with what it was asked, what came back and what was injected."""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="recalls",
    columns=(
        ("tenant", "String"),
        ("recall_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("agent", "Nullable(String)"),
        ("task", "Nullable(String)"),
        ("query", "Nullable(String)"),
        ("situation", "Map(String, String)"),
        ("trigger", "Nullable(String)"),
        ("scope", "Map(String, String)"),
        ("budget_tokens", "Nullable(Int32)"),
        ("layers", "Array(String)"),
        ("candidate_ids", "Array(String)"),
    ),
    order_by=("tenant", "recall_id"),
)
RECORD_TYPES = ("recall",)


def project(record_type: str, record: dict, position) -> list[dict]:
    env = record["envelope"]
    row = {
        "tenant": env["tenant"],
        "recall_id": record["recall_id"],
        "ts": env["ts_us"],
        "agent": env["agent"],
        "task": env["task"],
        "query": record["query"],
        "situation": record["situation"],
        "trigger": record["trigger"],
        "scope": record["scope"],
        "budget_tokens": record["budget_tokens"],
        "layers": record["layers"],
        "candidate_ids": [c["item_id"] for c in record["candidates"]],
    }
    return [stamp(row, position)]
