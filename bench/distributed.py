"""Distributed-mode benchmarks against a real Kafka broker, each beside its embedded baseline.

    HINDBRAIN_KAFKA=127.0.0.1:19092 python bench/distributed.py [--events N] [--repeats R]

Prints, as medians of R runs (default 3):
1. producer: records/s appended by one process (KafkaLog, acks=all) vs the SQLite log;
2. end to end: ~1 KB events/s from Kafka into the views by ONE `hindbrain worker` process
   (each engine: Faust, and aiokafka, the default; chDB views), timed from its first commit
   to its last, vs the embedded runner
   projecting the same records;
3. replay from Kafka (every partition from offset 0) vs replay from the SQLite log, in-process
   and with 2 worker processes (chunks of partitions, each worker on its own connection);
4. recall freshness: p50/p99 seconds from another process's append to "recallable" in a
   Brain's index (its IndexTail), target p99 <= 1 s.
Each run uses fresh topic names (a unique prefix) and fresh temporary folders.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from hindbrain.brain import Brain
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.log import Message
from hindbrain.streams.replay import replay
from hindbrain.streams.runner import EmbeddedRunner
from hindbrain.streams.sqlite_log import SqliteLog
from hindbrain.streams.topics import TOPICS, key_of

WORDS = [f"{w}{i}" for i in range(400) for w in ("deploy", "submit", "IAM", "timeout", "账户", "权限")]


def one_kb_messages(n: int, seed: int) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        record = {
            "envelope": envelope("perception", f"tenant-{i % 8}", agent=f"agent-{i % 32}", task=f"task-{i}"),
            "kind": "message", "text": " ".join(rng.choices(WORDS, k=120))[:900], "system": "IAM",
            "identity": None, "action": None, "expected": None, "actual": None, "entities": ["IAM"],
            "scope": {"env": "prod"}, "signal": None, "success": None, "polarity": None, "session": None,
            "speaker": None, "emotion": None,
        }
        out.append(Message("perceptions", key_of(record), registry.encode("perception", record)))
    return out


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds else float("inf")


def bench_producer(kafka: str, messages: list[Message], folder: Path) -> tuple[float, float]:
    log = KafkaLog(kafka, prefix=f"bench-{uuid.uuid4().hex[:8]}.")
    try:
        log.partitions("perceptions")  # topic creation is not part of the number
        t0 = time.perf_counter()
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        kafka_rate = rate(len(messages), time.perf_counter() - t0)
    finally:
        log.close()
    sqlite = SqliteLog(folder / "producer.sqlite")
    t0 = time.perf_counter()
    for i in range(0, len(messages), 5000):
        sqlite.append(messages[i : i + 5000])
    sqlite.close()
    return kafka_rate, rate(len(messages), time.perf_counter() - t0)


def wait_committed(log: KafkaLog, group: str, timeout_s: float = 300) -> tuple[float, float]:
    """(time of the first progress, time everything was committed) of ``group``."""
    ends = {(t.name, p): log.end_offset(t.name, p) for t in TOPICS for p in log.partitions(t.name)}
    first = None
    deadline = time.monotonic() + timeout_s
    while True:
        done = {k: log.committed(group, *k) for k in ends}
        if first is None and any(done.values()):
            first = time.perf_counter()
        if all(done[k] >= ends[k] for k in ends):
            return first or time.perf_counter(), time.perf_counter()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{group} stuck at {done} of {ends}")
        time.sleep(0.01)


def bench_end_to_end(kafka: str, messages: list[Message], folder: Path, engine: str = "faust") -> tuple[float, float]:
    prefix, group = f"bench-{uuid.uuid4().hex[:8]}.", f"bench-{uuid.uuid4().hex[:8]}"
    folder = folder / engine
    folder.mkdir()
    log = KafkaLog(kafka, prefix=prefix)
    try:
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        env = {**os.environ, "HINDBRAIN_KAFKA": kafka, "HINDBRAIN_KAFKA_PREFIX": prefix,
               "HINDBRAIN_WORKER_GROUP": group, "HINDBRAIN_CLICKHOUSE": f"chdb://{folder / 'worker-views'}",
               "HINDBRAIN_BATCH_SIZE": "5000", "HINDBRAIN_BATCH_WITHIN": "0.2"}
        worker = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(folder), "worker",
                                   "--loglevel", "error", "--engine", engine], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            first, last = wait_committed(log, group)
        finally:
            worker.terminate()
            worker.wait(60)
        # the first commit already covers one batch: count from there
        kafka_rate = rate(len(messages) - 5000, last - first)
    finally:
        log.close()
    sqlite = SqliteLog(folder / "e2e.sqlite")
    sqlite.append(messages)
    warehouse = Warehouse(f"chdb://{folder / 'embedded-views'}")
    warehouse.migrate()
    t0 = time.perf_counter()
    EmbeddedRunner(sqlite, warehouse, batch_size=5000).catch_up(chunk=5000)
    embedded_rate = rate(len(messages), time.perf_counter() - t0)
    warehouse.close()
    sqlite.close()
    return kafka_rate, embedded_rate


def bench_replay(kafka: str, messages: list[Message], folder: Path, workers: int = 0) -> tuple[float, float]:
    """Replay from Kafka vs from the SQLite log, in-process or with ``workers`` processes."""
    log = KafkaLog(kafka, prefix=f"bench-{uuid.uuid4().hex[:8]}.")
    sqlite = SqliteLog(folder / f"replay-{workers}.sqlite")
    warehouse = Warehouse(f"chdb://{folder / 'replay-views'}", database=f"from_kafka_{workers}")
    try:
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        kafka_rate = replay(log, warehouse, workers=workers).records_per_second
        sqlite.append(messages)
        embedded = Warehouse(warehouse.url, database=f"from_sqlite_{workers}")
        embedded_rate = replay(sqlite, embedded, workers=workers).records_per_second
        embedded.close()
    finally:
        warehouse.close()
        log.close()
        sqlite.close()
    return kafka_rate, embedded_rate


def bench_freshness(kafka: str, folder: Path, samples: int = 200) -> tuple[float, float]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}."
    other = KafkaLog(kafka, prefix=prefix)
    lags = []
    with Brain.open(folder / "fresh", kafka=kafka, kafka_prefix=prefix) as brain:
        for i in range(samples):
            record = {"envelope": envelope("perception", "acme", agent="other-agent"), "kind": "message",
                      "text": f"marker {i}", "system": None, "identity": None, "action": None, "expected": None,
                      "actual": None, "entities": [], "scope": {}, "signal": None, "success": None,
                      "polarity": None, "session": None, "speaker": None, "emotion": None}
            t0 = time.perf_counter()
            other.append([Message("perceptions", key_of(record), registry.encode("perception", record))])
            event_id = record["envelope"]["record_id"]
            while event_id not in brain.index.tenant("acme").by_id:
                time.sleep(0.001)
                assert time.perf_counter() - t0 < 10, "an event never became recallable"
            lags.append(time.perf_counter() - t0)
    other.close()
    lags.sort()
    return lags[len(lags) // 2], lags[int(len(lags) * 0.99) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    kafka = os.environ.get("HINDBRAIN_KAFKA") or sys.exit("set HINDBRAIN_KAFKA=host:port (make kafka-up)")
    messages = one_kb_messages(args.events, seed=1)
    size = statistics.mean(len(m.value) for m in messages)
    runs: dict[str, list[float]] = {}
    for n in range(args.repeats):
        folder = Path(tempfile.mkdtemp(prefix="hb-dist-"))
        try:
            for name, fn in (("producer", bench_producer), ("end to end", bench_end_to_end),
                             ("end to end aiokafka", lambda *a: bench_end_to_end(*a, engine="aiokafka")),
                             ("replay", bench_replay),
                             ("replay 2 workers", lambda *a: bench_replay(*a, workers=2))):
                kafka_value, embedded_value = fn(kafka, messages, folder)
                runs.setdefault(f"{name} kafka", []).append(kafka_value)
                runs.setdefault(f"{name} embedded", []).append(embedded_value)
                print(f"run {n + 1}: {name}: kafka {kafka_value:,.0f}/s, embedded {embedded_value:,.0f}/s", flush=True)
            p50, p99 = bench_freshness(kafka, folder)
            runs.setdefault("freshness p50", []).append(p50)
            runs.setdefault("freshness p99", []).append(p99)
            print(f"run {n + 1}: freshness p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms", flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"\nhindbrain distributed bench: {args.events:,} events of ~{size:.0f} bytes, median of {args.repeats}")
    rows = (("producer records/s", "producer", 30_000),
            ("end-to-end events/s, 1 Faust worker", "end to end", 15_000),
            ("end-to-end events/s, 1 aiokafka worker", "end to end aiokafka", 15_000),
            ("replay records/s, in-process", "replay", 50_000),
            ("replay records/s, 2 worker processes", "replay 2 workers", 50_000))
    for label, key, target in rows:
        k, e = med[f"{key} kafka"], med[f"{key} embedded"]
        print(f"{label:<40}{k:>12,.0f}  target >= {target:,}  {'PASS' if k >= target else 'MISS'}"
              f"   embedded {e:,.0f} (kafka/embedded {k / e:.2f})")
    p99 = med["freshness p99"]
    print(f"{'recall freshness p50 / p99 (s)':<40}{med['freshness p50']:>6.3f} / {p99:.3f}  target p99 <= 1 s  "
          f"{'PASS' if p99 <= 1 else 'MISS'}   embedded: immediate (same process)")


if __name__ == "__main__":
    main()
