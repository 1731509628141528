"""Kafka record batches straight into the ``events`` view: no Python object per record.

A replay of the ``perceptions`` topic used to cost, per record, an aiokafka record object, a
``LogEntry``, a slice of the Avro container, an Arrow row out of chDB and back in. Here the
bytes the broker sends go to chDB almost as they are:

* A Kafka v2 record is ``length, attributes (1 byte), timestamp delta, offset delta, key,
  value, headers``, its numbers zig-zag varints: exactly Avro's ``long``, its key and value
  Avro's ``bytes``, an empty header list Avro's empty array. A value written by hindbrain is
  ``magic + fingerprint`` (10 bytes) and the perception's Avro body. So one uncompressed
  record batch's records *are* Avro rows of the schema ``FRAMED`` (the Kafka fields around
  the perception's own fields), and the records of all the batches of a range, joined, are
  one Avro block: ``frame`` walks the 61-byte batch headers, checks their CRC-32C as aiokafka
  does (``schemas._avro.crc32c``: the CPU's crc32 instruction), checks every record of a batch
  in C (``schemas._avro.check_records``: no object made) and joins the record sections.
* One ``INSERT … SELECT … FROM file(…, 'Avro')`` (``insert_sql``) projects the rows into
  ``events`` inside chDB. Its few checks (``invalid_reason``'s, the sentinel) throw before
  anything is written (the ``ORDER BY`` makes chDB read every row, checks included, before the
  first reaches the table). A refused record, in ``frame`` or in the statement: the caller
  takes the per-record path for the whole range: slower, never different.

What a record must be to be taken here (else the range falls back), checked by ``frame``:
* *in its place*: record attributes 0, its offset delta its index in its batch, its record
  length exactly what its fields take, no record headers, the batch exactly its records;
* a non-null UTF-8 key (the per-record reader decodes it strictly) and a non-null value of the
  current perception's 10-byte header and a body the C reader reads to the value's last byte
  (what the per-record path's decode takes whole), every string valid UTF-8 as Python's strict
  decoder has it.
These ran as SQL in the statement until round fourteen: ~20 of a statement's ~30 ms of planning
and ~a quarter of its CPU (a 9.4k-row range), for ~1.3 us a record in C.
Checked by the statement: ``invalid_reason``'s checks (empty tenant or id, a time outside years
1–9999: such a row is a dead letter, which the per-record path writes with its reason), and after
the last record a sentinel record of ours must read back exactly (chDB reads what ``frame``
checked, or the statement throws).
Compressed batches, old message formats or a broker error: ``frame``/the reader return None
(the per-record path). Control batches carry no records and are skipped, as aiokafka does.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from dataclasses import dataclass

from hindbrain.projections.views import TABLES
from hindbrain.schemas import _avro
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.columnar import _SHM, PERCEPTIONS, _bytes, _canonical, _long
from hindbrain.streams.processing import TS_US_RANGE
from hindbrain.streams.replay_chunk import read_range

_BATCH = struct.Struct(">qiibIhiqqqhii")  # the v2 record batch header, 61 bytes
_COMPRESSION, _CONTROL = 0x07, 0x20
_SENTINEL_KEY = b"\x00hindbrain-sentinel"


@dataclass(frozen=True)
class Framed:
    """The Avro container of a range's records, and where each batch starts in it."""

    data: bytes
    rows: int  # records of the batches (the sentinel not counted)
    in_range: int  # of those, the records at offsets [start, stop): what the insert writes
    starts: list[int]  # row number of each batch's first record
    bases: list[int]  # each batch's base offset

    @property
    def shift(self) -> int | None:
        """A row's offset minus its row number when that is one number for every batch (batches
        back to back, no offset gaps: a range as a producer writes it), else None."""
        shift = self.bases[0] - self.starts[0]
        return shift if all(b - s == shift for s, b in zip(self.starts, self.bases, strict=True)) else None


def _framed_schema() -> dict:
    perception = json.loads(_canonical(registry.current("perception").parsed))
    head = [("_hb_len", "long"), ("_hb_attrs", {"type": "fixed", "name": "HbAttrs", "size": 1}),
            ("_hb_ts_delta", "long"), ("_hb_offset_delta", "long"), ("_hb_key", "bytes"), ("_hb_vlen", "long"),
            ("_hb_header", {"type": "fixed", "name": "HbHeader", "size": len(PERCEPTIONS.header)})]
    headers = {"type": "array", "items": {"type": "record", "name": "HbKafkaHeader",
                                          "fields": [{"name": "k", "type": "bytes"}, {"name": "v", "type": "bytes"}]}}
    return {"type": "record", "name": "HbKafkaRecord",
            "fields": [{"name": n, "type": t} for n, t in head] + perception["fields"]
            + [{"name": "_hb_headers", "type": headers}]}


FRAMED = _framed_schema()
PROGRAM = registry.current("perception").program  # the perception body, as ``_avro.check_records`` walks it
assert PROGRAM is not None, "the current perception schema has no C program: frame cannot check its records"
TOPIC = PERCEPTIONS.topic
_META = _long(2) + _bytes(b"avro.schema") + _bytes(json.dumps(FRAMED).encode()) + _bytes(b"avro.codec") \
    + _bytes(b"null") + _long(0)


def kafka_record(offset_delta: int, key: bytes, value: bytes) -> bytes:
    """One v2 record (no headers, attributes 0, timestamp delta 0), as the broker stores it."""
    body = b"\x00" + _long(0) + _long(offset_delta) + _bytes(key) + _bytes(value) + _long(0)
    return _long(len(body)) + body


def _sentinel() -> bytes:
    record = {"envelope": envelope("perception", "hindbrain", ts_us=TS_US_RANGE[0]), "kind": "message", "text": None,
              "system": None, "identity": None, "action": None, "expected": None, "actual": None, "entities": [],
              "scope": {}, "signal": None, "success": None, "polarity": None, "session": None, "speaker": None,
              "emotion": None, "origin": None}
    return kafka_record(-1, _SENTINEL_KEY, registry.encode("perception", record))


SENTINEL = _sentinel()


def next_offset(records: bytes) -> int | None:
    """One past the last offset of the last whole batch of a record set; None if it holds none."""
    view, pos, reached = memoryview(records), 0, None
    while pos + _BATCH.size <= len(view):
        base, length, _, _, _, _, last_delta, *_ = _BATCH.unpack_from(view, pos)
        if pos + 12 + length > len(view):
            break
        reached, pos = base + last_delta + 1, pos + 12 + length
    return reached


def frame(record_sets: list[bytes], start: int, stop: int) -> Framed | None:
    """The records of ``record_sets`` (Fetch responses' raw record sets, in offset order) as one
    Avro container of ``FRAMED`` rows plus the sentinel; batches wholly outside ``[start,
    stop)`` are left out (rows of a batch crossing a bound are filtered by the insert). None
    if a batch is not an uncompressed v2 batch, fails its CRC or holds a record the insert does
    not take (module doc: checked here, in C); a batch cut at the end of a
    record set (the fetch's byte limit) is left to the next fetch, which starts there."""
    parts: list = []
    starts, bases = [], []
    rows = size = in_range = 0
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
                inside = min(stop, base + last_delta + 1) - max(start, base)
                if inside != last_delta + 1 and last_delta + 1 != count:
                    return None  # crosses a bound with gaps in its offsets (compacted): which are inside?
                if not _avro.check_records(PROGRAM, PERCEPTIONS.header, records, pos + _BATCH.size, end, count):
                    return None  # a record not in its place, not a current perception, or not UTF-8
                in_range += count if inside == last_delta + 1 else inside
                parts.append(view[pos + _BATCH.size:end])
                starts.append(rows)
                bases.append(base)
                rows += count
                size += end - pos - _BATCH.size
            pos = end
    if not rows:
        return None
    parts.append(SENTINEL)
    size += len(SENTINEL)
    sync = os.urandom(16)
    data = b"".join((b"Obj\x01", _META, sync, _long(rows + 1), _long(size), *parts, sync))
    return Framed(data, rows, in_range, starts, bases)


def _checks(framed: Framed) -> str:
    """True for a row the insert takes: a valid perception (``invalid_reason``'s checks; the rest of
    a row's checks ran in ``frame``), and after the last record the sentinel read back exactly."""
    header = PERCEPTIONS.header.hex()
    record = " AND ".join(["length(envelope.tenant) > 0", "length(envelope.record_id) > 0",
                           f"envelope.ts_us BETWEEN {TS_US_RANGE[0]} AND {TS_US_RANGE[1]}"])
    sentinel = (f"_hb_offset_delta = -1 AND _hb_key = unhex('{_SENTINEL_KEY.hex()}') "
                f"AND _hb_header = unhex('{header}')")
    return f"if(_hb_row < {framed.rows}, {record}, {sentinel})"


def _array(values: list[int]) -> str:
    """``values`` as a UInt64 array in SQL: a string split once when the statement is planned.
    An array literal of a range's ~1,000-5,000 batch numbers cost ~2 us an element to plan (a
    pair of them in one ``transform`` ~20 ms for 4,700 batches, as a split string ~7 ms)."""
    if not values:
        return "[]::Array(UInt64)"
    return f"arrayMap(x -> toUInt64(x), splitByChar(',', '{','.join(map(str, values))}'))"


_EVENT_SOURCES = {"tenant": "envelope.tenant", "event_id": "envelope.record_id",
                  "ts": "fromUnixTimestamp64Micro(envelope.ts_us, 'UTC')", "agent": "envelope.agent",
                  "task": "envelope.task", "producer": "envelope.producer"}


def event_sources() -> tuple[str, str]:
    """The ``events`` columns (log coordinates aside) and their SQL from a decoded perception."""
    names = [name for name, _ in TABLES["events"].columns]
    return ", ".join(f"`{n}`" for n in names), ", ".join(_EVENT_SOURCES.get(n, f"`{n}`") for n in names)


def _offset_sql(framed: Framed) -> str:
    """A row's offset: its batch's base plus its offset delta (``frame`` checked that the delta is
    the record's index in its batch). When the batches lie back to back, one shift for every row:
    no batch lookup to plan (the two arrays of a range's ~1,000 batches) nor to run per row."""
    if (shift := framed.shift) is not None:
        return f"toUInt64(_hb_row + {shift})"
    return (f"toUInt64(transform(_hb_row - _hb_offset_delta, {_array(framed.starts)}, {_array(framed.bases)}, "
            "toUInt64(0)) + _hb_offset_delta)")


def insert_sql(database: str, path: str, framed: Framed, partition: int, start: int, stop: int) -> str:
    """The one statement that checks every row of ``framed`` (at ``path``; ``frame`` checked its
    records) against ``invalid_reason`` and the sentinel and, if all pass, inserts the rows at
    offsets ``[start, stop)`` into ``events``; it throws otherwise."""
    names, sources = event_sources()
    offset = _offset_sql(framed)
    keep = f"_hb_row < {framed.rows} AND _hb_at >= {start} AND _hb_at < {stop}"
    # plus(): both sides are computed for every row (an AND could skip the check where keep is false)
    return (f"INSERT INTO `{database}`.`events` ({names}, _topic, _partition, "
            f"_offset) SELECT {sources}, '{PERCEPTIONS.topic}', {partition}, _hb_at FROM ("
            f"SELECT *, if(_hb_row < {framed.rows}, {offset}, toUInt64(0)) AS _hb_at FROM ("
            f"SELECT *, rowNumberInAllBlocks() AS _hb_row FROM file('{path}', 'Avro'))) "
            f"WHERE plus(throwIf(NOT ({_checks(framed)}), '{MISMATCH}'), {keep}) = 1 "
            f"ORDER BY _hb_row SETTINGS {INSERT_SETTINGS}")


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


MISMATCH = "hindbrain: a record is not what the columnar insert takes"


def insert_events(warehouse, framed: Framed, partition: int, start: int, stop: int) -> int | None:
    """Insert ``framed``'s rows at offsets ``[start, stop)`` into ``warehouse`` (a chDB one:
    ``file()`` reads this machine's file) and return how many; None, with nothing written, if
    any row fails its checks or chDB cannot read the block (the caller then takes the
    per-record path)."""
    fd, path = tempfile.mkstemp(suffix=".avro", dir=_SHM)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(framed.data)
        warehouse.command(insert_sql(warehouse.database, path, framed, partition, start, stop))
        return framed.in_range
    except Exception:  # noqa: BLE001 - a row the per-record path must take, or bytes chDB cannot read
        return None
    finally:
        os.unlink(path)


def insert_or_read(session, log, framed: Framed | None, partition: int, start: int, stop: int) -> int | list:
    """Offsets ``[start, stop)`` of a ``perceptions`` partition into ``events`` through ``framed``
    (``insert_events``): the rows written; or, when there is no frame (compressed batches, a
    broker error) or the insert refuses a row (nothing of it written), the range's log entries
    for the per-record path, which the caller projects as it does any records (replay writes
    dead letters as rows, the worker appends them to the log). Replay and the worker share it."""
    if framed is not None and (count := insert_events(session, framed, partition, start, stop)) is not None:
        return count
    return read_range(log, TOPIC, partition, start, stop)
