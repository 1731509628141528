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
  one Avro block: ``frame`` walks the 61-byte batch headers (a few hundred per chunk, never
  a record), checks their CRC as aiokafka does, and joins the record sections.
* One ``INSERT … SELECT … FROM file(…, 'Avro')`` (``insert_sql``) projects the rows into
  ``events`` inside chDB. Every row is checked in the same statement, and one failed check
  throws before anything is written (the ``ORDER BY`` makes chDB read every row, checks
  included, before the first reaches the table). Then the caller takes the per-record path
  for the whole range: slower, never different.

What a row must be to be taken here (else the range falls back):
* a current-version perception (the 10-byte header is this schema's), no record headers,
  record attributes 0, a UTF-8 key (the per-record reader decodes it strictly);
* *in its place*: its offset delta is its index in its batch (``transform`` of the row
  number minus the delta must be a batch start whose batch is longer than the delta), and
  its record length is what its Kafka fields take. A value with trailing bytes or cut short
  shifts the rows after it, whose 10-byte header, delta, attributes or length then read
  wrong; after the last record a sentinel record of ours must read back exactly (chDB skips
  bytes left over in a block), and chDB must read exactly the rows the block declares.
  (Checking each value's size against its parsed fields as well cost 1.7x the replay and
  adds nothing against damage: only a producer crafting non-canonical Avro could shift a
  value unseen, and such a producer can write any valid record it likes anyway.)
* every string valid UTF-8 and ``invalid_reason``'s checks passed (such a row is a dead
  letter, which the per-record path writes with its reason).
Compressed batches, old message formats or a broker error: ``frame``/the reader return None
(the per-record path). Control batches carry no records and are skipped, as aiokafka does.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from dataclasses import dataclass

from aiokafka.record.util import calc_crc32c

from hindbrain.projections.views import TABLES
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.columnar import _SHM, PERCEPTIONS, _bytes, _canonical, _long, _utf8_checks
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
    counts: list[int]  # records in each batch
    bases: list[int]  # each batch's base offset


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
    if a batch is not an uncompressed v2 batch or fails its CRC; a batch cut at the end of a
    record set (the fetch's byte limit) is left to the next fetch, which starts there."""
    parts: list = []
    starts, counts, bases = [], [], []
    rows = size = in_range = 0
    for records in record_sets:
        view, pos = memoryview(records), 0
        while pos + _BATCH.size <= len(view):
            base, length, _, magic, crc, attrs, last_delta, *_, count = _BATCH.unpack_from(view, pos)
            end = pos + 12 + length
            if end > len(view):
                break
            if magic != 2 or attrs & _COMPRESSION or calc_crc32c(view[pos + 21:end]) != crc:
                return None
            if not attrs & _CONTROL and count and base < stop and base + last_delta >= start:
                inside = min(stop, base + last_delta + 1) - max(start, base)
                if inside != last_delta + 1 and last_delta + 1 != count:
                    return None  # crosses a bound with gaps in its offsets (compacted): which are inside?
                in_range += count if inside == last_delta + 1 else inside
                parts.append(view[pos + _BATCH.size:end])
                starts.append(rows)
                counts.append(count)
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
    return Framed(data, rows, in_range, starts, counts, bases)


def _zigzag(expr: str) -> str:
    """The zig-zag encoding (UInt64) of the Int64 ``expr`` (a Kafka/Avro long)."""
    return f"reinterpretAsUInt64(bitXor(bitShiftLeft(toInt64({expr}), 1), bitShiftRight(toInt64({expr}), 63)))"


def _varint_size(zigzag: str) -> str:
    """Bytes of the varint of the zig-zag-encoded column ``zigzag`` (computed once, in the
    innermost SELECT: spelled out in each of the nine terms it made the statement ~a fifth
    slower to plan)."""
    return "(1 + " + " + ".join(f"({zigzag} >= {1 << (7 * k)})" for k in range(1, 10)) + ")"


def _length_size(expr: str) -> str:
    """``_varint_size`` of a length (>= 0 and < 2^34: a record is at most a few MB), cheaper:
    the zig-zag of n is 2n, so each threshold is halved and no bit operation is needed."""
    return "(1 + " + " + ".join(f"({expr} >= {1 << (7 * k - 1)})" for k in range(1, 5)) + ")"


def _checks(framed: Framed) -> str:
    """True for a row taken as it is: in its place, a current perception, valid (module doc)."""
    header = PERCEPTIONS.header.hex()
    starts, counts = _array(framed.starts), _array(framed.counts)
    delta = "_hb_offset_delta"
    length = (f"1 + {_varint_size('_hb_zts')} + {_varint_size('_hb_zdelta')} + {_length_size('length(_hb_key)')}"
              f" + length(_hb_key) + {_length_size('_hb_vlen')} + _hb_vlen + 1")
    utf8 = _utf8_checks(FRAMED, "")
    assert utf8 is not None, "the perception schema has a type the UTF-8 check does not cover"
    record = " AND ".join([
        f"{delta} >= 0", f"transform(_hb_row - {delta}, {starts}, {counts}, toUInt64(0)) > {delta}",
        "_hb_attrs = '\\0'", f"_hb_header = unhex('{header}')", "empty(_hb_headers)", f"_hb_len = {length}",
        "isValidUTF8(_hb_key)", *utf8,
        "length(envelope.tenant) > 0", "length(envelope.record_id) > 0",
        f"envelope.ts_us BETWEEN {TS_US_RANGE[0]} AND {TS_US_RANGE[1]}"])
    sentinel = f"{delta} = -1 AND _hb_key = unhex('{_SENTINEL_KEY.hex()}') AND _hb_header = unhex('{header}')"
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


def insert_sql(database: str, path: str, framed: Framed, partition: int, start: int, stop: int) -> str:
    """The one statement that checks every row of ``framed`` (at ``path``) and, if all pass,
    inserts the rows at offsets ``[start, stop)`` into ``events``; it throws otherwise."""
    names, sources = event_sources()
    offset = (f"toUInt64(transform(_hb_row - _hb_offset_delta, {_array(framed.starts)}, {_array(framed.bases)}, "
              "toUInt64(0)) + _hb_offset_delta)")
    keep = f"_hb_row < {framed.rows} AND _hb_at >= {start} AND _hb_at < {stop}"
    # plus(): both sides are computed for every row (an AND could skip the check where keep is false)
    return (f"INSERT INTO `{database}`.`events` ({names}, _topic, _partition, "
            f"_offset) SELECT {sources}, '{PERCEPTIONS.topic}', {partition}, _hb_at FROM ("
            f"SELECT *, if(_hb_row < {framed.rows}, {offset}, toUInt64(0)) AS _hb_at FROM ("
            f"SELECT *, rowNumberInAllBlocks() AS _hb_row, {_zigzag('_hb_ts_delta')} AS _hb_zts, "
            f"{_zigzag('_hb_offset_delta')} AS _hb_zdelta FROM file('{path}', 'Avro'))) "
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
