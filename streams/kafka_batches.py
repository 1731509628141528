"""Kafka record batches straight into the ``events`` view: no Python object per record.

A replay of the ``perceptions`` topic used to cost, per record, an aiokafka record object, a
``LogEntry``, a slice of the Avro container, an Arrow row out of chDB and back in. Here the
bytes the broker sends become chDB's own columns in one C pass:

* ``frame`` walks the 61-byte v2 batch headers, checks their CRC-32C as aiokafka does
  (``schemas._avro.crc32c``: the CPU's crc32 instruction), and hands the records sections of
  the batches that reach into the range to ``_avro.native_block``. That walks every record
  (its Kafka fields, then the perception's Avro body by the schema's compiled program, without
  the GIL) and writes the rows at offsets ``[start, stop)`` as one ClickHouse ``Native`` block:
  a column per perception field the ``events`` view keeps (``COLUMNS``), each row's offset
  its batch's base plus its index (``_offset``).
* One ``INSERT … SELECT … FROM file(…, 'Native')`` (``insert_sql``) writes them into ``events``:
  chDB reads Native columns with no parse of its own and the statement has nothing left to
  check (until round fifteen the block was an Avro container of the records as they are, which
  chDB parsed, ~2.9 us a record, and checked with a sentinel, ``throwIf`` and a sort: docs/speed.md).

What a record must be to be taken here (else the range falls back), checked by ``native_block``:
* *in its place*: record attributes 0, its offset delta its index in its batch, its record
  length exactly what its fields take, no record headers, the batch exactly its records;
* a non-null UTF-8 key (the per-record reader decodes it strictly) and a non-null value of the
  current perception's 10-byte header and a body the C reader reads to the value's last byte
  (what the per-record path's decode takes whole), every string valid UTF-8 as Python's strict
  decoder has it;
* a row in the range passes ``invalid_reason``'s checks (``NONEMPTY``, ``BOUNDED``: an empty
  tenant or id, a time outside years 1–9999 is a dead letter, which the per-record path writes
  with its reason).
A refused record, compressed batches, old message formats or a broker error: ``frame``/the reader
return None and the caller takes the per-record path for the whole range: slower, never
different. Control batches carry no records and are skipped, as aiokafka does.
"""

from __future__ import annotations

import os
import struct
import tempfile
from dataclasses import dataclass

from hindbrain.projections.views import TABLES
from hindbrain.schemas import _avro
from hindbrain.schemas.codec import registry
from hindbrain.streams.columnar import _SHM, PERCEPTIONS, _bytes, _long
from hindbrain.streams.processing import TS_US_RANGE
from hindbrain.streams.replay_chunk import read_range

_BATCH = struct.Struct(">qiibIhiqqqhii")  # the v2 record batch header, 61 bytes
_COMPRESSION, _CONTROL = 0x07, 0x20


@dataclass(frozen=True)
class Framed:
    """A range's perceptions as one ClickHouse Native block (``_avro.native_block``)."""

    data: bytes
    rows: int  # the records at offsets [start, stop): what the insert writes


def _leaves(program: tuple, path: str = "") -> list[str]:
    """The program's leaf fields in schema order, nested records flattened (``envelope.tenant``): the
    order ``native_block`` numbers its columns in."""
    if program[0] != _RECORD:
        return [path]
    return [leaf for name, field in zip(program[1], program[2], strict=True)
            for leaf in _leaves(field, f"{path}{name}" if not path else f"{path}.{name}")]


_RECORD = 7  # avro_encoder.compile_program's record opcode
PROGRAM = registry.current("perception").program  # the perception body, as ``_avro.native_block`` walks it
assert PROGRAM is not None, "the current perception schema has no C program: frame cannot check its records"
TOPIC = PERCEPTIONS.topic
# the ``events`` columns (log coordinates aside) read from another leaf than their own name
_EVENT_LEAVES = {"tenant": "envelope.tenant", "event_id": "envelope.record_id", "ts": "envelope.ts_us",
                 "agent": "envelope.agent", "task": "envelope.task", "producer": "envelope.producer"}
_EVENT_COLUMNS = [name for name, _ in TABLES["events"].columns]
_WANTED = {_EVENT_LEAVES.get(n, n) for n in _EVENT_COLUMNS}
COLUMNS = tuple(leaf if leaf in _WANTED else None for leaf in _leaves(PROGRAM))  # the leaves the block keeps
assert set(COLUMNS) >= _WANTED, f"events columns with no perception leaf: {sorted(_WANTED - set(COLUMNS))}"
# invalid_reason's checks, run by native_block on every row it keeps (such a row is a dead letter,
# which the per-record path writes with its reason)
NONEMPTY = ("envelope.tenant", "envelope.record_id")
BOUNDED = ("envelope.ts_us", *TS_US_RANGE)


def kafka_record(offset_delta: int, key: bytes, value: bytes) -> bytes:
    """One v2 record (no headers, attributes 0, timestamp delta 0), as the broker stores it."""
    body = b"\x00" + _long(0) + _long(offset_delta) + _bytes(key) + _bytes(value) + _long(0)
    return _long(len(body)) + body


def next_offset(records: bytes) -> int | None:
    """One past the last offset of the last whole batch of a record set; None if it holds none."""
    view, pos, reached = memoryview(records), 0, None
    while pos + _BATCH.size <= len(view):
        base, length, _, _, _, _, last_delta, *_ = _BATCH.unpack_from(view, pos)
        if pos + 12 + length > len(view):
            break
        reached, pos = base + last_delta + 1, pos + 12 + length
    return reached


def native_block(batches: list[tuple], start: int, stop: int) -> tuple[bytes, int] | None:
    """``(Native block, rows)`` of the records of ``batches`` (``(data, begin, end, count, base)``: a v2
    batch's records section) at offsets ``[start, stop)``, every record checked (module doc); None if one
    is refused. The walk releases the GIL."""
    return _avro.native_block(PROGRAM, PERCEPTIONS.header, COLUMNS, NONEMPTY, BOUNDED, batches, start, stop)


def frame(record_sets: list[bytes], start: int, stop: int) -> Framed | None:
    """The records of ``record_sets`` (Fetch responses' raw record sets, in offset order) at offsets
    ``[start, stop)`` as one Native block (``native_block``); batches wholly outside the range are left
    out. None if a batch is not an uncompressed v2 batch, fails its CRC or holds a record the insert
    does not take (module doc: checked in C); a batch cut at the end of a record set (the fetch's byte
    limit) is left to the next fetch, which starts there."""
    batches = []
    for records in record_sets:
        view, pos = memoryview(records), 0
        while pos + _BATCH.size <= len(view):
            base, length, _, magic, crc, attrs, last_delta, *_, count = _BATCH.unpack_from(view, pos)
            end = pos + 12 + length
            if end > len(view):
                break
            if magic != 2 or attrs & _COMPRESSION or _avro.crc32c(records, pos + 21, end) != crc:
                return None
            if not attrs & _CONTROL and count and base < stop and base + last_delta >= start:
                batches.append((records, pos + _BATCH.size, end, count, base))
            pos = end
    if not batches or (block := native_block(batches, start, stop)) is None or not block[1]:
        return None
    return Framed(*block)


def insert_sql(database: str, path: str, partition: int) -> str:
    """The one statement that inserts the Native block at ``path`` (``frame``: its records checked, its
    rows those of the range) into ``events``, with each row's log coordinates."""
    names = ", ".join(f"`{n}`" for n in _EVENT_COLUMNS)
    sources = ", ".join("fromUnixTimestamp64Micro(`envelope.ts_us`, 'UTC')" if n == "ts"
                        else f"`{_EVENT_LEAVES.get(n, n)}`" for n in _EVENT_COLUMNS)
    return (f"INSERT INTO `{database}`.`events` ({names}, _topic, _partition, _offset) "
            f"SELECT {sources}, '{PERCEPTIONS.topic}', {partition}, `_offset` FROM file('{path}', 'Native') "
            f"SETTINGS {INSERT_SETTINGS}")


# Record-batch inserts in flight at once (replay, the worker), each on its own chDB session: the
# MergeTree write of one range is single-threaded (sort, compress, write), so two use two cores.
INSERTERS = 2

# One thread per insert (replay and the worker run inserts side by side instead). No ReplacingMergeTree merge
# of the block at insert time: it cost ~a fifth of the insert's CPU and only collapses duplicate
# records *within* one range, which every read already collapses (``FINAL``), as it does those
# of two ranges or two deliveries.
INSERT_SETTINGS = "max_threads = 1, optimize_on_insert = 0, compile_expressions = 0"

# "0" turns this path off (the columnar decode of aiokafka's records): a baseline of bench/distributed.py.
SWITCH = "HINDBRAIN_KAFKA_BATCHES"


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def insert_events(warehouse, framed: Framed, partition: int) -> int | None:
    """Insert ``framed``'s rows into ``warehouse`` (a chDB one: ``file()`` reads this machine's file)
    and return how many; None, with nothing written, if chDB cannot read the block (the caller then
    takes the per-record path)."""
    fd, path = tempfile.mkstemp(suffix=".native", dir=_SHM)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(framed.data)
        warehouse.command(insert_sql(warehouse.database, path, partition))
        return framed.rows
    except Exception:  # noqa: BLE001 - bytes chDB cannot read: the per-record path decides
        return None
    finally:
        os.unlink(path)


def insert_or_read(session, log, framed: Framed | None, partition: int, start: int, stop: int) -> int | list:
    """Offsets ``[start, stop)`` of a ``perceptions`` partition into ``events`` through ``framed``
    (``insert_events``): the rows written; or, when there is no frame (compressed batches, a
    broker error) or the insert refuses a row (nothing of it written), the range's log entries
    for the per-record path, which the caller projects as it does any records (replay writes
    dead letters as rows, the worker appends them to the log). Replay and the worker share it."""
    if framed is not None and (count := insert_events(session, framed, partition)) is not None:
        return count
    return read_range(log, TOPIC, partition, start, stop)
