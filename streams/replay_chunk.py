"""One replay chunk, made ready to insert: read → decode → project → Arrow IPC bytes.

Kept apart from ``replay`` so a worker process imports only what it needs (no warehouse
client, no chDB): it reads the SQLite log itself, and hands back Arrow streams that the
parent inserts. Pure apart from reading the log.
"""

from __future__ import annotations

import pyarrow as pa

from hindbrain.projections.views import TABLES
from hindbrain.streams import columnar
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.principals import NO_PRINCIPALS, Principals
from hindbrain.streams.processing import Decoded, ProjectedBatch, project_batch
from hindbrain.streams.sqlite_log import SqliteLog


def project_entries(entries, ts_us: int, engine: columnar.Engine | None = None,
                    principals: Principals = NO_PRINCIPALS) -> ProjectedBatch:
    """Project log entries; dead letters become rows directly (replay never appends). With an
    ``engine``, perceptions are decoded and projected by columns (``streams.columnar``). A principal's
    topic is checked against ``principals`` (the replaying log's)."""
    with gc_paused():
        batch = columnar.project_batch(entries, ts_us, engine, principals)
        for dl in batch.dead_letters:
            pos = entries[0].position._replace(topic=dl["topic"], offset=dl["position"])
            project_batch([Decoded(pos, "dead_letter", dl)], ts_us, batch)
            batch.count -= 1  # the derived row is not a record of the log
    return batch


def chunk_as_arrow(log_path: str, offset: int, limit: int, ts_us: int) -> tuple[int, int, dict[str, bytes]]:
    """``(records, dead letters, {table: Arrow IPC stream})`` for log offsets
    ``[offset, offset + limit)``."""
    log = SqliteLog(log_path)
    try:
        entries = log.read_all(offset, limit)
    finally:
        log.close()
    return entries_as_arrow(entries, ts_us)


_kafka: dict = {}  # a worker process's KafkaLog, opened once by ``open_kafka``
_engines: list = []  # a worker process's in-memory chDB for the columnar decode, made on first use


def _engine() -> columnar.Engine | None:
    if not columnar.enabled():
        return None
    if not _engines:
        _engines.append(columnar.memory_engine())
    return _engines[0]


def open_kafka(bootstrap: str, prefix: str, auth=None, principals: Principals = NO_PRINCIPALS) -> None:
    """Pool initializer: this worker's own connection to the cluster, for all its chunks, logged in as the
    replaying process is (``auth``: its ``KafkaAuth``) and checking principals' topics against its bindings."""
    from hindbrain.streams.kafka_log import KafkaLog

    _kafka["log"] = KafkaLog(bootstrap, prefix=prefix, auth=auth, principals=principals)


def kafka_chunk_as_arrow(topic: str, partition: int, offset: int, stop: int,
                         ts_us: int) -> tuple[int, int, dict[str, bytes]]:
    """``chunk_as_arrow`` for the offsets ``[offset, stop)`` of one Kafka partition."""
    log = _kafka["log"]
    return entries_as_arrow(read_range(log, topic, partition, offset, stop), ts_us, log.principals)


def read_range(log, topic: str, partition: int, offset: int, stop: int) -> list:
    """The entries of one partition at offsets ``[offset, stop)`` (a gap in the offsets leaves
    the range short; what lies past ``stop`` belongs to the next range)."""
    entries = []
    while offset < stop and (read := log.read(topic, partition, offset, stop - offset)):
        entries += [e for e in read if e.offset < stop]
        offset = read[-1].offset + 1
    return entries


def entries_as_arrow(entries, ts_us: int, principals: Principals = NO_PRINCIPALS) -> tuple[int, int, dict[str, bytes]]:
    if not entries:
        return 0, 0, {}
    batch = project_entries(entries, ts_us, _engine(), principals)
    streams = {}
    with gc_paused():
        for name in batch.rows.keys() | batch.tables.keys():
            parts = batch.tables.get(name, [])
            if name in batch.rows:
                parts = [TABLES[name].to_arrow(batch.rows[name]), *parts]
            table = pa.concat_tables(parts)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            streams[name] = sink.getvalue().to_pybytes()
    return batch.count, len(batch.dead_letters), streams
