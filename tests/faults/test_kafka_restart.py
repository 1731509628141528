"""Fault injection: the Kafka broker restarts mid-stream (design.md §issue-19).

The broker is this test's own (never the shared test broker): ``deploy/kafka/kafka-up.sh`` on a
free port and a data folder of its own, stopped with SIGTERM (``kafka-down.sh``) while a Brain
appends over Kafka, then started again on the same data. Like every Kafka test it runs when
``HINDBRAIN_TEST_KAFKA`` is set (``make test`` sets it where ``java`` and ``mvn`` are), and it
needs ``java`` (17+) and the Kafka jars (fetched by ``mvn`` once); otherwise it skips saying so.

A writer thread perceives events (ids of its own) through ``Brain.open(kafka=...)``, which also
projects into its chDB views; a real ``hindbrain worker`` process (aiokafka engine, its own
consumer group and chDB folder) projects the same topics. After 50 acknowledged events the test
holds the writer between two appends, stops the broker and lets the writer go: its next append
begins while the broker is down (arranged, not hoped for: design.md §issue-31), and the broker starts again
once it has; that append is acknowledged after the broker is back (asserted), and 50 more are.
Then: every acknowledged event is in the
``perceptions`` topic exactly once (the producer is idempotent: its retries across the restart
are not written twice), an event whose call raised at most once; the writer's views and the
worker's hold every event of the topic exactly once and equal each other (the same digest); the
worker never crashed (exit 0 on SIGTERM).

Cost: two broker starts (3-4 s each on an idle machine, C1-compiled JVM; 9-10 s under load)
dominate the time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from fault_helpers import free_port, skip

from hindbrain import Brain
from hindbrain.schemas.codec import registry

sys.path.append(str(Path(__file__).resolve().parents[1] / "distributed"))  # the worker proofs' helpers
from helpers import WorkerProcess, committed, dump_views, wait_for, wait_until_committed_to_end  # noqa: E402

KAFKA_DIR = Path(__file__).resolve().parents[2] / "deploy" / "kafka"
KAFKA_ENV = "HINDBRAIN_TEST_KAFKA"
BEFORE, AFTER = 50, 50  # events acknowledged before the broker stops, and after it is back


class OwnBroker:
    """A single-node broker of this test's own, started and stopped by the repo's scripts."""

    def __init__(self, data: Path):
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        # C1 only: a test broker lives seconds; full JIT compilation costs more than it saves
        self.env = {**os.environ, "HINDBRAIN_KAFKA_DATA": str(data), "HINDBRAIN_KAFKA_PORT": str(self.port),
                    "HINDBRAIN_KAFKA_WAIT": "120", "KAFKA_HEAP_OPTS": "-Xms128m -Xmx512m -XX:TieredStopAtLevel=1"}

    @staticmethod
    def unavailable() -> str | None:
        """Why no broker can be started here, or None."""
        if not shutil.which("java"):
            return "no java here: the broker-restart test starts a Kafka broker of its own (Java 17+)"
        if not (KAFKA_DIR / "cache" / "libs" / ".stamp").exists() and not shutil.which("mvn"):
            return "no Kafka jars in deploy/kafka/cache/libs and no mvn to fetch them (make kafka-up does)"
        return None

    def _run(self, script: str) -> float:
        started = time.monotonic()
        done = subprocess.run(["bash", str(KAFKA_DIR / script)], env=self.env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
        return time.monotonic() - started

    def start(self) -> float:
        return self._run("kafka-up.sh")

    def stop(self) -> float:
        """SIGTERM (then KILL after 20 s): the broker's controlled shutdown."""
        return self._run("kafka-down.sh")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One broker for the module (its starts dominate the time); each test leaves it running,
    with topics of its own prefix."""
    if not os.environ.get(KAFKA_ENV):  # the Kafka tests run when asked for (make test, with java and mvn)
        skip(f"{KAFKA_ENV} not set: the Kafka tests are off (this one starts a broker of its own)")
    reason = OwnBroker.unavailable()
    if reason:
        skip(reason)
    b = OwnBroker(tmp_path_factory.mktemp("broker"))
    b.started_in = b.start()
    yield b
    b.stop()


class Writer(threading.Thread):
    """Perceives events one by one until stopped; keeps what was acknowledged and what raised."""

    def __init__(self, brain: Brain):
        super().__init__(name="writer", daemon=True)
        self.brain = brain
        self.acknowledged: list[str] = []
        self.failed: dict[str, str] = {}
        self.spans: list[tuple[float, float]] = []  # (start, end) of each acknowledged call
        self.stop = threading.Event()
        # The test holds the writer between two appends (``go`` cleared; ``parked`` says it waits),
        # stops the broker, then lets it go: its next append starts while the broker is down.
        self.go, self.parked = threading.Event(), threading.Event()
        self.go.set()
        self.call_started: float | None = None  # when the latest append began

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            if not self.go.is_set():
                self.parked.set()
                self.go.wait()
                self.parked.clear()
            n += 1
            event_id = f"ev-{n}"
            started = self.call_started = time.monotonic()
            try:
                self.brain.perceive(tenant=f"t{n % 3}", agent=f"a{n % 8}", kind="observation", event_id=event_id,
                                    text=f"event {n}: the export job is still running")
            except Exception as exc:  # noqa: BLE001 - not acknowledged: the caller saw it fail
                self.failed[event_id] = f"{type(exc).__name__}: {exc}"
                continue
            self.acknowledged.append(event_id)
            self.spans.append((started, time.monotonic()))

    def wait_for(self, count: int, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.acknowledged) < count:
            assert self.is_alive(), "the writer thread died"
            assert time.monotonic() < deadline, f"only {len(self.acknowledged)} of {count} events acknowledged"
            time.sleep(0.02)


def in_topic(log, topic: str = "perceptions") -> Counter:
    """How often each record id is in ``topic`` (every partition, from offset 0)."""
    ids: Counter = Counter()
    for partition in log.partitions(topic):
        offset = 0
        while entries := log.read(topic, partition, offset, 5000):
            ids.update(registry.decode(e.value)[1]["envelope"]["record_id"] for e in entries)
            offset = entries[-1].offset + 1
    return ids


def test_a_broker_restart_mid_stream_loses_nothing_and_doubles_nothing(tmp_path, broker):
    prefix = f"hindbrain-restart.{uuid.uuid4().hex[:8]}."
    worker = None
    brain = Brain.open(tmp_path / "writer", kafka=broker.bootstrap, kafka_prefix=prefix, embedder="none",
                       worker_group=f"{prefix}writer-projector", clickhouse=f"chdb://{tmp_path / 'writer-views'}")
    writer = Writer(brain)
    try:
        worker = WorkerProcess("worker", tmp_path / "worker", bootstrap=broker.bootstrap, prefix=prefix,
                               group=f"{prefix}workers", views=tmp_path / "worker-views", batch_size=100)
        writer.start()
        writer.wait_for(BEFORE)
        wait_for(lambda: any(committed(brain.log, f"{prefix}workers", ["perceptions"]).values()), 90,
                 "the worker's first commit", workers=[worker])  # it runs: the restart is its fault to ride out
        writer.go.clear()  # hold the writer between two appends ...
        assert writer.parked.wait(60), "the writer did not stop between two appends"
        stopped_in = broker.stop()
        stopped_at, at_stop = time.monotonic(), len(writer.acknowledged)
        writer.go.set()  # ... and let it go: its next append meets the stopped broker (mid-stream, by construction)
        wait_for(lambda: (writer.call_started or 0) > stopped_at, 60, "an append begun while the broker is down",
                 workers=[worker])
        restarting_at = time.monotonic()
        restarted_in = broker.start()
        writer.wait_for(at_stop + AFTER)
        writer.stop.set()
        writer.join(timeout=60)
        assert not writer.is_alive()
        acknowledged = set(writer.acknowledged)
        assert any(stopped_at < start < restarting_at < end for start, end in writer.spans), \
            "no append begun while the broker was down was acknowledged once it was back"
        print(f"broker started in {broker.started_in:.1f}s, stopped in {stopped_in:.1f}s, restarted in "
              f"{restarted_in:.1f}s; {len(acknowledged)} events acknowledged, {len(writer.failed)} raised "
              f"({sorted(set(writer.failed.values()))[:2]})")

        ids = in_topic(brain.log)
        missing = acknowledged - set(ids)
        assert not missing, f"acknowledged and not in the topic: {sorted(missing)[:5]}"
        doubled = {i: n for i, n in ids.items() if n > 1}
        assert not doubled, f"written twice: {doubled}"

        events = brain.sql("SELECT event_id, count() AS n FROM events FINAL GROUP BY event_id")  # waits for projection
        assert {r["event_id"] for r in events} == set(ids) and all(r["n"] == 1 for r in events)
        wait_until_committed_to_end(brain.log, f"{prefix}workers", timeout_s=90, workers=[worker])
        assert worker.stop() == 0, worker.log_tail()  # it rode out the restart: no crash, a clean stop
        writer_digest = brain.warehouse.digest()
    finally:
        writer.stop.set()
        brain.close()
        if worker is not None:
            worker.ensure_dead()
    digest, _ = dump_views(tmp_path / "worker-views")  # chDB: one folder per process, the writer's is closed
    assert digest == writer_digest
    assert digest["events"][0] == len(ids)


def test_the_projector_waits_for_a_broker_that_is_away_between_its_batches(tmp_path, broker):
    """A projector with nothing to commit goes on fetching: with the broker stopped, its next
    fetch meets a node that is not there. It waits for the broker (and says so) instead of
    stopping, and projects what is appended once the broker is back. Arranged, not hoped for:
    the broker is started again only once the projector has waited for it at least once."""
    from hindbrain.streams.kafka_runner import KafkaProjector

    prefix = f"hindbrain-away.{uuid.uuid4().hex[:8]}."
    brain = Brain.open(tmp_path / "writer", kafka=broker.bootstrap, kafka_prefix=prefix, embedder="none",
                       worker_group=f"{prefix}projector", clickhouse=f"chdb://{tmp_path / 'views'}")
    try:
        projector = next(s for s in brain.services if isinstance(s, KafkaProjector))
        def perceive(first: int, count: int) -> None:
            brain.perceive_many([{"tenant": "t", "agent": "a", "kind": "observation", "event_id": f"ev-{n}",
                                  "text": f"event {n}: the export job is still running"}
                                 for n in range(first, first + count)])

        perceive(0, 20)
        assert brain.sql("SELECT count() AS n FROM events FINAL")[0]["n"] == 20  # flushed: nothing left to commit
        broker.stop()
        wait_for(lambda: projector.broker_waits > 0 or not projector.alive, 60, "the projector's fetch while away")
        assert projector.alive, f"the projector stopped while the broker was away: {projector.error!r}"
        broker.start()
        perceive(20, 20)
        rows = brain.sql("SELECT event_id, count() AS n FROM events FINAL GROUP BY event_id")
        assert projector.alive and {r["event_id"] for r in rows} == {f"ev-{n}" for n in range(40)}
        assert all(r["n"] == 1 for r in rows)
    finally:
        brain.close()
