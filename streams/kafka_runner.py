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
  offsets are committed only after that insert returned. Into a chDB warehouse, perceptions
  never become record objects: their partitions are paused as they are assigned, and each
  loop fetches the broker's record batches from the group's position (``KafkaLog.fetch_batches``,
  ~``batch_size`` records a partition), moves the position past them and inserts them in the
  insert step as replay does (``streams.kafka_batches``: one ``INSERT … SELECT`` a partition,
  two at once on sessions of their own). A fetch a check refuses is read and projected per
  record there, its dead letters appended before its rows are inserted: all before the
  commit, so a crash re-projects them (the views dedupe). The consumer keeps the group
  membership, positions and commits, and hands over the other topics' records.
* ``IndexTail`` follows the ``perceptions`` and ``cognitions`` topics from where the views
  end, so records that *other* Brains append reach this Brain's recall index. Staleness is
  bounded by the poll interval (``POLL_S``) plus one fetch; ``lag()`` reports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError, KafkaError, KafkaTimeoutError

from hindbrain.projections.warehouse import ThreadSessions, Warehouse
from hindbrain.schemas.records import now_us
from hindbrain.streams import columnar, kafka_batches, rebuild
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.kafka_log import KafkaLog, start_groupless
from hindbrain.streams.log import LogEntry, Position
from hindbrain.streams.principals import NO_PRINCIPALS, TOPIC_PREFIX, Principals
from hindbrain.streams.processing import Decoded, ProjectedBatch, decoded_entries, to_messages
from hindbrain.streams.sink import insert_batch
from hindbrain.streams.topics import TOPICS, kafka_name

log = logging.getLogger(__name__)
T = TypeVar("T")

POLL_S = 0.1
BROKER_WAIT_S = (0.2, 5.0)  # the projector's first and longest wait between tries while the broker is away
FETCH_BYTES = 16 * 1024 * 1024  # per partition and fetch: whole batches, not 1 MB slices (aiokafka's default)
MIN_FETCH_BYTES = 64 * 1024  # a raw fetch's least (the broker sends at least one whole batch anyway)


class KafkaRunner:
    def __init__(self, log: KafkaLog, group: str, flush_timeout_s: float = 30.0, perceptions_topic: str | None = None):
        self.log, self.group, self.flush_timeout_s = log, group, flush_timeout_s
        # An agent's process on a broker with ACLs writes its perceptions to its principal's topic, the only one
        # its principal may write (``Settings.perceptions_topic``); None: the shared ``perceptions``.
        self.perceptions_topic = perceptions_topic
        self.listeners: list[Callable[[list[Decoded]], None]] = []
        self._appended: dict[tuple[str, int], int] = {}  # (topic, partition) -> next offset we wait for
        self._lock = threading.Lock()

    def submit(self, records: Sequence[tuple[str, dict]]) -> list[Position]:
        messages = to_messages(records)
        if self.perceptions_topic:
            messages = [m._replace(topic=self.perceptions_topic) if m.topic == "perceptions" else m for m in messages]
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
    def error(self) -> BaseException | None:
        """What stopped the loop, once it has stopped on an error."""
        return self._error

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self._error:
            raise self._error


def group_timing(session_timeout_s: float) -> dict[str, int]:
    """A group consumer's session timeout (``HINDBRAIN_WORKER_SESSION_TIMEOUT``: how long a silent member
    keeps its partitions) and its heartbeat, a third of it at most 3 s: both engines' group consumers and the
    embedders' (aiokafka's own defaults, 10 s and 3 s, ignored the setting)."""
    session_ms = int(session_timeout_s * 1000)
    return {"session_timeout_ms": session_ms, "heartbeat_interval_ms": min(3000, session_ms // 3)}


class KafkaProjector(_LoopThread):
    def __init__(self, log: KafkaLog, warehouse: Warehouse, group: str, batch_size: int = 2000,
                 session_timeout_s: float = 10.0):
        super().__init__(f"hindbrain-projector {group}")
        self.log, self.warehouse, self.group, self.batch_size = log, warehouse, group, batch_size
        self.timing = group_timing(session_timeout_s)
        self.engine = columnar.engine_for(warehouse)  # perceptions decoded by columns
        # Perceptions into a chDB warehouse: the broker's record batches fetched and inserted as
        # they are (``streams.kafka_batches``), no record object each; their partitions are
        # paused in the consumer, which keeps the group membership, positions and commits.
        self.raw = (self.engine is not None and kafka_batches.enabled() and warehouse.url.startswith("chdb://"))
        self._record_bytes = 1024  # the last raw fetch's bytes per record: sizes the next to ~batch_size records
        self.broker_waits = 0  # calls tried again because the broker was away (``_patiently``)
        # A batch's record-batch inserts side by side, each on a chDB session of its own (as replay's).
        self._sessions = ThreadSessions(warehouse)
        self._inserters = ThreadPoolExecutor(kafka_batches.INSERTERS, thread_name_prefix="projector-insert")
        for t in TOPICS:  # topics exist before the group subscribes (no auto-creation)
            log.partitions(t.name)
        log.principal_topics()  # the bound principals' topics too (an agent principal may not create its own)

    async def run(self) -> None:
        try:
            # Before joining the group: a rebuild reads every topic, longer than the group waits for a poll.
            await asyncio.to_thread(self._patiently, rebuild.rebuild_if_needed, self.log, self.warehouse, self.group)
            await self._consume()
        finally:
            self._inserters.shutdown()
            self._sessions.close()

    async def _consume(self) -> None:
        consumer = AIOKafkaConsumer(**self.log.client_options, group_id=self.group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=FETCH_BYTES, **self.timing)
        raw_topic = kafka_name(kafka_batches.TOPIC, self.log.prefix)
        # By pattern: the declared topics and every principal's perceptions topic, those made after the start
        # included (found at the consumer's next metadata refresh).
        consumer.subscribe(pattern=subscription(self.log.prefix),
                           listener=_PausedOnAssignment(consumer, raw_topic if self.raw else None))
        await consumer.start()
        inserting = None  # (the insert of the previous batch, the offsets to commit once it is done)
        try:
            while not self.stopping:
                ranges = await self._fetch_raw(consumer, raw_topic) if self.raw else []
                # Records of the other topics (all of them without ``raw``); with record batches
                # in hand, only what the consumer already holds: the poll wait is for idle times.
                fetched = await consumer.getmany(timeout_ms=0 if ranges else int(POLL_S * 1000),
                                                 max_records=self.batch_size)
                entries = [LogEntry(tp.topic.removeprefix(self.log.prefix), tp.partition, r.offset,
                                    r.key.decode("utf-8", "replace") if r.key else None, r.value or b"")
                           for tp, records in fetched.items() for r in records]
                job = None
                if entries or ranges:
                    # In a thread, so the loop's fetcher fetches the next batch meanwhile.
                    hot, batch = await asyncio.to_thread(_projected, entries, self.warehouse, self.engine,
                                                         self.log.principals)
                    if batch.dead_letters:  # into the log first: the reason is part of the audit
                        dls = to_messages(("dead_letter", dl) for dl in batch.dead_letters)
                        await asyncio.to_thread(self._patiently, self.log.append, dls)
                    job = (rebuild.insert_or_rebuild, partial(self._insert, hot, batch, ranges), self.log,
                           self.warehouse, self.group)
                # The previous batch was inserting while this one was fetched and projected;
                # its offsets are committed only once its insert returned.
                if inserting is not None:
                    await _committed_after(consumer, *inserting)
                    inserting = None
                if job is not None:
                    offsets = {**next_offsets(fetched), **{r.tp: r.stop for r in ranges}}
                    inserting = (asyncio.ensure_future(asyncio.to_thread(*job)), offsets)
            if inserting is not None:
                await _committed_after(consumer, *inserting)
        finally:
            await consumer.stop()

    def _patiently(self, call: Callable[..., T], *args) -> T:
        """``call(*args)``, tried again while the broker is away (restarting, unreachable, electing
        a leader), waiting longer each time, until it answers or the projector stops. Only for
        calls that are safe to repeat: reads, and writes the views or the log's readers dedupe (a
        dead letter appended twice after a timed-out try is one row in ``dead_letters``). Any other
        error stops the projector without committing (``streams.worker`` exits on it)."""
        wait_s, longest_s = BROKER_WAIT_S
        while True:
            try:
                return call(*args)
            except Exception as exc:
                if not broker_away(exc) or self.stopping:
                    raise
                self.broker_waits += 1
                named = str(exc) if str(exc).startswith(type(exc).__name__) else f"{type(exc).__name__}: {exc}"
                log.warning("the broker is away (%s); trying again in %.1f s", named, wait_s)
                self._stop.wait(wait_s)
                wait_s = min(2 * wait_s, longest_s)

    async def _fetch_raw(self, consumer: AIOKafkaConsumer, topic: str) -> list[_Range]:
        """One raw fetch per assigned partition of ``topic`` (perceptions), from the consumer's
        position, which then moves past what was fetched (committed once inserted)."""
        out = []
        for tp in sorted(consumer.assignment()):
            if tp.topic != topic:
                continue
            try:
                start = await consumer.position(tp)
            except IllegalStateError:  # a rebalance took it away meanwhile
                continue
            stop, framed = await asyncio.to_thread(self._fetch_range, tp.partition, start)
            if stop == start:
                continue
            with contextlib.suppress(IllegalStateError):
                consumer.seek(tp, stop)
            out.append(_Range(tp, start, stop, framed))
        return out

    def _fetch_range(self, partition: int, start: int) -> tuple[int, kafka_batches.Framed | None]:
        """``(stop, framed)``: the record batches of one fetch at ``start`` (sized to about
        ``batch_size`` records), framed for the insert; ``framed`` None when the per-record path
        must take ``[start, stop)`` (compressed, a broker error, a record ``frame`` refuses), ``stop == start``
        when empty."""
        want = min(FETCH_BYTES, max(MIN_FETCH_BYTES, self.batch_size * self._record_bytes))
        got = self._patiently(self.log.fetch_batches, kafka_batches.TOPIC, partition, start, want)
        if got is None:  # a broker error: the per-record reader says what is there
            read = self._patiently(self.log.read, kafka_batches.TOPIC, partition, start, self.batch_size)
            return (read[-1].offset + 1 if read else start), None
        records, stop = got
        framed = kafka_batches.frame([records], start, stop) if records else None
        if framed is not None:
            self._record_bytes = max(1, len(records) // framed.rows)
        return stop, framed

    def _insert(self, hot: list[LogEntry], batch: ProjectedBatch, ranges: list[_Range]) -> None:
        """A batch into the warehouse (in a thread, beside the next fetch): record batches and the
        other perceptions each by one ``INSERT … SELECT``; what such an insert refuses (nothing of
        it written) is projected here, its dead letters into the log before its rows, as any batch's."""
        def inserted(r: _Range) -> int | list[LogEntry]:  # rows the views dedupe: safe to try again
            return self._patiently(kafka_batches.insert_or_read, self._sessions.mine(), self.log, r.framed,
                                   r.tp.partition, r.start, r.stop)

        refused = [got for got in self._inserters.map(inserted, ranges) if not isinstance(got, int)]
        with gc_paused():
            projected = [columnar.insert_or_project(hot, now_us(), self.warehouse, self.engine)]
            projected += [columnar.project_batch(entries, now_us(), self.engine, self.log.principals)
                          for entries in refused]
        for done in projected:
            if done.dead_letters:
                self._patiently(self.log.append, to_messages(("dead_letter", dl) for dl in done.dead_letters))
            insert_batch(self.warehouse, done)
        insert_batch(self.warehouse, batch)


class _PausedOnAssignment(ConsumerRebalanceListener):
    """Pauses the partitions of ``topic`` (perceptions fetched as record batches) as they are
    assigned, before the consumer fetches any of their records: they are never ``getmany``'s."""

    def __init__(self, consumer: AIOKafkaConsumer, topic: str | None):
        self.consumer, self.topic = consumer, topic

    async def on_partitions_revoked(self, revoked) -> None:
        pass

    async def on_partitions_assigned(self, assigned) -> None:
        if paused := [tp for tp in assigned if tp.topic == self.topic]:
            self.consumer.pause(*paused)


@dataclass(frozen=True)
class _Range:
    """Offsets ``[start, stop)`` of one perception partition, fetched as record batches."""

    tp: TopicPartition
    start: int
    stop: int
    framed: kafka_batches.Framed | None  # None: the per-record path reads and projects the range


def _projected(entries: list[LogEntry], warehouse: Warehouse, engine: columnar.Engine | None,
               principals: Principals = NO_PRINCIPALS) -> tuple[list[LogEntry], ProjectedBatch]:
    """``(hot, batch)``: the perceptions one ``INSERT … SELECT`` takes into a chDB warehouse, left
    for the insert step (``KafkaProjector._insert``, overlapping the next fetch), and the rest
    projected (``columnar.split_insertable``; every entry when the warehouse is not chDB)."""
    hot, rest = columnar.split_insertable(entries, warehouse, engine)
    with gc_paused():  # acyclic garbage: the collector would walk it all for nothing
        return hot, columnar.project_batch(rest, now_us(), engine, principals)


def subscription(prefix: str) -> str:
    """The projector group's topic pattern: the declared topics of ``prefix`` and its principals' perceptions
    topics (``streams.principals``: ``perceptions.by.<P>``)."""
    names = "|".join(re.escape(t.name) for t in TOPICS)
    return f"^{re.escape(prefix)}(?:{names}|{re.escape(TOPIC_PREFIX)}[A-Za-z0-9_-][A-Za-z0-9._-]*)$"


def next_offsets(fetched: dict) -> dict[TopicPartition, int]:
    """The offsets to commit once a fetch is in the warehouse: one past each partition's last record."""
    return {tp: records[-1].offset + 1 for tp, records in fetched.items() if records}


def broker_away(exc: BaseException) -> bool:
    """Whether ``exc`` says the broker is away for now (a connection refused or closed, a node
    not ready, a leader being elected, a call that timed out) rather than that the work is wrong."""
    return isinstance(exc, TimeoutError | KafkaTimeoutError) or (isinstance(exc, KafkaError) and exc.retriable)


async def _committed_after(consumer: AIOKafkaConsumer, insert: asyncio.Future, offsets: dict) -> None:
    """Wait for ``insert`` (its error stops the projector, committing nothing), then commit
    ``offsets``, except those of partitions a rebalance moved away meanwhile: their new owner
    projects those records again, which the views deduplicate. A commit the group refuses
    because it rebalanced meanwhile (a broker restart can do that) is left undone for the same
    reason: whoever holds the partitions now starts from the last commit."""
    await insert
    assigned = consumer.assignment()
    if kept := {tp: offset for tp, offset in offsets.items() if tp in assigned}:
        try:
            await consumer.commit(kept)
        except CommitFailedError as exc:
            log.warning("offsets not committed, the group rebalanced meanwhile (%s): projected again", exc)


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
        self.topics = (*self.TOPICS, *log.principal_topics())  # and the principals' perceptions
        self.positions: dict[tuple[str, int], int] = {}
        self.last_poll = 0.0

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(**self.log.client_options, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="earliest")
        await start_groupless(consumer)
        try:
            tps = [TopicPartition(kafka_name(t, self.log.prefix), p) for t in self.topics
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
                    # what the projector dead-letters, the index skips
                    batch += decoded_entries(entries, self.log.principals)
                    self.positions[(topic, tp.partition)] = records[-1].offset + 1
                if batch:
                    observe_each(self.observe, batch)
                self.last_poll = time.monotonic()
        finally:
            await consumer.stop()

    def lag(self) -> dict:
        """Records not yet indexed per partition, and seconds since the last poll."""
        behind = {f"{t}[{p}]": self.log.end_offset(t, p) - self.positions.get((t, p), self.start_at.get((t, p), 0))
                  for t in self.topics for p in self.log.partitions(t)}
        return {"records_behind": behind, "seconds_since_poll": round(time.monotonic() - self.last_poll, 3)}
