"""The learner over Kafka: one consumer over the agent topics, appending what it learns.

The same ``Learner`` as in the embedded brain, fed from Kafka:

* **one instance per fleet**: its state (units, trajectories, negatives per topic) is per
  tenant and a tenant's records are spread over partitions, so it assigns itself every
  partition instead of sharing them in a group; its offsets are committed under
  ``learner_group``. Run it in the single-node Brain (``chdb:///``, started automatically)
  or as ``hindbrain learner`` beside the workers.
* **order**: Kafka orders records per partition only; each fetched batch is processed in
  the order of its records' times (``ts_us``), which is the order the agents produced them,
  in one ``Learner.learn`` call (the same decisions as record by record, docs/speed.md
  "The Kafka learner, round thirteen"); a record a rule fails on is dead-lettered, the rest go on.
* **readers**: the loop folds each batch holding a lock that ``reading()`` returns, so the
  SDK's ``pending_traits`` / ``approve`` / ``invalidate`` read the state between two batches,
  never halfway through one; ``positions`` move past a batch only once it is folded, so
  ``wait_until_caught_up`` returns with those records in the state.
* **restore**: on start it folds every record before its committed offsets
  (``restoring=True``: its own decisions give the units' states, nothing is appended), then
  follows from there. Records it appended after its last commit may be appended again after
  a crash; their ids derive from their cause, so the views keep one of each.
"""

from __future__ import annotations

import asyncio
import threading
import time

from aiokafka import AIOKafkaConsumer, TopicPartition

from hindbrain.learning.learner import Learner
from hindbrain.learning.runtime import learn_dead_letters
from hindbrain.streams.gc_pause import gc_paused
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.kafka_runner import FETCH_BYTES, POLL_S, _LoopThread
from hindbrain.streams.log import LogEntry
from hindbrain.streams.principals import NO_PRINCIPALS, Principals, principal_of
from hindbrain.streams.processing import Decoded, decoded_entries, to_messages
from hindbrain.streams.topics import kafka_name

# what the learner's handlers read: the injections too, which units an outcome's recall put into the context
TOPICS = ("perceptions", "cognitions", "recalls", "injections", "outcomes", "decisions")
HELD_BATCHES = 8  # fetched records held for the topics' time alignment, in batches, before the oldest go anyway


class KafkaLearner(_LoopThread):
    def __init__(self, log: KafkaLog, group: str, extractor=None, batch_size: int = 2000):
        super().__init__(f"hindbrain-learner {group}")
        self.log, self.group, self.batch_size = log, group, batch_size
        self.learner = Learner(extractor)
        self.positions: dict[tuple[str, int], int] = {}  # next offset per (topic, partition), folded
        # Fetched, not yet folded: held until every partition still behind has been read past their time
        # (``_aligned``), with the next offset fetched and the last envelope time read per partition.
        self._held: list[Decoded] = []
        self._fetched_to: dict[tuple[str, int], int] = {}
        self._read_until: dict[tuple[str, int], int] = {}
        self._full = False
        self.restored = False
        self._folding = threading.RLock()  # held by each fold and by the SDK's readers (``reading``)
        for topic in TOPICS:
            log.partitions(topic)  # the topics exist before it assigns them
        # and the principals' perceptions topics (``streams.principals``), checked against the log's bindings
        self.topics = (*TOPICS, *log.principal_topics())

    def reading(self):
        """Hold while reading the learner's state (the SDK's ``approve``, ``invalidate``,
        ``pending_traits``, after ``wait_until_caught_up``): the loop thread folds each batch under
        it. A reader holds it for microseconds; the loop waits for it without awaiting (the fold
        is synchronous anyway), so nothing else of this learner runs meanwhile."""
        return self._folding

    def commit(self, snapshot: bool = False) -> None:
        """Offsets are committed after every batch; nothing to do on close (no snapshot yet
        over Kafka: a restart folds the topics)."""

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(**self.log.client_options, group_id=self.group,
                                    enable_auto_commit=False, auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=FETCH_BYTES)
        await consumer.start()
        try:
            tps = {TopicPartition(kafka_name(t, self.log.prefix), p): t
                   for t in self.topics for p in self.log.partitions(t)}
            consumer.assign(list(tps))
            committed = {tp: (await consumer.committed(tp)) or 0 for tp in tps}
            await self._restore(consumer, tps, committed)
            self.restored = True
            while not self.stopping:
                batch, reached = await self._fetch(consumer, tps)
                if reached:
                    await self._learn(batch, reached)
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
                with gc_paused():
                    restored += _decoded(tps[tp], tp.partition, [r for r in records if r.offset < committed[tp]],
                                         self.log.principals)
                if records and records[-1].offset + 1 >= committed[tp]:
                    behind.discard(tp)
        restored.sort(key=_time_order)
        with self._folding, gc_paused():
            self.learner.process(restored, restoring=True)
            for tp, offset in committed.items():
                consumer.seek(tp, offset)
                self.positions[(tps[tp], tp.partition)] = offset

    async def _fetch(self, consumer, tps: dict) -> tuple[list[Decoded], dict[tuple[str, int], int]]:
        """(the fetched records that decode and may be folded now, in time order; the next offset per
        partition they reach)."""
        # a full batch folded last time may have left more ready: do not wait for new records then
        wait_s = 0 if self._full else POLL_S
        fetched = await consumer.getmany(timeout_ms=int(wait_s * 1000), max_records=self.batch_size)
        with gc_paused():  # decoded records: acyclic, freed by reference counting
            for tp, records in fetched.items():
                if records:
                    key = (tps[tp], tp.partition)
                    self._fetched_to[key] = records[-1].offset + 1
                    decoded = _decoded(tps[tp], tp.partition, records, self.log.principals)
                    if decoded:
                        self._read_until[key] = decoded[-1].record["envelope"]["ts_us"]
                    self._held += decoded
        behind = [(tps[tp], tp.partition) for tp in tps if consumer.highwater(tp) is not None
                  and self._fetched_to.get((tps[tp], tp.partition), self.positions.get((tps[tp], tp.partition), 0))
                  < consumer.highwater(tp)]
        batch, self._held, reached = _aligned(self._held, behind, self._read_until, self._fetched_to,
                                              self.batch_size)
        self._full = len(batch) == self.batch_size
        return batch, {k: v for k, v in reached.items() if v > self.positions.get(k, 0)}

    async def _learn(self, batch: list[Decoded], reached: dict[tuple[str, int], int]) -> None:
        """Fold ``batch`` in one call under the readers' lock, move ``positions`` past it, then
        append what was learned (its dead letters last: they go to a topic of their own)."""
        with gc_paused():  # ~25 % of the loop's CPU went to collections over what a batch allocates
            with self._folding:
                learned, failed = self.learner.learn(batch)  # a rule bug must not stop the stream: dead-lettered
                self.positions.update(reached)
            out = learned + learn_dead_letters(failed)
            messages = to_messages(out)
        if messages:
            await asyncio.to_thread(self.log.append, messages)

    def wait_until_caught_up(self, timeout_s: float = 30.0) -> None:
        """Block until the learner has processed everything in its topics now (for the SDK's
        approve/pending_traits and for tests). Raises TimeoutError saying where it stands."""
        ends = {(t, p): self.log.end_offset(t, p) for t in self.topics for p in self.log.partitions(t)}
        deadline = time.monotonic() + timeout_s
        while not self.restored or any(self.positions.get(k, 0) < end for k, end in ends.items()):
            if not self.alive:
                self.stop()  # raises the thread's error
                raise RuntimeError("the learner stopped")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the learner has not reached {ends} within {timeout_s}s: at {self.positions}")
            time.sleep(0.02)


def _decoded(topic: str, partition: int, records, principals: Principals = NO_PRINCIPALS) -> list[Decoded]:
    """The records that decode and validate: the projector dead-letters the others (a perception
    without a tenant, on the wrong topic, naming what its principal may not speak for, ...), so the
    learner does not learn from them either."""
    return decoded_entries([LogEntry(topic, partition, r.offset, None, r.value or b"") for r in records], principals)


def _aligned(held: list[Decoded], behind: list[tuple[str, int]], read_until: dict[tuple[str, int], int],
             fetched_to: dict[tuple[str, int], int], limit: int
             ) -> tuple[list[Decoded], list[Decoded], dict[tuple[str, int], int]]:
    """Pure: (what may be folded now, in time order, at most ``limit``; what waits; the next offset per
    partition folded to).

    The learner reads several topics, and Kafka orders records only within a partition: catching up on a
    backlog, one poll may bring a topic's outcomes before the perceptions and injections they follow, and an
    outcome whose units the learner does not know yet, or whose recall's injection it has not read, credits
    nothing. So a record waits until every partition still behind (fetched short of its end) has been read
    up to its time; a partition caught up bounds nothing, and one not fetched yet is not waited for. What
    waits is bounded: past ``HELD_BATCHES`` batches the oldest are folded anyway (order best-effort, memory not)."""
    ordered = sorted(held, key=_time_order)
    bound = min((read_until.get(key, -1) for key in behind), default=None)
    ready = 0
    while ready < min(limit, len(ordered)) and (bound is None or ordered[ready].record["envelope"]["ts_us"] <= bound):
        ready += 1
    if ready == 0 and len(ordered) > HELD_BATCHES * limit:
        ready = limit
    waiting = ordered[ready:]
    reached = dict(fetched_to)
    for d in waiting:
        key = (d.position.topic, d.position.partition)
        reached[key] = min(reached[key], d.position.offset)
    return ordered[:ready], waiting, reached


def _time_order(decoded: Decoded) -> tuple:
    return decoded.record["envelope"]["ts_us"], TOPICS.index(_shared(decoded.position.topic)), decoded.position.offset


def _shared(topic: str) -> str:
    """The shared topic a record's topic orders as: a principal's perceptions as ``perceptions``."""
    return "perceptions" if principal_of(topic) else topic
