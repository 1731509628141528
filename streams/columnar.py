"""Columnar decode of the hot record type: many Avro bodies → one Arrow table, in native code.

Decoding a perception with fastavro builds a Python dict per record (~50 µs each under load,
most of a replay's time). Here a whole batch of current-version perceptions becomes one Avro
object container (header + one block of the concatenated bodies) that chDB's Avro reader
turns into Arrow columns; the ``events`` rows are then column operations (``project_events``).

Exactly the same records are accepted as by the per-record path (``processing.decode_entry``):
* only values written with the *current* perception schema on the ``perceptions`` topic are
  taken; any other version, type or topic goes to the per-record path;
* each body is followed in the block by a 4-byte marker (its index), declared as a last
  ``fixed`` field of the container's schema. A body with trailing bytes or cut short shifts
  what follows, so a marker reads wrong (the per-record path rejects such a body for its
  trailing bytes) and the batch falls back;
* strings must be valid UTF-8 (fastavro rejects the others; the Avro reader copies bytes);
* rows failing ``invalid_reason``'s checks (empty tenant or record id, time out of range) go
  to the per-record path, which dead-letters them with its reason.
A batch chDB cannot read at all goes to the per-record path whole: slower, never different.

``Engine`` runs one SQL query and returns Arrow: the warehouse's own chDB session when the
warehouse is chDB (chDB allows one engine path per process), or a private in-memory chDB
otherwise (a worker process, a ClickHouse server warehouse: ``file()`` must read *this*
machine's file).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hindbrain.native_calls import native_call
from hindbrain.projections.views import TABLES, VIEWS_BY_RECORD_TYPE
from hindbrain.schemas.codec import HEADER_LEN, MAGIC, registry
from hindbrain.streams import processing
from hindbrain.streams.log import LogEntry
from hindbrain.streams.principals import NO_PRINCIPALS, TOPIC_PREFIX, Principals, principal_of
from hindbrain.streams.processing import TS_US_RANGE, ProjectedBatch

Engine = Callable[[str], pa.Table]
MIN_BATCH = 256  # below this, one chDB query (~2-5 ms) costs more than the dicts it saves
_MARKER = "_hb_index"
_SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None  # a container never touches the disk there


@dataclass(frozen=True)
class _Hot:
    record_type: str
    topic: str
    header: bytes  # magic + fingerprint of the current writer schema
    container_schema: bytes  # the writer schema + the marker field, as JSON
    utf8_sql: str | None  # true when every string of the row is UTF-8; None: checked in Arrow instead


def _hot(record_type: str, topic: str) -> _Hot:
    current = registry.current(record_type)
    schema = json.loads(_canonical(current.parsed))
    checks = _utf8_checks(schema, "")
    schema["fields"].append({"name": _MARKER, "type": {"type": "fixed", "name": "HbIndex", "size": 4}})
    utf8 = None if checks is None else " AND ".join(checks) or "1"
    return _Hot(record_type, topic, MAGIC + current.fingerprint, json.dumps(schema).encode(), utf8)


def _utf8_checks(avro, expr: str, depth: int = 0) -> list[str] | None:
    """chDB expressions true when every string under ``expr`` (of Avro type ``avro``) is valid
    UTF-8 (``isValidUTF8`` refuses what Python's strict decoder refuses: overlong forms,
    surrogates, past U+10FFFF); None for a type this does not cover (the Arrow check then runs)."""
    if isinstance(avro, str):
        return [f"isValidUTF8({expr})"] if avro == "string" else (
            [] if avro in ("null", "boolean", "int", "long", "float", "double", "bytes") else None)
    if isinstance(avro, list):  # a union: only [null, T] is covered
        kinds = [t for t in avro if t != "null"]
        return _utf8_checks(kinds[0], f"assumeNotNull({expr})", depth) if len(kinds) == 1 else None
    kind, var = avro.get("type"), f"x{depth}"
    if kind == "record":
        out = []
        for f in avro["fields"]:
            inner = _utf8_checks(f["type"], f"tupleElement({expr}, '{f['name']}')" if expr else f"`{f['name']}`",
                                 depth)
            if inner is None:
                return None
            out += inner
        return out
    if kind in ("array", "map"):
        items = _utf8_checks(avro["items" if kind == "array" else "values"], var, depth + 1)
        if items is None:
            return None
        values = f"mapValues({expr})" if kind == "map" else expr
        out = [f"arrayAll({var} -> {' AND '.join(items)}, {values})"] if items else []
        return out + ([f"arrayAll({var} -> isValidUTF8({var}), mapKeys({expr}))"] if kind == "map" else [])
    if kind in ("fixed", "enum"):  # bytes of a set size; symbols are Avro names (ASCII)
        return []
    return _utf8_checks(kind, expr, depth) if isinstance(kind, str) else None


def _canonical(parsed) -> str:
    from fastavro.schema import to_parsing_canonical_form

    return to_parsing_canonical_form(parsed)


PERCEPTIONS = _hot("perception", "perceptions")
# Only ``events`` reads perceptions: a second view on them would need its columnar projector too.
assert [v.table.name for v in VIEWS_BY_RECORD_TYPE["perception"]] == ["events"], "perception views changed"


def split_hot(entries: list, hot: _Hot = PERCEPTIONS) -> tuple[list[int], list[int]]:
    """Indexes of ``entries`` the columnar path may take, and of the others: each has a ``topic`` and
    its encoded ``value`` (a ``LogEntry``, or a ``Decoded`` the runner kept with its value)."""
    fast, slow = [], []
    header, topic = hot.header, hot.topic
    for i, e in enumerate(entries):
        (fast if e.topic == topic and e.value[:HEADER_LEN] == header else slow).append(i)
    return fast, slow


def container(values: list[bytes], hot: _Hot = PERCEPTIONS) -> bytes:
    """An Avro object container with one block: each value's body (past the single-object
    header) followed by its 4-byte index."""
    sync = os.urandom(16)
    markers = _indexes(len(values))
    parts: list = [None] * (2 * len(values))
    parts[0::2] = [memoryview(v)[HEADER_LEN:] for v in values]
    parts[1::2] = [markers[i:i + 4] for i in range(0, len(markers), 4)]
    block = b"".join(parts)
    meta = _long(2) + _bytes(b"avro.schema") + _bytes(hot.container_schema) + _bytes(b"avro.codec") \
        + _bytes(b"null") + _long(0)
    return b"".join((b"Obj\x01", meta, sync, _long(len(values)), _long(len(block)), block, sync))


def _indexes(n: int) -> bytes:
    """0 .. n-1 as little-endian uint32, back to back: the markers, and what they must read."""
    return np.arange(n, dtype="<u4").tobytes()


def _long(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bytes(b: bytes) -> bytes:
    return _long(len(b)) + b


def decode(values: list[bytes], engine: Engine, hot: _Hot = PERCEPTIONS) -> pa.Table | None:
    """The records of ``values`` (each a full log value with ``hot.header``) as one Arrow
    table, row i from value i; None if chDB cannot read them or any row is not exactly what
    the per-record decoder reads (the caller then decodes them one by one)."""
    data = container(values, hot)
    fd, path = tempfile.mkstemp(suffix=".avro", dir=_SHM)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        utf8 = hot.utf8_sql or "1"
        table = engine(f"SELECT *, {utf8} AS _hb_utf8 FROM file('{path}', 'Avro')")
    except Exception:  # noqa: BLE001 - a block chDB cannot read: the per-record path says why, per record
        return None
    finally:
        os.unlink(path)
    if table.num_rows != len(values):
        return None
    markers = table.column(_MARKER).combine_chunks().cast(pa.binary(4))
    if markers.null_count or markers.buffers()[1].to_pybytes()[4 * markers.offset:4 * (markers.offset + len(values))] \
            != _indexes(len(values)):
        return None
    if not pc.all(table.column("_hb_utf8").cast(pa.bool_())).as_py():
        return None
    if hot.utf8_sql is None:
        try:
            table.validate(full=True)  # UTF-8 of every string column, in a second pass
        except pa.ArrowInvalid:
            return None
    return table.drop_columns([_MARKER, "_hb_utf8"])


def valid_rows(table: pa.Table) -> pa.ChunkedArray:
    """``invalid_reason``'s checks as a mask (the topic and type are known to match)."""
    env = table.column("envelope")
    tenant, record_id, ts = (pc.struct_field(env, name) for name in ("tenant", "record_id", "ts_us"))
    return pc.and_(pc.and_(pc.not_equal(pc.binary_length(tenant), 0), pc.not_equal(pc.binary_length(record_id), 0)),
                   pc.and_(pc.greater_equal(ts, TS_US_RANGE[0]), pc.less_equal(ts, TS_US_RANGE[1])))


_EVENTS = TABLES["events"]
_PAYLOAD = ("kind", "text", "system", "identity", "action", "expected", "actual", "entities", "scope",
            "signal", "success", "polarity", "session", "speaker", "emotion", "origin")


def project_events(table: pa.Table, topic: str | pa.Array, partitions: pa.Array, offsets: pa.Array) -> pa.Table:
    """``events`` rows of decoded perceptions (``projections.events.project``, by columns); ``topic``: the rows'
    log topic, one for all or one a row."""
    env = table.column("envelope")
    field = {name: pc.struct_field(env, name) for name in ("tenant", "record_id", "ts_us", "agent", "task",
                                                            "producer")}
    columns = {"tenant": field["tenant"], "event_id": field["record_id"], "ts": field["ts_us"],
               "agent": field["agent"], "task": field["task"], "producer": field["producer"],
               **{name: table.column(name) for name in _PAYLOAD},
               "_topic": pa.array([topic] * table.num_rows, pa.string()) if isinstance(topic, str) else topic,
               "_partition": partitions, "_offset": offsets}
    schema = _EVENTS.arrow_schema()
    return pa.Table.from_arrays([_cast(columns[f.name], f.type) for f in schema], schema=schema)


def _cast(column, to: pa.DataType):
    if pa.types.is_timestamp(to):
        return column.cast(pa.int64()).cast(to)
    return column.cast(to)


def events_of(entries: list[LogEntry], engine: Engine,
              principals: Principals = NO_PRINCIPALS) -> tuple[pa.Table | None, list[int]]:
    """The ``events`` rows of the hot entries, columnar, and the indexes of ``entries`` the
    per-record path must take (every entry when the batch is small or chDB refuses it). The
    perceptions of principals' topics are hot here too, each row held to its principal's binding
    (``bound_rows``); a row that fails it goes to the per-record path, which dead-letters it with
    its reason."""
    fast, slow = split_hot(entries)
    by_principal, slow = split_principals(entries, slow)
    fast = sorted(fast + by_principal)
    if len(fast) < MIN_BATCH:
        return None, list(range(len(entries)))
    decoded = decode([entries[i].value for i in fast], engine)
    if decoded is None:
        return None, list(range(len(entries)))
    topics = pa.array([entries[i].topic for i in fast], pa.string())
    mask = valid_rows(decoded) if not by_principal else pc.and_(valid_rows(decoded),
                                                                bound_rows(decoded, topics, principals))
    if not pc.all(mask).as_py():
        keep = mask.to_pylist()
        slow += [i for i, ok in zip(fast, keep, strict=True) if not ok]
        fast = [i for i, ok in zip(fast, keep, strict=True) if ok]
        decoded, topics = decoded.filter(mask), topics.filter(mask)
        slow.sort()
    partitions = pa.array([entries[i].partition for i in fast], pa.uint32())
    offsets = pa.array([entries[i].offset for i in fast], pa.uint64())
    return project_events(decoded, PERCEPTIONS.topic if not by_principal else topics, partitions, offsets), slow


def split_principals(entries: list, indexes: list[int]) -> tuple[list[int], list[int]]:
    """Of ``indexes`` (of ``entries``), those of current-version perceptions on a principal's topic, and the
    others. Not ``split_hot``'s: the ``INSERT … SELECT`` paths take only the shared topic (they check no binding)."""
    header, taken, others = PERCEPTIONS.header, [], []
    for i in indexes:
        e = entries[i]
        (taken if e.topic.startswith(TOPIC_PREFIX) and e.value[:HEADER_LEN] == header else others).append(i)
    return taken, others


def bound_rows(table: pa.Table, topics: pa.Array, principals: Principals) -> pa.Array:
    """``invalid_reason``'s principal check as a mask: each row's tenant (and agent, for a principal bound to one)
    is what its topic's principal is bound to; a row of an unbound principal's topic, or of the shared topic, is
    not (the shared topic's rows are never given here: ``events_of``)."""
    binding = {t: principals.get(principal_of(t)) for t in set(topics.to_pylist())}
    tenant_of = pa.array([b.tenant if b else None for b in map(binding.get, topics.to_pylist())], pa.string())
    agent_of = pa.array([b.agent if b else None for b in map(binding.get, topics.to_pylist())], pa.string())
    bound_to_agent = pa.array([bool(b and b.agent) for b in map(binding.get, topics.to_pylist())])
    env = table.column("envelope")
    tenant, agent = (pc.cast(pc.struct_field(env, name), pa.string()) for name in ("tenant", "agent"))
    same_tenant = pc.fill_null(pc.equal(tenant, tenant_of), False)
    same_agent = pc.fill_null(pc.equal(agent, agent_of), False)
    return pc.and_(same_tenant, pc.or_(pc.invert(bound_to_agent), same_agent))


def project_batch(entries: list[LogEntry], ts_us: int, engine: Engine | None,
                  principals: Principals = NO_PRINCIPALS) -> ProjectedBatch:
    """``processing.project_batch`` of ``entries``, the hot records by columns when ``engine``
    is given: the same rows, dead letters and count; a principal's topic's rows are held to its
    binding in ``principals`` on either path."""
    if engine is None:
        return processing.project_batch(entries, ts_us, principals=principals)
    events, slow = events_of(entries, engine, principals)
    if events is None:
        return processing.project_batch(entries, ts_us, principals=principals)
    batch = processing.project_batch([entries[i] for i in slow], ts_us, principals=principals)
    batch.tables.setdefault("events", []).append(events)
    batch.count += events.num_rows
    return batch


_EVENT_SOURCES = {"tenant": "envelope.tenant", "event_id": "envelope.record_id",
                  "ts": "fromUnixTimestamp64Micro(envelope.ts_us, 'UTC')", "agent": "envelope.agent",
                  "task": "envelope.task", "producer": "envelope.producer"}


def event_sources() -> tuple[str, str]:
    """The ``events`` columns (log coordinates aside) and their SQL from a decoded perception."""
    names = [name for name, _ in _EVENTS.columns]
    return ", ".join(f"`{n}`" for n in names), ", ".join(_EVENT_SOURCES.get(n, f"`{n}`") for n in names)


def insert_sql(database: str, path: str, partitions: list[int], offsets: list[int], hot: _Hot = PERCEPTIONS) -> str:
    """One statement that checks every row of the container at ``path`` (its marker, UTF-8,
    ``invalid_reason``'s checks) and, if all pass, inserts their ``events`` rows; it throws
    before writing any row otherwise (``ORDER BY``: every row is read and checked before the
    first reaches the table)."""
    from hindbrain.streams.kafka_batches import INSERT_SETTINGS

    names, sources = event_sources()
    checks = " AND ".join([f"reinterpretAsUInt32({_MARKER}) = _hb_row", hot.utf8_sql or "0",
                           "length(envelope.tenant) > 0", "length(envelope.record_id) > 0",
                           f"envelope.ts_us BETWEEN {TS_US_RANGE[0]} AND {TS_US_RANGE[1]}"])
    return (f"INSERT INTO `{database}`.`{_EVENTS.name}` ({names}, _topic, _partition, _offset) "
            f"SELECT {sources}, '{hot.topic}', {row_values_sql(partitions)}, {row_values_sql(offsets)} "
            f"FROM (SELECT *, rowNumberInAllBlocks() AS _hb_row FROM file('{path}', 'Avro')) "
            f"WHERE throwIf(NOT ({checks}), 'hindbrain: a record the columnar insert does not take') = 0 "
            f"ORDER BY _hb_row SETTINGS {INSERT_SETTINGS}")


MAX_RUNS = 64  # past this many runs of consecutive values a row's value is looked up in one array


def row_values_sql(values: list[int]) -> str:
    """An expression of ``_hb_row`` (0-based) that is ``values[_hb_row]``. One value repeated is itself;
    runs of consecutive values (an embedded round's offsets: one run, or a few where other records sat
    between) are written as ``shift + _hb_row`` by run, not as a literal array of every value: chDB
    parsing and indexing two 5,000-value arrays cost ~3.8 us a row of the insert's CPU (docs/speed.md
    round seventeen). Past ``MAX_RUNS`` runs, the array."""
    if values and values.count(values[0]) == len(values):
        return str(values[0])  # one partition
    starts, shifts = [], []
    for row, value in enumerate(values):
        if not shifts or value - row != shifts[-1]:
            starts.append(row)
            shifts.append(value - row)
    if len(shifts) == 1:
        return f"({shifts[0]} + _hb_row)"
    if len(shifts) <= MAX_RUNS:
        return (f"(arrayElement([{','.join(map(str, shifts))}], arrayLastIndex(x -> x <= _hb_row, "
                f"[{','.join(map(str, starts))}])) + _hb_row)")
    return f"arrayElement([{','.join(map(str, values))}], _hb_row + 1)"


def insert_events(entries: list[LogEntry], warehouse) -> bool:
    """The ``events`` rows of ``entries`` (hot entries, from ``split_insertable``) straight into
    a chDB ``warehouse`` in one ``INSERT … SELECT`` (no row crosses into Python); False, with
    nothing written, when chDB cannot read them or any row fails a check (the caller then
    projects them by ``project_batch``)."""
    return insert_values([e.value for e in entries], [e.partition for e in entries], [e.offset for e in entries],
                         warehouse)


def insert_values(values: list[bytes], partitions: list[int], offsets: list[int], warehouse) -> bool:
    """``insert_events`` of log values (each with the current perception's header, on the perceptions
    topic) at ``partitions``/``offsets``: the embedded projector's round holds the values its caller
    encoded, so chDB decodes them off the interpreter lock (``streams.runner``)."""
    fd, path = tempfile.mkstemp(suffix=".avro", dir=_SHM)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(container(values))
        warehouse.command(insert_sql(warehouse.database, path, partitions, offsets))
    except Exception:  # noqa: BLE001 - a row the per-record path must take (with its reason), or unreadable bytes
        return False
    finally:
        os.unlink(path)
    return True


def split_insertable(entries: list[LogEntry], warehouse, engine: Engine | None) -> tuple[list[LogEntry],
                                                                                         list[LogEntry]]:
    """``(hot, rest)``: the entries one ``INSERT … SELECT`` may take (``insert_or_project``) and
    the others, each in log order. Nothing is hot unless the warehouse is chDB, the columnar
    decode is on (``engine``), ``HINDBRAIN_KAFKA_BATCHES`` is not 0 and at least ``MIN_BATCH``
    entries are hot."""
    from hindbrain.streams import kafka_batches

    if engine is None or not kafka_batches.enabled() or not warehouse.url.startswith("chdb://"):
        return [], entries
    fast, slow = split_hot(entries)
    if len(fast) < MIN_BATCH:
        return [], entries
    return [entries[i] for i in fast], [entries[i] for i in slow]


def insert_or_project(hot: list[LogEntry], ts_us: int, warehouse, engine: Engine | None) -> ProjectedBatch:
    """``hot`` inserted by one ``INSERT … SELECT`` (``insert_events``): an empty batch that counts
    them. If the insert refuses any row, nothing of it is written and ``hot`` is projected here
    (``project_batch``, dead letters included) for the caller to insert: the same rows either way."""
    if not hot or insert_events(hot, warehouse):
        return ProjectedBatch(count=len(hot))
    return project_batch(hot, ts_us, engine)


# "0" turns the columnar path off (the per-record path alone): the baseline of bench/distributed.py.
SWITCH = "HINDBRAIN_COLUMNAR_DECODE"


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


def memory_engine() -> Engine:
    """A private in-memory chDB (a process without a chDB warehouse)."""
    import chdb

    def engine(sql: str):
        with native_call():  # C++ with the GIL released (``hindbrain.native_calls``)
            return chdb.query(sql, "ArrowTable")
    return engine


def engine_for(warehouse) -> Engine | None:
    """The warehouse's session if it is chDB (one engine path per process), else in-memory chDB;
    None when the columnar path is switched off."""
    if not enabled():
        return None
    if warehouse.url.startswith("chdb://"):
        return warehouse.query_arrow
    return memory_engine()
