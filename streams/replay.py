"""Audit replay: rebuild every view from the log alone, into a fresh warehouse.

Replay never writes the log. A record that cannot be decoded or projected is dead-lettered
into the ``dead_letters`` view directly, with the same row the live runner derived.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from hindbrain.projections.views import TABLES
from hindbrain.projections.warehouse import ThreadSessions, Warehouse
from hindbrain.schemas.records import now_us
from hindbrain.streams import columnar, kafka_batches, replay_chunk
from hindbrain.streams.kafka_batches import INSERTERS
from hindbrain.streams.processing import ProjectedBatch
from hindbrain.streams.replay_chunk import project_entries
from hindbrain.streams.sink import insert_batch
from hindbrain.streams.sqlite_log import SqliteLog
from hindbrain.streams.topics import TOPICS

# Ranges read at once (fetch and ``frame``) in a Kafka replay: ``frame`` turns a range into chDB's
# columns (~1.8 us a record, without the GIL), so one reader fell behind two inserters.
READERS = 2


@dataclass(frozen=True)
class ReplayReport:
    records: int
    dead_letters: int
    seconds: float
    digest: dict[str, tuple[int, int]]
    workers: int = 0  # worker processes actually used

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds else float("inf")


def replay(log, warehouse: Warehouse, chunk: int = 20_000, workers: int = 0,
           progress: Callable[[int], None] | None = None, inserters: int = INSERTERS) -> ReplayReport:
    """Rebuild every view from ``log`` into ``warehouse`` (migrated here if needed).

    ``workers=0`` decodes and projects in this process. ``workers=N`` hands chunks of the
    log to N worker processes (forkserver: they share nothing with this process's chDB),
    which return Arrow streams that this process inserts; rows are versioned by offset,
    so the order in which chunks arrive does not matter. A log of two chunks or fewer is
    replayed in-process whatever ``workers`` says. Any other ``Log`` (Kafka) is replayed
    partition by partition from offset 0: in-process, or with ``workers`` each reading
    chunks of partitions over a connection of its own. ``progress(n)`` is told each chunk's
    ``n`` records as they are inserted (``replay_size`` is the whole). ``inserters``: a Kafka
    replay's inserts in flight at once (each of Kafka record batches on its own chDB session).
    """
    warehouse.migrate()
    progress = progress or _silent
    if not isinstance(log, SqliteLog):
        return _replay_partitions(log, warehouse, chunk, workers, progress, inserters)
    started = time.perf_counter()
    records = dead = 0
    end = log.end_offset("*", 0)
    if end <= 2 * chunk:  # below that, starting processes costs more than it saves
        workers = 0
    if workers > 0:
        tasks = [(str(log.path), offset, chunk, now_us()) for offset in range(0, end, chunk)]
        records, dead = _in_workers(warehouse, workers, _chunk_task, tasks, progress=progress)
    else:
        offset, engine = 0, columnar.engine_for(warehouse)
        while entries := log.read_all(offset, chunk):
            batch = project_entries(entries, now_us(), engine)
            records, dead = records + batch.count, dead + len(batch.dead_letters)
            insert_batch(warehouse, batch)
            progress(len(entries))
            offset = entries[-1].offset + 1
    seconds = time.perf_counter() - started
    return ReplayReport(records, dead, seconds, warehouse.digest(), workers)


def replay_size(log) -> int:
    """How many records ``replay`` reads from ``log``: its length (every topic, every partition)."""
    if isinstance(log, SqliteLog):
        return log.end_offset("*", 0)
    return sum(_ends(log).values())


def _silent(records: int) -> None:
    pass


def _replay_partitions(log, warehouse: Warehouse, chunk: int, workers: int = 0,
                       progress: Callable[[int], None] = _silent, inserters: int = INSERTERS) -> ReplayReport:
    """Every declared topic, every partition, from offset 0 to its end, through the same
    projection; no consumer group is involved, so nothing is committed anywhere. With
    ``workers``, chunks of ``chunk`` offsets go to worker processes (more than two chunks).
    In-process, three stages overlap (``_prefetched``): the log's client fetches the next chunk
    and chDB inserts the previous ones (``inserters`` at once, each record-batch insert on a
    session of its own) while this thread decodes and projects."""
    started = time.perf_counter()
    tasks = [(topic, partition, offset, min(offset + chunk, end), now_us())
             for (topic, partition), end in _ends(log).items() for offset in range(0, end, chunk)]
    if workers > 0 and len(tasks) > 2:
        records, dead = _in_workers(warehouse, workers, _kafka_chunk_task, tasks,
                                    initializer=("open_kafka", (log.bootstrap, log.prefix, log.auth, log.principals)),
                                    progress=progress)
        return ReplayReport(records, dead, time.perf_counter() - started, warehouse.digest(), workers)
    records = dead = 0
    engine = columnar.engine_for(warehouse)
    principals = log.principals  # a principal's perceptions are checked as the projector checks them
    # Perceptions into a chDB warehouse: the broker's record batches straight into chDB (no
    # object per record); any range chDB or a check refuses takes the per-record path below.
    raw = (engine is not None and kafka_batches.enabled() and warehouse.url.startswith("chdb://")
           and hasattr(log, "read_batches"))

    def read(task: tuple):
        topic, partition, offset, stop = task[:4]
        if raw and topic == kafka_batches.TOPIC:
            sets = log.read_batches(topic, partition, offset, stop)
            if sets and (framed := kafka_batches.frame(sets, offset, stop)) is not None:
                return framed
        return replay_chunk.read_range(log, *task[:4])

    def insert(batch, size: int) -> None:
        insert_batch(warehouse, batch)
        progress(size)

    def insert_framed(framed, task: tuple) -> tuple[int, int]:
        _, partition, offset, stop, _ = task
        got = kafka_batches.insert_or_read(sessions.mine(), log, framed, partition, offset, stop)
        if isinstance(got, int):
            progress(stop - offset)
            return got, 0
        batch = project_entries(got, now_us(), engine, principals)  # refused: the per-record path, dead letters as rows
        insert(batch, stop - offset)
        return batch.count, len(batch.dead_letters)

    with ThreadSessions(warehouse) as sessions, \
            ThreadPoolExecutor(READERS, thread_name_prefix="replay-read") as reader, \
            ThreadPoolExecutor(inserters, thread_name_prefix="replay-insert") as inserter:
        in_flight: deque = deque()  # at most ``inserters`` inserts: memory stays at a few chunks
        framed_counts = []  # the records of ranges inserted whole by chDB (known once inserted)
        for task, got in zip(tasks, _prefetched(reader, read, tasks, READERS), strict=True):
            if isinstance(got, kafka_batches.Framed):
                job: tuple = (insert_framed, got, task)
            else:
                batch = project_entries(got, now_us(), engine, principals) if got else ProjectedBatch()
                records, dead = records + batch.count, dead + len(batch.dead_letters)
                job = (insert, batch, task[3] - task[2])
            if len(in_flight) >= inserters:
                in_flight.popleft().result()
            in_flight.append(inserter.submit(*job))
            if job[0] is insert_framed:
                framed_counts.append(in_flight[-1])
        for done in in_flight:
            done.result()
        for done in framed_counts:
            count, dead_letters = done.result()
            records, dead = records + count, dead + dead_letters
    return ReplayReport(records, dead, time.perf_counter() - started, warehouse.digest())


def _ends(log) -> dict[tuple[str, int], int]:
    """The end offset of every partition of every declared topic (and, on Kafka, every principal's perceptions
    topic the cluster holds): one request when the log can."""
    names = [t.name for t in TOPICS]
    if hasattr(log, "end_offsets"):
        return log.end_offsets([*names, *log.principal_topics(create=False)])
    return {(t, p): log.end_offset(t, p) for t in names for p in log.partitions(t)}


def _prefetched(pool: ThreadPoolExecutor, read: Callable, tasks: list, ahead: int = 1) -> Iterator:
    """``read(task)`` for each task in order, the next ``ahead`` reads already running in ``pool``
    while the caller works on this one's result (the log client waits on the network, ``frame``'s
    walk runs without the GIL)."""
    pending: deque = deque()
    for task in tasks:
        pending.append(pool.submit(read, task))
        if len(pending) > ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _in_workers(warehouse: Warehouse, workers: int, task, tasks: list, initializer=None,
                progress: Callable[[int], None] = _silent) -> tuple[int, int]:
    """Runs ``task`` over ``tasks`` in ``workers`` processes (forkserver: they share nothing with
    this process's chDB) and inserts the Arrow streams they return, in any order (rows are
    versioned by offset). Returns (records, dead letters)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["hindbrain.streams.replay_chunk"])
    records = dead = 0
    init, args = (getattr(replay_chunk, initializer[0]), initializer[1]) if initializer else (None, ())
    with ctx.Pool(workers, initializer=init, initargs=args) as pool:
        for count, dead_letters, streams in pool.imap_unordered(task, tasks):
            records, dead = records + count, dead + dead_letters
            for name, data in streams.items():
                warehouse.insert_arrow(TABLES[name], pa.ipc.open_stream(data).read_all())
            progress(count)
    return records, dead


def _chunk_task(task: tuple) -> tuple[int, int, dict[str, bytes]]:
    return replay_chunk.chunk_as_arrow(*task)


def _kafka_chunk_task(task: tuple) -> tuple[int, int, dict[str, bytes]]:
    return replay_chunk.kafka_chunk_as_arrow(*task)
