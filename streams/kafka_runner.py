"""The Brain's side of the distributed mode: append to Kafka, project, keep recall fresh.

* ``KafkaRunner`` is the Brain's write path: it encodes and appends records to Kafka and
  shows them to the recall index at once (read-your-writes in recall). ``flush()`` waits
  until the projecting consumer group has committed past everything this Brain appended,
  so ``sql``/``explain`` read their own writes whoever projects (the in-process projector
  or Faust workers).
* ``KafkaProjector`` is the in-process projecting consumer for a single node
  (``clickhouse="chdb:///..."``: chDB serves one process per folder, so the Brain that owns
  the folder must project). Per batch: fetch → decode/validate/project (pure) → append
  dead letters to Kafka → insert → commit offsets, in that order (see ``streams.worker``);
  a batch's insert (in a thread) overlaps the next batch's fetch and projection, and its
  offsets are committed only after that insert returned. Into a chDB warehouse, a fetch's
  perceptions are inserted by one ``INSERT … SELECT`` already in the projection step
  (``columnar.project_or_insert``), before the batch's dead letters are appended: still
  before its commit, so a crash re-projects them (the views dedupe).
* ``IndexTail`` follows the ``perceptions`` and ``cognitions`` topics from where the views
  end, so records that *other* Brains append reach this Brain's recall index. Staleness is
  bounded by the poll interval (``POLL_S``) plus one fetch; ``lag()`` reports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Sequence

from aiokafka import AIOKafkaConsumer, TopicPartition

from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.records import now_us
from hindbrain.streams import columnar
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.log import LogEntry, Position
from hindbrain.streams.processing import Decoded, decoded_entries, to_messages
from hindbrain.streams.sink import insert_batch
from hindbrain.streams.topics import TOPICS, kafka_name

POLL_S = 0.1
FETCH_BYTES = 16 * 1024 * 1024  # per partition and fetch: whole batches, not 1 MB slices (aiokafka's default)


class KafkaRunner:
    def __init__(self, log: KafkaLog, group: str, flush_timeout_s: float = 30.0):
        self.log, self.group, self.flush_timeout_s = log, group, flush_timeout_s
        self.listeners: list[Callable[[list[Decoded]], None]] = []
        self._appended: dict[tuple[str, int], int] = {}  # (topic, partition) -> next offset we wait for
        self._lock = threading.Lock()

    def submit(self, records: Sequence[tuple[str, dict]]) -> list[Position]:
        messages = to_messages(records)
        positions = self.log.append(messages)
        decoded = [Decoded(p, rt, r) for p, (rt, r) in zip(positions, records, strict=True)]
        with self._lock:
            for p in positions:
                key = (p.topic, p.partition)
                self._appended[key] = max(self._appended.get(key, 0), p.offset + 1)
        for listener in self.listeners:
            listener(decoded)
        return positions

    def defer(self, records: Sequence[tuple[str, dict]]) -> None:
        """A recall's own records: appended like ``submit``'s (the producer batches them)."""
        self.submit(records)

    def close(self) -> None:
        """Nothing is held back here (``defer`` appends at once)."""

    def flush(self) -> int:
        """Wait until the projector group committed past every record this Brain appended.
        Raises TimeoutError (naming the group) if no projector makes progress in time."""
        with self._lock:
            waiting = dict(self._appended)
        deadline = time.monotonic() + self.flush_timeout_s
        while waiting:
            waiting = {k: v for k, v in waiting.items() if self.log.committed(self.group, *k) < v}
            if not waiting:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the projector group {self.group!r} has not reached {waiting} within "
                                   f"{self.flush_timeout_s}s: is a worker (hindbrain worker) running?")
            time.sleep(0.02)
        return 0

    def catch_up(self) -> int:
        return 0  # projecting is the consumer group's job

    @property
    def pending(self) -> int:
        return 0


class _LoopThread:
    """An asyncio loop in a daemon thread running one coroutine until ``stop()``."""

    def __init__(self, name: str):
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _main(self) -> None:
        try:
            asyncio.run(self.run())
        except BaseException as exc:  # surfaced by stop()
            self._error = exc

    async def run(self) -> None:
        raise NotImplementedError

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self._error:
            raise self._error


class KafkaProjector(_LoopThread):
    def __init__(self, log: KafkaLog, warehouse: Warehouse, group: str, batch_size: int = 2000):
        super().__init__(f"hindbrain-projector {group}")
        self.log, self.warehouse, self.group, self.batch_size = log, warehouse, group, batch_size
        self.engine = columnar.engine_for(warehouse)  # perceptions decoded by columns
        for t in TOPICS:  # topics exist before the group subscribes (no auto-creation)
            log.partitions(t.name)

    async def run(self) -> None:
        bare = {kafka_name(t.name, self.log.prefix): t.name for t in TOPICS}
        consumer = AIOKafkaConsumer(*bare, bootstrap_servers=self.log.bootstrap, group_id=self.group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=FETCH_BYTES)
        await consumer.start()
        inserting = None  # (the insert of the previous batch, the offsets to commit once it is done)
        try:
            while not self.stopping:
                fetched = await consumer.getmany(timeout_ms=int(POLL_S * 1000), max_records=self.batch_size)
                entries = [LogEntry(bare[tp.topic], tp.partition, r.offset,
                                    r.key.decode("utf-8", "replace") if r.key else None, r.value or b"")
                           for tp, records in fetched.items() for r in records]
                batch = None
                if entries:
                    # In a thread, so the loop's fetcher fetches the next batch meanwhile (chDB's
                    # decode and the inserts release the GIL).
                    batch = await asyncio.to_thread(_projected, entries, self.warehouse, self.engine)
                    if batch.dead_letters:  # into the log first: the reason is part of the audit
                        dls = to_messages(("dead_letter", dl) for dl in batch.dead_letters)
                        await asyncio.to_thread(self.log.append, dls)
                # The previous batch was inserting while this one was fetched and projected;
                # its offsets are committed only once its insert returned.
                if inserting is not None:
                    await _committed_after(consumer, *inserting)
                    inserting = None
                if batch is not None:
                    inserting = (asyncio.ensure_future(asyncio.to_thread(insert_batch, self.warehouse, batch)),
                                 next_offsets(fetched))
            if inserting is not None:
                await _committed_after(consumer, *inserting)
        finally:
            await consumer.stop()


def _projected(entries: list[LogEntry], warehouse: Warehouse, engine: columnar.Engine | None):
    """The batch projected; into a chDB warehouse its perceptions are inserted here already
    (``columnar.project_or_insert``): before the batch's dead letters reach the log, which is
    harmless as nothing is committed before both did (a crash re-projects, the views dedupe)."""
    with gc_paused():  # acyclic garbage: the collector would walk it all for nothing
        return columnar.project_or_insert(entries, now_us(), warehouse, engine)


def next_offsets(fetched: dict) -> dict[TopicPartition, int]:
    """The offsets to commit once a fetch is in the warehouse: one past each partition's last record."""
    return {tp: records[-1].offset + 1 for tp, records in fetched.items() if records}


async def _committed_after(consumer: AIOKafkaConsumer, insert: asyncio.Future, offsets: dict) -> None:
    """Wait for ``insert`` (its error stops the projector, committing nothing), then commit
    ``offsets``, except those of partitions a rebalance moved away meanwhile: their new owner
    projects those records again, which the views deduplicate."""
    await insert
    assigned = consumer.assignment()
    if kept := {tp: offset for tp, offset in offsets.items() if tp in assigned}:
        await consumer.commit(kept)


def observe_each(observe: Callable[[list[Decoded]], None], batch: list[Decoded]) -> None:
    """``observe(batch)``; if it raises, each record alone, skipping the ones that raise: a record
    the projector dead-letters at its project stage (a decision whose payload is not JSON) once
    stopped the index tail for good. Observing a record twice is harmless (the tail sees this
    Brain's own records after its listener did)."""
    try:
        observe(batch)
    except Exception:  # noqa: BLE001 - find the record that cannot be indexed; the others are
        for decoded in batch:
            with contextlib.suppress(Exception):
                observe([decoded])


class IndexTail(_LoopThread):
    """Feeds records appended by anyone to ``observe`` (the recall index's listener)."""

    # Documents, plus what scoring reads next to them: outcomes (usage counters) and
    # decisions (beliefs for the briefing).
    TOPICS = ("perceptions", "cognitions", "outcomes", "decisions")

    def __init__(self, log: KafkaLog, start: dict[tuple[str, int], int], observe: Callable[[list[Decoded]], None]):
        super().__init__("hindbrain-index-tail")
        self.log, self.start_at, self.observe = log, start, observe
        self.positions: dict[tuple[str, int], int] = {}
        self.last_poll = 0.0

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.log.bootstrap, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            tps = [TopicPartition(kafka_name(t, self.log.prefix), p) for t in self.TOPICS
                   for p in self.log.partitions(t)]
            consumer.assign(tps)
            for tp in tps:
                consumer.seek(tp, self.start_at.get((tp.topic.removeprefix(self.log.prefix), tp.partition), 0))
            while not self.stopping:
                fetched = await consumer.getmany(timeout_ms=int(POLL_S * 1000), max_records=5000)
                batch = []
                for tp, records in fetched.items():
                    topic = tp.topic.removeprefix(self.log.prefix)
                    entries = [LogEntry(topic, tp.partition, r.offset, None, r.value or b"") for r in records]
                    batch += decoded_entries(entries)  # what the projector dead-letters, the index skips
                    self.positions[(topic, tp.partition)] = records[-1].offset + 1
                if batch:
                    observe_each(self.observe, batch)
                self.last_poll = time.monotonic()
        finally:
            await consumer.stop()

    def lag(self) -> dict:
        """Records not yet indexed per partition, and seconds since the last poll."""
        behind = {f"{t}[{p}]": self.log.end_offset(t, p) - self.positions.get((t, p), self.start_at.get((t, p), 0))
                  for t in self.TOPICS for p in self.log.partitions(t)}
        return {"records_behind": behind, "seconds_since_poll": round(time.monotonic() - self.last_poll, 3)}
