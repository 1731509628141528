"""Parity and replay over a real Kafka broker.

* parity: the same scripted records (perceptions, a duplicate, a learn, a recall with its
  injection, outcomes, a belief decision, a garbage value) through the embedded log and
  runner, and through Kafka and the projecting consumer → identical view digests;
* replay: the views rebuilt from Kafka alone, by reading every partition from offset 0 and
  by a fresh consumer group, → identical digests again.
Digests cover record content, not log coordinates (offsets differ between the two logs).
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import Message
from hindbrain.streams.replay import replay
from hindbrain.streams.runner import EmbeddedRunner
from hindbrain.streams.sqlite_log import SqliteLog
from hindbrain.streams.topics import TOPIC_OF, TOPICS, key_of

KAFKA = os.environ.get("HINDBRAIN_TEST_KAFKA")
pytestmark = pytest.mark.skipif(
    not KAFKA, reason="HINDBRAIN_TEST_KAFKA not set: no Kafka broker (`make kafka-up` needs Java 17 + Maven)"
)
T0 = 1_767_225_600_000_000  # a fixed time: the two runs must write identical records


def _env(record_type, n, tenant="acme", agent="agent-1", causation=()):
    return envelope(record_type, tenant, agent=agent, task=f"t-{n}", record_id=f"{record_type[:2]}-{n}",
                    ts_us=T0 + n, causation_ids=causation)


def scripted_messages() -> list[Message]:
    records = []
    for n in range(40):
        tenant, agent = f"tenant-{n % 3}", f"agent-{n % 5}"
        records.append(("perception", {
            "envelope": _env("perception", n, tenant, agent), "kind": "anomaly" if n % 4 == 0 else "message",
            "text": f"event {n}: 提交后没有响应 submit does nothing", "system": "IAM", "identity": None,
            "action": None, "expected": None, "actual": None, "entities": ["IAM"], "scope": {"env": "prod"},
            "signal": None, "success": None, "polarity": None, "session": "s1", "speaker": "user", "emotion": None,
        }))
    records.append(records[3])  # at-least-once: the same record delivered twice
    records.append(("cognition", {
        "envelope": _env("cognition", 100), "fragment_id": "fr-1", "condition": "IAM submit does nothing",
        "action": "switch to the admin account", "reason": "permission operations need admin",
        "evidence": "it worked as admin", "scope": {"env": "prod"}, "source": "lived", "citation": None,
        "confidence": None, "seed": False, "event_ids": ["pe-0", "pe-4"], "entities": ["IAM"],
    }))
    records.append(("recall", {
        "envelope": _env("recall", 101), "recall_id": "rc-1", "query": "IAM submit", "situation": {},
        "trigger": "anomaly", "scope": {}, "budget_tokens": 200, "k": None, "layers": [], "score_names": [],
        "candidates": [{"item_id": i, "item_kind": "fragment", "score": 1.0, "why_json": None, "stage": None,
                        "reason": None, "scores": []}
                       for i in ("fr-1", "pe-0")],
    }))
    records.append(("injection", {
        "envelope": _env("injection", 102, causation=["rc-1"]), "recall_id": "rc-1", "budget_tokens": 200,
        "items": [{"item_id": "fr-1", "item_kind": "fragment", "rank": 0, "tokens": 12, "score": 1.0, "arm": None}],
    }))
    for n, ok in ((103, True), (104, False)):
        records.append(("outcome", {"envelope": _env("outcome", n, causation=["rc-1"]), "recall_id": "rc-1",
                                    "applied": ["fr-1"], "success": ok, "steps": 2, "notes": None}))
    records.append(("decision", {
        "envelope": _env("decision", 105), "decision_id": "dc-1", "kind": "belief_induced",
        "subject_ids": ["be-1"], "evidence_ids": ["pe-0"], "inputs_json": "{}", "reason": "cluster",
        "decided_by": {"job": "induce", "version": "1", "parameters_json": "{}"},
        "payload_json": json.dumps({"belief_id": "be-1", "text": "if IAM then admin", "confidence": 0.8,
                                    "support": 3}),
    }))
    messages = [Message(TOPIC_OF[rt], key_of(r), registry.encode(rt, r)) for rt, r in records]
    messages.insert(20, Message("perceptions", "tenant-0/agent-0", b"\x00 not an Avro record"))
    return messages


def wait_until_committed(log, group: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    for topic in TOPICS:
        for partition in log.partitions(topic.name):
            while log.committed(group, topic.name, partition) < log.end_offset(topic.name, partition):
                assert time.monotonic() < deadline, f"{group} did not reach the end of {topic.name}[{partition}]"
                time.sleep(0.05)


def project_with_group(kafka_log, warehouse, group: str) -> None:
    """Run an in-process projecting consumer of ``group`` until it committed everything."""
    from hindbrain.streams.kafka_runner import KafkaProjector

    warehouse.migrate()
    projector = KafkaProjector(kafka_log, warehouse, group=group)
    projector.start()
    try:
        # dead_letters is checked last: by then the projector has appended the dead letter of
        # the garbage record, and waiting covers projecting it as well
        wait_until_committed(kafka_log, group)
    finally:
        projector.stop()


def test_embedded_and_kafka_make_identical_views_and_kafka_replays_them(tmp_path):
    from hindbrain.streams.kafka_log import KafkaLog

    messages = scripted_messages()
    url = f"chdb://{tmp_path / 'views'}"
    embedded_log = SqliteLog(tmp_path / "log.sqlite")
    opened: list[Warehouse] = []  # closed at the end: chDB serves one folder per process, a later test opens its own

    def warehouse(database: str) -> Warehouse:
        opened.append(Warehouse(url, database=database))
        return opened[-1]

    embedded = warehouse("embedded")
    embedded.migrate()
    embedded_log.append(messages)
    EmbeddedRunner(embedded_log, embedded).catch_up()
    expected = embedded.digest()
    assert expected["events"][0] == 40 and expected["dead_letters"][0] == 1 and expected["beliefs"][0] == 1

    prefix = f"parity-{uuid.uuid4().hex[:8]}."
    kafka_log = KafkaLog(KAFKA, prefix=prefix)
    try:
        kafka_log.append(messages)
        over_kafka = warehouse("kafka")
        project_with_group(kafka_log, over_kafka, f"{prefix}projector")
        assert over_kafka.digest() == expected

        replayed = replay(kafka_log, warehouse("kafka_replayed"))
        assert replayed.digest == expected
        assert replayed.records == sum(kafka_log.end_offset(t.name, p) for t in TOPICS
                                       for p in kafka_log.partitions(t.name))
        # per-partition chunks in two worker processes, each with its own connection: the same views
        in_workers = replay(kafka_log, warehouse("kafka_replayed_in_workers"), chunk=3, workers=2)
        assert in_workers.workers == 2 and in_workers.digest == expected and in_workers.records == replayed.records

        fresh = warehouse("kafka_fresh_group")
        project_with_group(kafka_log, fresh, f"{prefix}fresh")
        assert fresh.digest() == expected
    finally:
        kafka_log.close()
        embedded_log.close()
        for each in opened:
            each.close()
