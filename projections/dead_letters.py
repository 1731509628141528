"""``dead_letters``: records that could not be decoded, validated or projected, with the reason.

Keyed by the original record's log coordinates, so the row the live runner wrote (from a
``DeadLetter`` record it appended) and the row a replay derives again are the same row.
"""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="dead_letters",
    columns=(
        ("tenant", "String"),
        ("source_topic", "String"),
        ("source_offset", "UInt64"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("stage", "LowCardinality(String)"),
        ("reason", "String"),
        ("original_hex", "String"),
    ),
    order_by=("source_topic", "source_offset"),
    delivery_columns=("ts", "source_offset"),  # when, and where in *this* log, it was dead-lettered
)
RECORD_TYPES = ("dead_letter",)


def project(record_type: str, record: dict, position) -> list[dict]:
    row = {
        "tenant": record["envelope"]["tenant"],
        "source_topic": record["topic"],
        "source_offset": record["position"],
        "ts": record["envelope"]["ts_us"],
        "stage": record["stage"],
        "reason": record["reason"],
        "original_hex": bytes(record["original"]).hex(),
    }
    return [stamp(row, position)]
