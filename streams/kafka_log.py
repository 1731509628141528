"""The distributed log: the synchronous ``Log`` protocol on Apache Kafka (aiokafka).

``KafkaLog`` owns an asyncio event loop in a daemon thread; every public method submits a
coroutine to it (``asyncio.run_coroutine_threadsafe``) and blocks until it finishes or
``timeout_s`` passes. It is thread-safe: callers in any thread share one producer, one reader
and one consumer per committing consumer name.

Names: log topic ``t`` is Kafka topic ``prefix + t`` (``streams/topics.py``); positions and
entries carry the log name ``t``, so the same code reads both logs. A declared topic is
created on first use (any method naming it) with its declared partitions and retention. An
undeclared topic is refused with ``ValueError``, unless ``undeclared_partitions`` is given
(tests, tools): a typo must not become a new topic.

How the contract of ``hindbrain.streams.log`` holds here:

1. ``append`` sends every message with ``acks="all"`` on an idempotent producer and returns
   once every message is acknowledged, one ``Position`` each, in order. Keys are the message
   key in UTF-8, so one key's messages share a partition and keep their order. **Atomicity is
   limited to validation**: everything ``append`` can check before sending (topic declared and
   legal, key ``str`` or ``None`` and UTF-8-encodable, value ``bytes``-like, size within
   ``max_request_size``, topics created) is checked for the whole batch first, and a failure
   raises ``TypeError``/``ValueError`` with nothing sent. Once sending started, Kafka cannot
   make a multi-message, multi-partition append atomic without transactions (and every reader
   would have to use ``read_committed``): if the broker fails part of a batch, ``append``
   raises ``aiokafka.errors.KafkaError`` and the messages that were acknowledged stay in the
   log. A ``TimeoutError`` means "outcome unknown": any message may still land later. Either
   way the caller may append the batch again; records carry their ids and views deduplicate.
2. ``read`` uses a consumer with manual assignment and no group: it seeks and fetches until
   ``limit`` entries or the partition's end offset (the high watermark, so every
   acknowledged message is visible: read-your-writes). Offsets below the log start (none
   while retention is infinite) start at the log start, i.e. the first offset >= the one asked.
3. ``commit``/``committed`` are Kafka consumer-group offsets (group id = consumer name),
   committed without joining the group, so they survive restarts and are visible to Kafka
   tools. Caveat: the broker expires the offsets of a group without members
   ``offsets.retention.minutes`` (7 days by default) after its last commit; a consumer idle
   longer restarts at 0 (harmless for the idempotent views, but slow).

Failure modes: an unreachable broker raises ``KafkaUnavailable`` (a ``ConnectionError``) from
the constructor, naming the bootstrap address; an operation that does not finish within
``timeout_s`` raises ``TimeoutError`` naming it; broker errors raise
``aiokafka.errors.KafkaError``. After ``close()`` every method raises ``RuntimeError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from hindbrain.streams.kafka_auth import KafkaAuth
from hindbrain.streams.log import LogEntry, Message, Position
from hindbrain.streams.principals import (
    NO_PRINCIPALS,
    PARTITIONS,
    TOPIC_PREFIX,
    Principals,
    principal_of,
    principal_topic,
)
from hindbrain.streams.topics import (
    DECLARED,
    DEFAULT_PREFIX,
    REPLICATION_FACTOR,
    Topic,
    create_missing_topics,
    kafka_name,
)

T = TypeVar("T")
MAX_REQUEST_SIZE = 1_048_576  # aiokafka's default; the broker's max.message.bytes default is a bit above
# Per partition and fetch. aiokafka's default (1 MB) is ~900 records of ~1 KB: a replay of one
# partition then costs a round trip per 900 records; 16 MB takes a whole replay chunk at once.
READ_FETCH_BYTES = 16 * 1024 * 1024


async def start_groupless(consumer: AIOKafkaConsumer) -> AIOKafkaConsumer:
    """``consumer.start()`` for a consumer without a group, then one turn of the loop. aiokafka (0.14)
    gives such a consumer a coordinator whose task is created in ``start()`` and cancelled and awaited
    by ``stop()``; a task cancelled before its first step raises ``CancelledError`` out of ``stop()``,
    which a tail stopped before its first poll did (a brain closed just after it opened). The turn
    lets the task start, so its own handler takes the cancellation."""
    await consumer.start()
    await asyncio.sleep(0)
    return consumer


def login_hint(auth: KafkaAuth) -> str:
    """What an unreachable broker's error adds about the login: aiokafka reports a refused password only in
    its log, and raises the same bootstrap failure as for a broker that is down. Never the password."""
    if not auth.sasl:
        return ""
    return (f" (logging in as {auth.username!r} with {auth.security_protocol}/{auth.sasl_mechanism}: a refused "
            "login looks the same; check HINDBRAIN_KAFKA_SASL_USERNAME and HINDBRAIN_KAFKA_SASL_PASSWORD)")


class KafkaUnavailable(ConnectionError):
    """The Kafka cluster could not be reached at the bootstrap address."""


class KafkaLog:
    """The ``Log`` protocol on a Kafka cluster (see the module docstring for the contract)."""

    def __init__(
        self,
        bootstrap: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        topics: Iterable[Topic] | None = None,
        undeclared_partitions: int | None = None,
        replication_factor: int = REPLICATION_FACTOR,
        timeout_s: float = 30.0,
        client_id: str = "hindbrain",
        auth: KafkaAuth | None = None,
        principals: Principals = NO_PRINCIPALS,
    ):
        self.bootstrap = bootstrap
        self.auth = auth or KafkaAuth()
        # What each broker principal may speak for on its perceptions topic (``streams.principals``): every
        # reader of this log (projector, learner, index tail, replay) checks a principal's records against it.
        self.principals = principals
        # Where and how every client of this log and of the consumers built on it (projector, learner, index
        # tail, embedders) connects: the one place a login is added, so no client can miss it.
        self.client_options = {"bootstrap_servers": bootstrap, **self.auth.client_options()}
        self.prefix = prefix
        self.timeout_s = timeout_s
        self._declared = DECLARED if topics is None else {t.name: t for t in topics}
        self._undeclared_partitions = undeclared_partitions
        self._replication_factor = replication_factor
        self._client_id = client_id
        self._ready: set[str] = set()  # Kafka topics known to exist (created or found)
        self._committers: dict[str, AIOKafkaConsumer] = {}
        self._started: list[Any] = []  # clients to stop on close, in start order
        self._closed = False

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"kafka-log {bootstrap}", daemon=True)
        self._thread.start()
        try:
            self._run(self._start(), "connect")
        except BaseException as exc:
            with contextlib.suppress(Exception):  # the error to report is the one that stopped the start
                self.close()  # stops what did start
            if isinstance(exc, KafkaConnectionError | KafkaTimeoutError | OSError):  # OSError: TimeoutError too
                raise KafkaUnavailable(f"Kafka unreachable at {bootstrap}{login_hint(self.auth)}: {exc}") from exc
            raise

    @classmethod
    def of(cls, settings) -> KafkaLog:
        """The log a process's ``Settings`` name: their cluster, topic prefix and login (``kafka_auth``) — every
        process (brain, worker, learner, embedder) opens its log here, so none connects without the login."""
        return cls(settings.kafka, prefix=settings.kafka_prefix, auth=settings.kafka_auth(),
                   principals=settings.principal_bindings())

    async def _start(self) -> None:
        # Made inside the loop (aiokafka binds its objects to the running loop) and each right
        # before it starts, so a failed start leaves no client that was made but never started.
        common = {**self.client_options, "client_id": self._client_id,
                  "request_timeout_ms": int(self.timeout_s * 1000)}
        self._read_lock = asyncio.Lock()  # one assignment at a time on the shared reader
        self._topics_lock = asyncio.Lock()
        self._admin = await self._started_client(AIOKafkaAdminClient(**common))
        # Idempotence (producer id + sequence numbers) makes the broker drop the duplicates of
        # its own retries, so a retried batch neither doubles nor reorders a key's records. It
        # implies acks="all"; stated anyway. linger 5 ms: a batch's messages share requests.
        self._producer = await self._started_client(AIOKafkaProducer(
            **common, acks="all", enable_idempotence=True, linger_ms=5, max_request_size=MAX_REQUEST_SIZE))
        # earliest: a seek below the log start lands on the first offset that exists. The first
        # read of a topic finds it missing from the reader's metadata and waits one retry backoff
        # for a refresh: 20 ms rather than the default 100 ms.
        self._reader = await self._started_client(AIOKafkaConsumer(
            **common, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest", retry_backoff_ms=20,
            max_partition_fetch_bytes=READ_FETCH_BYTES))

    async def _started_client(self, client: T) -> T:
        self._started.append(client)  # stopped by close() even if start() fails half-way
        if isinstance(client, AIOKafkaConsumer):
            return await start_groupless(client)
        await client.start()
        return client

    # -- the loop ------------------------------------------------------------------------------
    def _run(self, coro: Coroutine[Any, Any, T], what: str) -> T:
        """Run ``coro`` on the loop thread and wait for its result, at most ``timeout_s``."""
        if self._closed:
            coro.close()
            raise RuntimeError("KafkaLog is closed")
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, self.timeout_s), self._loop)
        try:
            return future.result()
        except TimeoutError as exc:
            raise TimeoutError(f"Kafka at {self.bootstrap}: {what} did not finish within {self.timeout_s}s") from exc

    # -- topics ----------------------------------------------------------------------------------
    def _spec(self, topic: str) -> Topic:
        if not isinstance(topic, str):
            raise TypeError(f"topic must be str, not {type(topic).__name__}")
        if topic in self._declared:
            return self._declared[topic]
        if principal_of(topic):  # a principal's perceptions (declared by their name's shape: streams.principals)
            return Topic(topic, "perception", PARTITIONS)
        if self._undeclared_partitions is None:
            raise ValueError(f"topic {topic!r} is not declared in hindbrain.streams.topics")
        return Topic(topic, None, self._undeclared_partitions)

    async def _ensure(self, specs: Iterable[Topic]) -> None:
        missing = {kafka_name(s.name, self.prefix): s for s in specs}
        missing = {k: s for k, s in missing.items() if k not in self._ready}
        if not missing:
            return
        async with self._topics_lock:
            await create_missing_topics(self._admin, missing.values(), prefix=self.prefix,
                                        replication_factor=self._replication_factor, timeout_s=self.timeout_s)
            self._ready.update(missing)

    async def _tp(self, topic: str, partition: int) -> TopicPartition | None:
        """The TopicPartition, creating the topic if needed; None if it has no such partition."""
        await self._ensure([self._spec(topic)])
        name = kafka_name(topic, self.prefix)
        return TopicPartition(name, partition) if partition in await self._producer.partitions_for(name) else None

    # -- writing ---------------------------------------------------------------------------------
    def append(self, messages: Sequence[Message]) -> list[Position]:
        if not messages:
            return []
        prepared = []
        for m in messages:  # validate the whole batch before anything is sent
            if not isinstance(m.value, bytes | bytearray | memoryview):
                raise TypeError(f"message value must be bytes, not {type(m.value).__name__}")
            if not (m.key is None or isinstance(m.key, str)):
                raise TypeError(f"message key must be str or None, not {type(m.key).__name__}")
            spec = self._spec(m.topic)
            key, value = None if m.key is None else m.key.encode("utf-8"), bytes(m.value)
            size = DefaultRecordBatchBuilder.estimate_size_in_bytes(key, value, [])
            if size > MAX_REQUEST_SIZE:
                raise ValueError(f"message of {size} bytes exceeds the {MAX_REQUEST_SIZE}-byte Kafka limit")
            prepared.append((spec, kafka_name(m.topic, self.prefix), key, value))
        return self._run(self._append(messages, prepared), f"append of {len(messages)} messages")

    async def _append(self, messages: Sequence[Message], prepared: list) -> list[Position]:
        await self._ensure(spec for spec, *_ in prepared)
        # send() only enqueues (in order, so one partition's messages keep the batch order);
        # the futures resolve when the broker acknowledged.
        acks = [await self._producer.send(name, value=value, key=key) for _, name, key, value in prepared]
        done = await asyncio.gather(*acks)
        return [Position(m.topic, md.partition, md.offset) for m, md in zip(messages, done, strict=True)]

    # -- reading ---------------------------------------------------------------------------------
    def partitions(self, topic: str) -> list[int]:
        return self._run(self._partitions(topic), f"partitions of {topic!r}")

    async def _partitions(self, topic: str) -> list[int]:
        await self._ensure([self._spec(topic)])
        return sorted(await self._producer.partitions_for(kafka_name(topic, self.prefix)))

    def read(self, topic: str, partition: int, offset: int, limit: int = 1000) -> list[LogEntry]:
        return self._run(self._read(topic, partition, offset, limit), f"read of {topic!r}[{partition}]@{offset}")

    async def _read(self, topic: str, partition: int, offset: int, limit: int) -> list[LogEntry]:
        tp = await self._tp(topic, partition)
        if tp is None or limit <= 0:
            return []
        async with self._read_lock:
            end = (await self._reader.end_offsets([tp]))[tp]
            if offset >= end:
                return []
            self._reader.assign([tp])
            self._reader.seek(tp, max(offset, 0))
            out: list[LogEntry] = []
            try:
                # Until the limit or the end known above; the caller's timeout bounds the loop.
                while len(out) < limit and await self._reader.position(tp) < end:
                    batch = await self._reader.getmany(tp, timeout_ms=500, max_records=limit - len(out))
                    # A foreign producer's key need not be UTF-8: replaced, as the consumers' paths do (the
                    # record is its value; a strict decode here stopped a replay or a worker's fallback).
                    out += [LogEntry(topic, partition, r.offset,
                                     None if r.key is None else r.key.decode("utf-8", "replace"),
                                     r.value if r.value is not None else b"")
                            for r in batch.get(tp, ())]
            finally:
                # Paused before the fetcher task runs again (no await since the last getmany), the
                # reader sends no fetch past the end. Such a fetch long-polls the broker for up to
                # fetch_max_wait_ms (500 ms), and the broker answers one connection's requests in
                # order, so the next read would wait behind it. (Not unsubscribe(): aiokafka's
                # fetcher task crashes if the assignment it was woken for is gone when it runs.)
                self._reader.pause(tp)
            return out[:limit]

    def read_batches(self, topic: str, partition: int, offset: int, stop: int) -> list[bytes] | None:
        """The raw record sets (Kafka v2 record batches, as the broker sends them) covering offsets
        ``[offset, stop)`` of one partition, for ``streams.kafka_batches``: no object per record.
        None when the broker answers with an error or the batches end before ``stop`` (the
        caller reads with ``read`` instead)."""
        return self._run(self._read_batches(topic, partition, offset, stop),
                         f"raw read of {topic!r}[{partition}]@{offset}")

    async def _read_batches(self, topic: str, partition: int, offset: int, stop: int) -> list[bytes] | None:
        out = []
        while offset < stop:
            got = await self._fetch_batches(topic, partition, offset)
            if got is None or not got[0]:
                # Short of ``stop`` (offsets past the high watermark's records, a log start moved):
                # the per-record reader decides what is there, never a silently short range.
                return None
            out.append(got[0])
            offset = got[1]
        return out

    def fetch_batches(self, topic: str, partition: int, offset: int,
                      max_bytes: int = READ_FETCH_BYTES) -> tuple[bytes, int] | None:
        """One fetch of the raw record set at ``offset`` of one partition (whole Kafka v2 batches
        up to about ``max_bytes``, as the broker sends them: at least one batch) and the offset
        past its last whole batch: ``(b"", offset)`` when nothing is there yet; None on a broker
        error."""
        return self._run(self._fetch_batches(topic, partition, offset, max_bytes),
                         f"raw fetch of {topic!r}[{partition}]@{offset}")

    async def _fetch_batches(self, topic: str, partition: int, offset: int,
                             max_bytes: int = READ_FETCH_BYTES) -> tuple[bytes, int] | None:
        from hindbrain.streams.kafka_batches import next_offset  # (pyarrow, chDB: only for raw batches)

        tp = await self._tp(topic, partition)
        if tp is None:
            return None
        client = self._producer.client  # _tp() asked it for this topic's metadata
        node = client.cluster.leader_for_partition(tp)
        if node is None or node < 0:
            return None
        request = FetchRequest(max_wait_time=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0,
                               topics=[(tp.topic, [(partition, offset, max_bytes)])])
        response = await client.send(node, request)
        ((_, ((_, error, _, *part),)),) = response.topics
        if error:
            return None
        records = part[-1]
        reached = next_offset(records)
        if reached is None or reached <= offset:
            return b"", offset
        return records, reached

    def end_offset(self, topic: str, partition: int) -> int:
        return self._run(self._end_offset(topic, partition), f"end offset of {topic!r}[{partition}]")

    async def _end_offset(self, topic: str, partition: int) -> int:
        tp = await self._tp(topic, partition)
        if tp is None:
            raise ValueError(f"topic {topic!r} has no partition {partition}")
        return (await self._reader.end_offsets([tp]))[tp]

    def end_offsets(self, topics: Iterable[str]) -> dict[tuple[str, int], int]:
        """``{(topic, partition): end offset}`` for every partition of ``topics``, in one request
        (``end_offset`` per partition costs a round trip each: 26 of them for the declared topics).
        A topic that does not exist has no partition here and is not created: reading the log
        (replay) does not write the cluster, and creating five empty topics cost a replay of 50k
        records on a fresh prefix ~0.25 s of its ~1 s."""
        topics = list(topics)
        return self._run(self._end_offsets(topics), f"end offsets of {len(topics)} topics")

    async def _end_offsets(self, topics: list[str]) -> dict[tuple[str, int], int]:
        cluster = await self._producer.client.fetch_all_metadata()
        tps = {TopicPartition(kafka_name(t, self.prefix), p): (t, p) for t in topics
               for p in sorted(cluster.partitions_for_topic(kafka_name(t, self.prefix)) or ())}
        ends = await self._reader.end_offsets(list(tps)) if tps else {}
        return {tps[tp]: end for tp, end in ends.items()}

    def principal_topics(self, create: bool = True) -> list[str]:
        """The principals' perceptions topics (log names, sorted): any such topic the cluster holds (an unknown
        principal's records are read to be dead-lettered, never left unread) and, with ``create``, those
        ``principals`` binds, created if missing (an agent principal may write its topic but not create it).
        Without ``create`` nothing is written to the cluster (a replay reads the log as it is)."""
        return self._run(self._principal_topics(create), "principal topics")

    async def _principal_topics(self, create: bool) -> list[str]:
        bound = [principal_topic(p) for p in self.principals] if create else []
        await self._ensure(self._spec(t) for t in bound)
        cluster = await self._producer.client.fetch_all_metadata()
        held = [t.removeprefix(self.prefix) for t in cluster.topics() if t.startswith(self.prefix + TOPIC_PREFIX)]
        return sorted({*bound, *filter(principal_of, held)})  # not a bare ``perceptions.by.``: no principal's

    # -- consumer offsets ------------------------------------------------------------------------
    def commit(self, consumer: str, topic: str, partition: int, offset: int) -> None:
        if not consumer or not isinstance(consumer, str):
            raise ValueError("consumer must be a non-empty str (it is the Kafka group id)")
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0, not {offset!r}")
        self._run(self._commit(consumer, topic, partition, offset), f"commit of {consumer!r}")

    async def _commit(self, consumer: str, topic: str, partition: int, offset: int) -> None:
        tp = await self._tp(topic, partition)
        if tp is None:
            raise ValueError(f"topic {topic!r} has no partition {partition}")
        committer = self._committers.get(consumer)
        if committer is None:
            # A group member in name only: it never joins (no subscribe), so committing does not
            # rebalance the group's real members; aiokafka only commits assigned partitions, and
            # they are paused so that it never fetches their records.
            committer = AIOKafkaConsumer(**self.client_options, client_id=self._client_id,
                                         group_id=consumer, enable_auto_commit=False,
                                         request_timeout_ms=int(self.timeout_s * 1000))
            await committer.start()
            self._committers[consumer] = committer  # started: stopped by close()
        if tp not in committer.assignment():
            committer.assign([*committer.assignment(), tp])
            committer.pause(*committer.assignment())
        await committer.commit({tp: offset})

    def committed(self, consumer: str, topic: str, partition: int) -> int:
        return self._run(self._committed(consumer, topic, partition), f"committed offset of {consumer!r}")

    async def _committed(self, consumer: str, topic: str, partition: int) -> int:
        tp = await self._tp(topic, partition)
        if tp is None:
            return 0
        while True:
            try:
                got = await self._admin.list_consumer_group_offsets(consumer, partitions=[tp])
                break
            except KafkaError as exc:
                # e.g. GroupCoordinatorNotAvailable right after the broker started; ``_run``'s
                # timeout bounds the retries.
                if not exc.retriable:
                    raise
                await asyncio.sleep(0.05)
        offset = got[tp].offset if tp in got else -1
        return max(offset, 0)  # -1: the group never committed this partition

    # -- closing ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Flush and stop every client, then the loop. Idempotent."""
        if self._closed:
            return
        try:
            self._run(self._stop(), "close")
        finally:
            self._shutdown()

    async def _stop(self) -> None:
        # Newest first: committers, reader, producer (stop() flushes what is still queued), admin.
        for client in [*self._committers.values(), *reversed(self._started)]:
            await (client.close() if isinstance(client, AIOKafkaAdminClient) else client.stop())

    def _shutdown(self) -> None:
        self._closed = True
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        self._loop.close()

    def __enter__(self) -> KafkaLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
