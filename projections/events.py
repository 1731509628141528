"""``events``: every perceived event, as the agent reported it (the timeline)."""

from __future__ import annotations

import pyarrow as pa

from hindbrain.projections.table import Table, map_array, stamp

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


def project_columns(records: list[dict], positions: list) -> pa.Table:
    """``project``'s rows of many perceptions as one Arrow table, built column by column: no row
    dict a record (the embedded projector's round, ``streams.runner``; the same rows as
    ``TABLE.to_arrow`` of ``project``'s, tested). Pure; raises where ``project`` would (a
    missing field), for the caller to take the per-record path."""
    envelopes = [r["envelope"] for r in records]
    columns = {"tenant": [e["tenant"] for e in envelopes], "event_id": [e["record_id"] for e in envelopes],
               "ts": [e["ts_us"] for e in envelopes], "agent": [e["agent"] for e in envelopes],
               "task": [e["task"] for e in envelopes], "producer": [e["producer"] for e in envelopes],
               **{name: [r[name] for r in records] for name in _PAYLOAD},
               "_topic": [p.topic for p in positions], "_partition": [p.partition for p in positions],
               "_offset": [p.offset for p in positions]}
    schema = TABLE.arrow_schema()
    return pa.Table.from_arrays([map_array(columns[f.name], f.type) if pa.types.is_map(f.type) else
                                 pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)
