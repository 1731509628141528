"""Declared tables: the single source of a view's columns, its DDL and its Arrow schema.

Every table is a ``ReplacingMergeTree`` versioned by the log offset and ordered by the
record's identity, so a record delivered twice (at-least-once) collapses into one row and
queries read ``FINAL``. Every row is stamped with its log coordinates (``_topic``,
``_partition``, ``_offset``), which also lets ``explain`` go back from a row to its record.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

LOG_COLUMNS = (("_topic", "LowCardinality(String)"), ("_partition", "UInt32"), ("_offset", "UInt64"))

_ARROW = {
    "String": pa.string(),
    "LowCardinality(String)": pa.string(),
    "Nullable(String)": pa.string(),
    "Bool": pa.bool_(),
    "Nullable(Bool)": pa.bool_(),
    "UInt32": pa.uint32(),
    "UInt64": pa.uint64(),
    "Int64": pa.int64(),
    "Float64": pa.float64(),
    "Nullable(Float64)": pa.float64(),
    "Nullable(Int32)": pa.int32(),
    "Array(String)": pa.list_(pa.string()),
    "Map(String, String)": pa.map_(pa.string(), pa.string()),
    "DateTime64(6, 'UTC')": pa.timestamp("us", tz="UTC"),
}


@dataclass(frozen=True)
class Table:
    """A projected table. ``columns`` are the projector's own; log columns are appended."""

    name: str
    columns: tuple[tuple[str, str], ...]
    order_by: tuple[str, ...]
    # Columns that depend on how the record was delivered, not on the record itself (e.g.
    # when a dead letter was written): left out of the content digest, like log columns.
    delivery_columns: tuple[str, ...] = ()
    # MergeTree settings of the table (``SETTINGS`` of its DDL), e.g. how big a part is written compact.
    settings: tuple[tuple[str, int], ...] = ()

    @property
    def content_columns(self) -> list[str]:
        """What the digest covers: the projector's columns that depend only on the record,
        so the same records give the same digest through any log (SQLite or Kafka)."""
        return [name for name, _ in self.columns if name not in self.delivery_columns]

    @property
    def all_columns(self) -> tuple[tuple[str, str], ...]:
        return self.columns + LOG_COLUMNS

    @property
    def column_names(self) -> list[str]:
        return [name for name, _ in self.all_columns]

    def create_sql(self, database: str) -> str:
        cols = ",\n    ".join(f"`{n}` {t}" for n, t in self.all_columns)
        return (
            f"CREATE TABLE IF NOT EXISTS `{database}`.`{self.name}` (\n    {cols}\n)\n"
            f"ENGINE = ReplacingMergeTree(_offset)\nORDER BY ({', '.join(self.order_by)})"
            + (f"\nSETTINGS {self.settings_sql}" if self.settings else "")
        )

    @property
    def settings_sql(self) -> str:
        return ", ".join(f"{name} = {value}" for name, value in self.settings)

    def drop_sql(self, database: str) -> str:
        return f"DROP TABLE IF EXISTS `{database}`.`{self.name}`"

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(n, _ARROW[t]) for n, t in self.all_columns])

    def to_arrow(self, rows: list[dict]) -> pa.Table:
        """Rows (dicts with every column) to an Arrow table, column by column."""
        schema = self.arrow_schema()
        arrays = []
        for field in schema:
            name = field.name  # once: ``Field.name`` makes a new str (and hash) on every access
            values = [row[name] for row in rows]
            if pa.types.is_map(field.type):
                arrays.append(map_array(values, field.type))
            else:
                arrays.append(pa.array(values, type=field.type))
        return pa.Table.from_arrays(arrays, schema=schema)


def warm_arrow() -> None:
    """pyarrow imports pandas on its first ``pa.array`` (to ask whether the input is a pandas
    array): measured 1.6 s of CPU here without cached bytecode, ~0.3-0.6 s with it. In a served
    owner that first call is its first projection, on the projector thread, while it serves:
    the import holds the GIL (the recalls wait) and lands in the served bench's window when a
    round reaches ``batch_size`` records. A server takes it before it accepts connections."""
    pa.array([], type=pa.int64())


def map_array(dicts: list[dict], map_type: pa.MapType) -> pa.MapArray:
    """Dicts to a MapArray from flat offsets, keys and items: no per-row Python objects
    (a list of pairs per row made the garbage collector run during big inserts)."""
    offsets, keys, items = [0], [], []
    for d in dicts:
        keys += d.keys()
        items += d.values()
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(
        pa.array(offsets, type=pa.int32()), pa.array(keys, type=map_type.key_type),
        pa.array(items, type=map_type.item_type),
    )


def stamp(row: dict, position) -> dict:
    """Add the log coordinates of the record the row comes from."""
    row["_topic"], row["_partition"], row["_offset"] = position.topic, position.partition, position.offset
    return row
