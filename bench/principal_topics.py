"""The projector over principals' perceptions topics (docs/distributed.md, "The broker's principal is the sender,
round thirty-three"): its rate with the perceptions on the shared topic, on 1 and on 20 principal topics, and the
consumer group's start and rebalance with the pattern subscription against the topic list.

    HINDBRAIN_KAFKA=127.0.0.1:19401 python bench/principal_topics.py [--events 20000] [--rounds 3]

Rate: the same ~1.2 KB perceptions (``bench/distributed.py``'s words) appended under a fresh prefix per arm and run,
then an in-process ``KafkaProjector`` (the aiokafka engine, into a fresh chDB database) timed from its start to
the group's commit of every record (so the group's join is in it; the time to its first commit is printed apart).
Tenant ``tenant-i`` writes through principal ``p<i>``, bound to it (``HINDBRAIN_KAFKA_PRINCIPALS`` ``p<i>=tenant-i``),
so every record passes the check. Arms alternate in each round (paired); medians and the load are printed.

Group: one aiokafka consumer of a fresh group subscribes (the 7 declared topics as a list, as the base's projector
did, or the projector's pattern with 20 principal topics beside them), timed from ``start()`` to its first
assignment; then a second joins, timed to the moment both hold partitions (the rebalance). Session 10 s and
heartbeat 3 s, as the projector's (``kafka_runner.group_timing``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
import uuid

from aiokafka import AIOKafkaConsumer
from distributed import WORDS

from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.kafka_runner import KafkaProjector, group_timing, subscription
from hindbrain.streams.log import Message
from hindbrain.streams.principals import parse_principals, principal_topic
from hindbrain.streams.topics import TOPICS, kafka_name, key_of


def messages_of(n: int, principals: int | None, seed: int = 7) -> list[Message]:
    """``n`` perceptions of tenants ``tenant-0``… (20 of them), on the shared topic (``principals`` None) or each
    tenant's on its principal's topic (``principals`` of them: tenant i through p<i mod principals>)."""
    rng, out = random.Random(seed), []
    for i in range(n):
        tenant = i % 20 if principals is None else i % principals
        record = {
            "envelope": envelope("perception", f"tenant-{tenant}", agent=f"agent-{i % 32}", task=f"task-{i}"),
            "kind": "message", "text": " ".join(rng.choices(WORDS, k=120))[:900], "system": "IAM",
            "identity": None, "action": None, "expected": None, "actual": None, "entities": ["IAM"],
            "scope": {"env": "prod"}, "signal": None, "success": None, "polarity": None, "session": None,
            "speaker": None, "emotion": None,
        }
        topic = "perceptions" if principals is None else principal_topic(f"p{tenant}")
        out.append(Message(topic, key_of(record), registry.encode("perception", record)))
    return out


def bindings(principals: int):
    return parse_principals(",".join(f"p{i}=tenant-{i}" for i in range(principals)))


def projected_rate(kafka: str, n: int, principals: int | None, folder: str) -> tuple[float, float]:
    """(records/s from the projector's start to its last commit, seconds to its first commit)."""
    prefix = f"bench-{uuid.uuid4().hex[:8]}."
    log = KafkaLog(kafka, prefix=prefix, principals=bindings(principals or 0))
    warehouse = Warehouse(f"chdb://{folder}", database=f"b{uuid.uuid4().hex[:8]}")
    try:
        messages = messages_of(n, principals)
        for i in range(0, n, 5000):
            log.append(messages[i : i + 5000])
        topics = [*(t.name for t in TOPICS), *log.principal_topics()]
        ends = {(t, p): log.end_offset(t, p) for t in topics for p in log.partitions(t)}
        ends = {k: v for k, v in ends.items() if v}
        warehouse.migrate()
        group = f"{prefix}projector"
        projector = KafkaProjector(log, warehouse, group)
        t0 = time.perf_counter()
        projector.start()
        first = None
        try:
            while True:
                done = {k: log.committed(group, *k) for k in ends}
                if first is None and any(done.values()):
                    first = time.perf_counter() - t0
                if all(done[k] >= ends[k] for k in ends):
                    return n / (time.perf_counter() - t0), first or 0.0
                assert projector.alive, "the projector stopped"
                time.sleep(0.01)
        finally:
            projector.stop()
    finally:
        warehouse.close()
        log.close()


async def _assigned(consumers, deadline: float) -> None:
    while not all(c.assignment() for c in consumers):
        if time.monotonic() > deadline:
            raise TimeoutError("no assignment")
        await asyncio.sleep(0.005)


async def group_times(kafka: str, prefix: str, pattern: bool) -> tuple[float, float]:
    """(seconds from a first member's start to its assignment, from a second's start to both holding partitions)."""
    group = f"{prefix}g-{uuid.uuid4().hex[:6]}"
    options = dict(bootstrap_servers=kafka, group_id=group, enable_auto_commit=False, **group_timing(10.0))
    members = []

    def member() -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(**options)
        if pattern:
            consumer.subscribe(pattern=subscription(prefix))
        else:
            consumer.subscribe([kafka_name(t.name, prefix) for t in TOPICS])
        members.append(consumer)
        return consumer

    try:
        first = member()
        t0 = time.perf_counter()
        await first.start()
        await _assigned([first], time.monotonic() + 60)
        start = time.perf_counter() - t0
        second = member()
        t0 = time.perf_counter()
        await second.start()
        # the first member rejoins at its next heartbeat; poll both so each runs its group duties
        while not (first.assignment() and second.assignment()):
            await asyncio.gather(first.getmany(timeout_ms=5), second.getmany(timeout_ms=5))
        return start, time.perf_counter() - t0
    finally:
        for consumer in members:
            await consumer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    kafka = os.environ["HINDBRAIN_KAFKA"]
    arms = {"shared perceptions": None, "1 principal topic": 1, "20 principal topics": 20}
    rates: dict[str, list[float]] = {a: [] for a in arms}
    firsts: dict[str, list[float]] = {a: [] for a in arms}
    with tempfile.TemporaryDirectory(prefix="hb-principals-") as folder:
        for r in range(args.rounds):
            order = list(arms) if r % 2 == 0 else list(reversed(arms))
            for arm in order:
                rate, first = projected_rate(kafka, args.events, arms[arm], folder)
                rates[arm].append(rate)
                firsts[arm].append(first)
                print(f"round {r + 1} {arm}: {rate:,.0f} records/s, first commit after {first:.2f} s", flush=True)
    print(f"\nload average {os.getloadavg()}")
    for arm in arms:
        print(f"{arm:>22}: median {statistics.median(rates[arm]):,.0f} records/s "
              f"(runs {', '.join(f'{x:,.0f}' for x in rates[arm])}); first commit median "
              f"{statistics.median(firsts[arm]):.2f} s")
    base = rates["1 principal topic"]
    print("20 / 1 principal topics, paired ratios:",
          ", ".join(f"{b / a:.2f}" for a, b in zip(base, rates["20 principal topics"], strict=True)))

    prefix = f"bench-{uuid.uuid4().hex[:8]}."
    log = KafkaLog(kafka, prefix=prefix, principals=bindings(20))
    try:
        for t in TOPICS:
            log.partitions(t.name)
        log.principal_topics()  # 20 principal topics beside the declared ones
    finally:
        log.close()
    times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    for r in range(args.rounds):
        for pattern in ((False, True) if r % 2 == 0 else (True, False)):
            times[pattern].append(asyncio.run(group_times(kafka, prefix, pattern)))
    for pattern, label in ((False, "7 topics as a list"), (True, "pattern, 27 topics")):
        starts, joins = zip(*times[pattern], strict=True)
        print(f"group of {label:>18}: first assignment median {statistics.median(starts):.2f} s "
              f"({', '.join(f'{x:.2f}' for x in starts)}); rebalance on a second member median "
              f"{statistics.median(joins):.2f} s ({', '.join(f'{x:.2f}' for x in joins)})")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
