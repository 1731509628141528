"""``Brain.open(kafka=..., clickhouse="chdb:///...")``: the SDK over a real broker, single node.

The Brain appends to Kafka, projects in its own process (chDB), reads its own writes in
recall at once and in ``sql``/``explain`` after its projector committed, and sees records
appended by *other* writers through its index tail.
"""

from __future__ import annotations

import time

from hindbrain import Brain
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import Message
from hindbrain.streams.topics import key_of


def test_the_sdk_works_over_kafka(tmp_path, kafka):
    with Brain.open(tmp_path, kafka=kafka.bootstrap, kafka_prefix=kafka.prefix,
                    worker_group=f"{kafka.prefix}projector") as brain:
        ev = brain.perceive(tenant="acme", agent="a1", kind="anomaly", text="submit does nothing", system="IAM")
        fr = brain.learn(tenant="acme", agent="a1", condition="IAM submit does nothing",
                         action="switch to the admin account", event_ids=[ev])
        pack = brain.recall(tenant="acme", query="IAM submit", layers=["experience"])
        assert [i.id for i in pack.items] == [fr]  # read-your-writes in recall, no projection needed
        brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[fr], success=True)

        counters = brain.sql("SELECT applied, success FROM feedback WHERE item_id = {id:String}", {"id": fr})
        assert counters == [{"applied": 1, "success": 1}]
        chain = brain.explain(fr)
        # (the learner's decisions on the unit interleave as they arrive: tests/streams/test_learner_over_kafka.py)
        assert [s["record_type"] for s in chain if s["record_type"] != "decision"] == [
            "perception", "cognition", "recall", "injection", "outcome"]
        assert chain[0]["record"]["envelope"]["record_id"] == ev
        assert brain.stats()["views"]["events"] == 1

        # Another agent's process appends straight to the log: the index tail picks it up.
        other = kafka.log()
        try:
            record = {"envelope": envelope("perception", "acme", agent="a2"), "kind": "message",
                      "text": "quarterly settlement needs the finance approval", "system": None, "identity": None,
                      "action": None, "expected": None, "actual": None, "entities": [], "scope": {},
                      "signal": None, "success": None, "polarity": None, "session": None, "speaker": None,
                      "emotion": None}
            other.append([Message("perceptions", key_of(record), registry.encode("perception", record))])
        finally:
            other.close()
        deadline = time.monotonic() + 10
        while not brain.recall(tenant="acme", query="quarterly settlement", layers=["episodic"]).items:
            assert time.monotonic() < deadline, "a record appended by another writer never became recallable"
            time.sleep(0.05)


def test_reopening_rebuilds_the_index_from_the_views_and_the_tail(tmp_path, kafka):
    settings = dict(kafka=kafka.bootstrap, kafka_prefix=kafka.prefix, worker_group=f"{kafka.prefix}projector")
    with Brain.open(tmp_path, **settings) as brain:
        ids = brain.perceive_many([{"tenant": "acme", "text": f"disaster recovery drill {n}"} for n in range(20)])
        brain.sql("SELECT 1")  # wait for the projection
    with Brain.open(tmp_path, **settings) as brain:
        found = {i.id for i in brain.recall(tenant="acme", query="disaster recovery drill", k=50,
                                              budget_tokens=5000).items}
        assert found == set(ids)
