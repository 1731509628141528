"""The learner over Kafka: one consumer over the agent topics, appending what it learns.

The same ``Learner.process`` as in the embedded brain, fed from Kafka:

* **one instance per fleet**: its state (units, trajectories, negatives per topic) is per
  tenant and a tenant's records are spread over partitions, so it assigns itself every
  partition instead of sharing them in a group; its offsets are committed under
  ``learner_group``. Run it in the single-node Brain (``chdb:///``, started automatically)
  or as ``hindbrain learner`` beside the workers.
* **order**: Kafka orders records per partition only; each fetched batch is processed in
  the order of its records' times (``ts_us``), which is the order the agents produced them.
* **restore**: on start it folds every record before its committed offsets
  (``restoring=True``: its own decisions give the units' states, nothing is appended), then
  follows from there. Records it appended after its last commit may be appended again after
  a crash; their ids derive from their cause, so the views keep one of each.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import nullcontext

from aiokafka import AIOKafkaConsumer, TopicPartition

from hindbrain.learning.learner import Learner
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import now_us
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.kafka_runner import FETCH_BYTES, POLL_S, _LoopThread
from hindbrain.streams.log import LogEntry
from hindbrain.streams.processing import Decoded, dead_letter, decoded_entries, to_messages
from hindbrain.streams.topics import kafka_name

TOPICS = ("perceptions", "cognitions", "recalls", "outcomes", "decisions")  # what the learner's handlers read


class KafkaLearner(_LoopThread):
    def __init__(self, log: KafkaLog, group: str, extractor=None, batch_size: int = 2000):
        super().__init__(f"hindbrain-learner {group}")
        self.log, self.group, self.batch_size = log, group, batch_size
        self.learner = Learner(extractor)
        self.positions: dict[tuple[str, int], int] = {}  # next offset per (topic, partition), processed
        self.restored = False
        for topic in TOPICS:
            log.partitions(topic)  # the topics exist before it assigns them

    def reading(self):
        """As ``LearnerRuntime.reading``; not yet a lock here: this learner folds on its loop
        thread, and the SDK's readers wait for it to catch up (``wait_until_caught_up``)."""
        return nullcontext()

    def commit(self, snapshot: bool = False) -> None:
        """Offsets are committed after every batch; nothing to do on close (no snapshot yet
        over Kafka: a restart folds the topics)."""

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.log.bootstrap, group_id=self.group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=FETCH_BYTES)
        await consumer.start()
        try:
            tps = {TopicPartition(kafka_name(t, self.log.prefix), p): t for t in TOPICS for p in self.log.partitions(t)}
            consumer.assign(list(tps))
            committed = {tp: (await consumer.committed(tp)) or 0 for tp in tps}
            await self._restore(consumer, tps, committed)
            self.restored = True
            while not self.stopping:
                batch = await self._fetch(consumer, tps)
                if batch:
                    await self._learn(batch)
                    await consumer.commit({tp: self.positions[(tps[tp], tp.partition)] for tp in tps
                                           if (tps[tp], tp.partition) in self.positions})
        finally:
            await consumer.stop()

    async def _restore(self, consumer, tps: dict, committed: dict) -> None:
        for tp in tps:
            consumer.seek(tp, 0)
        behind = {tp for tp, offset in committed.items() if offset > 0}
        restored: list[Decoded] = []
        while behind:
            fetched = await consumer.getmany(*behind, timeout_ms=int(POLL_S * 1000), max_records=self.batch_size)
            for tp, records in fetched.items():
                restored += self._decoded(tps[tp], tp.partition, [r for r in records if r.offset < committed[tp]])
                if records and records[-1].offset + 1 >= committed[tp]:
                    behind.discard(tp)
        restored.sort(key=_time_order)
        self.learner.process(restored, restoring=True)
        for tp, offset in committed.items():
            consumer.seek(tp, offset)
            self.positions[(tps[tp], tp.partition)] = offset

    async def _fetch(self, consumer, tps: dict) -> list[Decoded]:
        fetched = await consumer.getmany(timeout_ms=int(POLL_S * 1000), max_records=self.batch_size)
        batch: list[Decoded] = []
        for tp, records in fetched.items():
            batch += self._decoded(tps[tp], tp.partition, records)
        return sorted(batch, key=_time_order)

    def _decoded(self, topic: str, partition: int, records) -> list[Decoded]:
        """The records that decode and validate: the projector dead-letters the others (a
        perception without a tenant, on the wrong topic, ...), so the learner does not learn
        from them either."""
        if records:
            self.positions[(topic, partition)] = records[-1].offset + 1
        return decoded_entries([LogEntry(topic, partition, r.offset, None, r.value or b"") for r in records])

    async def _learn(self, batch: list[Decoded]) -> None:
        out = []
        for decoded in batch:
            try:
                out += self.learner.process([decoded])
            except Exception as exc:  # a rule bug must not stop the stream; the record is kept
                out.append(("dead_letter", dead_letter(decoded.position, "learn", f"{type(exc).__name__}: {exc}",
                                                        registry.encode(decoded.record_type, decoded.record),
                                                        now_us(), decoded.record["envelope"]["tenant"])))
        if out:
            await asyncio.to_thread(self.log.append, to_messages(out))

    def wait_until_caught_up(self, timeout_s: float = 30.0) -> None:
        """Block until the learner has processed everything in its topics now (for the SDK's
        approve/pending_traits and for tests). Raises TimeoutError saying where it stands."""
        ends = {(t, p): self.log.end_offset(t, p) for t in TOPICS for p in self.log.partitions(t)}
        deadline = time.monotonic() + timeout_s
        while not self.restored or any(self.positions.get(k, 0) < end for k, end in ends.items()):
            if not self.alive:
                self.stop()  # raises the thread's error
                raise RuntimeError("the learner stopped")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the learner has not reached {ends} within {timeout_s}s: at {self.positions}")
            time.sleep(0.02)


def _time_order(decoded: Decoded) -> tuple:
    return decoded.record["envelope"]["ts_us"], TOPICS.index(decoded.position.topic), decoded.position.offset
