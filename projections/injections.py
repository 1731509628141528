"""``injections``: what each recall actually put into the agent's context (and, in an A/B
window, under which arm)."""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="injections",
    columns=(
        ("tenant", "String"),
        ("injection_id", "String"),
        ("recall_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("agent", "Nullable(String)"),
        ("task", "Nullable(String)"),
        ("item_ids", "Array(String)"),
        ("arms", "Array(String)"),
        ("tokens", "UInt64"),
        ("budget_tokens", "Nullable(Int32)"),
    ),
    order_by=("tenant", "injection_id"),
)
RECORD_TYPES = ("injection",)


def project(record_type: str, record: dict, position) -> list[dict]:
    env, items = record["envelope"], record["items"]
    row = {
        "tenant": env["tenant"],
        "injection_id": env["record_id"],
        "recall_id": record["recall_id"],
        "ts": env["ts_us"],
        "agent": env["agent"],
        "task": env["task"],
        "item_ids": [i["item_id"] for i in items],
        "arms": [i["arm"] or "" for i in items],
        "tokens": sum(i["tokens"] for i in items),
        "budget_tokens": record["budget_tokens"],
    }
    return [stamp(row, position)]
