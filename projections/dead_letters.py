"""``dead_letters``: records that could not be decoded, validated or projected, with the reason.

Keyed by the dead letter's id, which is derived from the original record's log coordinates
(topic, partition, offset), so the row the live runner wrote (from a ``DeadLetter`` record it
appended) and the row a replay derives again are the same row.
"""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="dead_letters",
    columns=(
        ("tenant", "String"),
        ("dead_letter_id", "String"),
        ("source_topic", "String"),
        ("source_offset", "UInt64"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("stage", "LowCardinality(String)"),
        ("reason", "String"),
        ("original_hex", "String"),
    ),
    # The id is derived from the source's (topic, partition, offset): two bad records at the
    # same offset of different partitions stay two rows.
    order_by=("source_topic", "dead_letter_id"),
    delivery_columns=("ts", "source_offset", "dead_letter_id"),  # when, and where in *this* log
)
RECORD_TYPES = ("dead_letter",)


def project(record_type: str, record: dict, position) -> list[dict]:
    row = {
        "tenant": record["envelope"]["tenant"],
        "dead_letter_id": record["envelope"]["record_id"],
        "source_topic": record["topic"],
        "source_offset": record["position"],
        "ts": record["envelope"]["ts_us"],
        "stage": record["stage"],
        "reason": record["reason"],
        "original_hex": bytes(record["original"]).hex(),
    }
    return [stamp(row, position)]
