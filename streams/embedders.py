"""The neural tier in the fleet: embedder workers as a Kafka consumer group, a ``vectors`` topic.

``EmbedderWorker`` is one member of the consumer group ``<worker group>.embedders`` on the
``perceptions`` and ``cognitions`` topics: the group's members split those partitions, so N
workers embed ~N times as fast (up to the partition count, 4 per topic). Per fetch:
 1. decode each record and take what recall's index embeds of it (``recall.indexables.indexable``
    then ``semantic_text``), capped at the model's window (``recall.semantic.capped``);
 2. drop texts already embedded (deduped by the content key ``content_key(tenant, capped
    text)``, in the fetch and against the recent keys this worker produced);
 3. embed the rest in batches of ``BATCH`` texts taken round-robin across tenants (one
    tenant's bulk import shares every batch with the others' events);
 4. produce one message per text to ``vectors`` (key: the content key in hex, so a compacting
    or deduplicating reader keeps one per text; value: ``encode_vector``) and wait for the acks;
 5. only then commit the fetch's offsets. A crash before 5 re-embeds the fetch (a vector is a
    deterministic function of model and text: a duplicate is harmless).

``VectorTail`` is the Brain's side: it reads ``vectors`` from offset 0 (no group) into the
Brain's embedding cache, where its semantic index, opened in ``follow`` mode, finds each
document's neural vector by its content key (``recall.semantic``). Replay rebuilds both tiers:
the views from the record topics, the neural vectors from ``vectors`` without running the
model. The same worker uses a GPU when its embedder does (the batching is the same); the USE
model is numpy-only, so the CPU path is the one measured and tested.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np
from aiokafka import AIOKafkaConsumer, TopicPartition

from hindbrain.streams.kafka_log import KafkaLog, start_groupless
from hindbrain.streams.kafka_runner import FETCH_BYTES, POLL_S, _LoopThread, group_timing, next_offsets
from hindbrain.streams.log import LogEntry, Message
from hindbrain.streams.processing import decode_entry
from hindbrain.streams.topics import VECTORS, kafka_name

log = logging.getLogger(__name__)

SOURCES = ("perceptions", "cognitions")  # the topics whose records recall embeds
BATCH = 64  # texts per model call (recall.semantic's BATCH): amortises the call, bounds a fetch's time
FETCH = 512  # records per fetch: a fetch is embedded and committed as one unit
RECENT = 100_000  # content keys this worker remembers having produced (8 bytes + overhead each)
_MAGIC = b"HBV\x01"


def encode_vector(model: str, vector: np.ndarray) -> bytes:
    """``HBV1 | model name length (1 byte) | model name | float16 vector``."""
    name = model.encode("utf-8")
    if len(name) > 255:
        raise ValueError(f"model name over 255 bytes: {model!r}")
    return _MAGIC + struct.pack("B", len(name)) + name + np.asarray(vector, dtype="<f2").tobytes()


def decode_vector(value: bytes) -> tuple[str, np.ndarray]:
    """``(model, float32 vector)`` of a ``vectors`` message; ``ValueError`` naming what is wrong."""
    if value[:4] != _MAGIC or len(value) < 5:
        raise ValueError("a vectors message must start with HBV\\x01 and a model name length")
    end = 5 + value[4]
    if len(value) < end or (len(value) - end) % 2:
        raise ValueError(f"a vectors message of {len(value)} bytes is cut")
    return value[5:end].decode("utf-8"), np.frombuffer(value[end:], dtype="<f2").astype(np.float32)


def texts_of(entries: Iterable[LogEntry], window: int) -> list[tuple[str, bytes, str]]:
    """``(tenant, content key, capped text)`` of what recall embeds of each record (a record
    that does not decode adds nothing: the projector dead-letters it)."""
    from hindbrain.recall.documents import semantic_text
    from hindbrain.recall.indexables import indexable
    from hindbrain.recall.semantic import capped, content_key

    out = []
    for entry in entries:
        decoded = decode_entry(entry, 0)
        if isinstance(decoded, dict):
            continue
        for tenant, doc, _ in indexable(decoded):
            text = capped(semantic_text(doc), window)
            if text:
                out.append((tenant, content_key(tenant, text), text))
    return out


def fair_batches(items: list[tuple[str, bytes, str]], size: int = BATCH) -> list[list[tuple[str, bytes, str]]]:
    """``items`` in batches of ``size``, taken round-robin across tenants in order of arrival."""
    queues: OrderedDict[str, list] = OrderedDict()
    for item in items:
        queues.setdefault(item[0], []).append(item)
    order, depth = [], 0
    while queues:
        for tenant in list(queues):
            q = queues[tenant]
            if depth < len(q):
                order.append(q[depth])
            else:
                del queues[tenant]
        depth += 1
    return [order[i:i + size] for i in range(0, len(order), size)]


class EmbedderWorker(_LoopThread):
    """One member of the embedder group (see the module docstring). ``embedder``: anything with
    ``name``, ``dim`` and ``embed_passages(texts) -> (n, dim) array`` (``recall.embed``)."""

    def __init__(self, log_: KafkaLog, embedder, group: str, fetch: int = FETCH, session_timeout_s: float = 10.0):
        super().__init__(f"hindbrain-embedder {group}")
        from hindbrain.recall.semantic import window_of

        self.log, self.embedder, self.group, self.fetch = log_, embedder, group, fetch
        self.timing = group_timing(session_timeout_s)
        self.window = window_of(embedder)
        self.recent: OrderedDict[bytes, None] = OrderedDict()
        self.embedded = 0  # texts this worker ran through the model
        self.produced = 0  # vectors messages acknowledged
        for name in (*SOURCES, VECTORS.name):  # topics exist before the group subscribes
            log_.partitions(name)

    async def run(self) -> None:
        bare = {kafka_name(t, self.log.prefix): t for t in SOURCES}
        consumer = AIOKafkaConsumer(*bare, **self.log.client_options, group_id=self.group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=FETCH_BYTES, **self.timing)
        await consumer.start()
        try:
            while not self.stopping:
                fetched = await consumer.getmany(timeout_ms=int(POLL_S * 1000), max_records=self.fetch)
                if not fetched:
                    continue
                entries = [LogEntry(bare[tp.topic], tp.partition, r.offset, None, r.value or b"")
                           for tp, records in fetched.items() for r in records]
                messages = await asyncio.to_thread(self.vectors_of, entries)
                if messages:
                    await asyncio.to_thread(self.log.append, messages)
                    self.produced += len(messages)
                assigned = consumer.assignment()  # a rebalance may have moved some away: their new owner redoes them
                if kept := {tp: o for tp, o in next_offsets(fetched).items() if tp in assigned}:
                    await consumer.commit(kept)
        finally:
            await consumer.stop()

    def vectors_of(self, entries: list[LogEntry]) -> list[Message]:
        """The ``vectors`` messages for the new texts of ``entries`` (pure apart from the model)."""
        todo, seen = [], set()
        for item in texts_of(entries, self.window):
            if item[1] not in self.recent and item[1] not in seen:
                seen.add(item[1])
                todo.append(item)
        out = []
        for batch in fair_batches(todo):
            vectors = self.embedder.embed_passages([text for _, _, text in batch])
            self.embedded += len(batch)
            out += [Message(VECTORS.name, key.hex(), encode_vector(self.embedder.name, v))
                    for (_, key, _), v in zip(batch, vectors, strict=True)]
        for _, key, _ in todo:
            self.recent[key] = None
        while len(self.recent) > RECENT:
            self.recent.popitem(last=False)
        return out


class VectorTail(_LoopThread):
    """Reads ``vectors`` from offset 0 into ``cache`` (a ``recall.semantic.EmbeddingCache`` of
    this Brain's model; vectors of other models are skipped, a malformed message is logged and
    skipped: it is a projection, the text stays searchable by the static tier)."""

    def __init__(self, log_: KafkaLog, cache):
        super().__init__("hindbrain-vector-tail")
        self.log, self.cache = log_, cache
        self.received = 0
        self.positions: dict[int, int] = {}

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(**self.log.client_options, group_id=None,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=FETCH_BYTES)
        await start_groupless(consumer)
        try:
            name = kafka_name(VECTORS.name, self.log.prefix)
            tps = [TopicPartition(name, p) for p in self.log.partitions(VECTORS.name)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while not self.stopping:
                fetched = await consumer.getmany(timeout_ms=int(POLL_S * 1000), max_records=5000)
                rows = []
                for tp, records in fetched.items():
                    for r in records:
                        try:
                            model, vector = decode_vector(r.value or b"")
                            key = bytes.fromhex(r.key.decode("ascii")) if r.key else b""
                        except ValueError as exc:
                            log.warning("skipping vectors[%d]@%d: %s", tp.partition, r.offset, exc)
                            continue
                        if model == self.cache.model and len(vector) == self.cache.dim and len(key) == 8:
                            rows.append((key, vector))
                    self.positions[tp.partition] = records[-1].offset + 1
                if rows:
                    await asyncio.to_thread(self.cache.put, rows)
                    self.received += len(rows)
        finally:
            await consumer.stop()


def embedder_group(settings) -> str:
    """The embedder group's id, beside the projector's (``worker_group``)."""
    return f"{settings.worker_group}.embedders"


def run_embedder(settings, loglevel: str = "info") -> None:
    """Run one embedder worker until SIGTERM / Ctrl-C (``hindbrain embedder``). Blocks; exits
    with status 70 if the worker stops on an error (its last fetch uncommitted: redone by the
    partition's next owner)."""
    import os
    import signal
    import threading

    from hindbrain.recall.embed import embedder_from_name

    if not settings.kafka:
        raise ValueError("the embedder needs HINDBRAIN_KAFKA (bootstrap servers, host:port)")
    if settings.embedder == "none":
        raise ValueError("HINDBRAIN_EMBEDDER is none: there is no model to run")
    logging.basicConfig(level=loglevel.upper())
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log_ = KafkaLog.of(settings)
    worker = EmbedderWorker(log_, embedder_from_name(settings.embedder), embedder_group(settings),
                            session_timeout_s=settings.worker_session_timeout)
    worker.start()
    try:
        while not stop.wait(1.0):
            if not worker.alive:
                log.critical("the embedder stopped: exiting without committing its last fetch")
                os._exit(70)
    finally:
        worker.stop()
        log_.close()
