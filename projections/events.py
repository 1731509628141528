"""``events``: every perceived event, as the agent reported it (the timeline)."""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

# A part of up to this many bytes (uncompressed) is written *compact*: every column in one file,
# instead of a file or more per column (ClickHouse's default stops at 10 MiB). A replay range or a
# worker fetch of ~1 KB events is 5-25 MB: as a wide part that is ~90 files created, written and
# renamed per insert, which made a Kafka replay ~1.7x slower on a busy machine (docs/speed.md,
# "Round four"). Merges make wide parts past this size, as before; what a query reads is the same.
COMPACT_UP_TO = 128 * 1024 * 1024

TABLE = Table(
    name="events",
    columns=(
        ("tenant", "String"),
        ("event_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("agent", "Nullable(String)"),
        ("task", "Nullable(String)"),
        ("kind", "LowCardinality(String)"),
        ("text", "Nullable(String)"),
        ("system", "Nullable(String)"),
        ("identity", "Nullable(String)"),
        ("action", "Nullable(String)"),
        ("expected", "Nullable(String)"),
        ("actual", "Nullable(String)"),
        ("entities", "Array(String)"),
        ("scope", "Map(String, String)"),
        ("signal", "Nullable(String)"),
        ("success", "Nullable(Bool)"),
        ("polarity", "Nullable(Float64)"),
        ("session", "Nullable(String)"),
        ("speaker", "Nullable(String)"),
        ("emotion", "Nullable(String)"),
        ("origin", "Nullable(String)"),  # who produced the text (agent, user, tool, document): perception v3
        ("producer", "String"),
    ),
    order_by=("tenant", "event_id"),
    settings=(("min_bytes_for_wide_part", COMPACT_UP_TO),),
)
RECORD_TYPES = ("perception",)

_PAYLOAD = ("kind", "text", "system", "identity", "action", "expected", "actual", "entities", "scope",
            "signal", "success", "polarity", "session", "speaker", "emotion", "origin")


def project(record_type: str, record: dict, position) -> list[dict]:
    env = record["envelope"]
    row = {
        "tenant": env["tenant"],
        "event_id": env["record_id"],
        "ts": env["ts_us"],
        "agent": env["agent"],
        "task": env["task"],
        "producer": env["producer"],
    }
    for name in _PAYLOAD:
        row[name] = record[name]
    return [stamp(row, position)]
