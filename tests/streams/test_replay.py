"""Audit replay: every view rebuilt from the log alone equals the live view, dead letters included."""

from __future__ import annotations

import json

import pytest

from hindbrain import Brain
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import Message
from hindbrain.streams.replay import replay
from hindbrain.streams.sqlite_log import ALL_TOPICS

GARBAGE = b"\xc3\x01 truncated single-object header"


def belief_decision() -> dict:
    return {
        "envelope": envelope("decision", "acme", producer="job/induce@1"), "decision_id": "dc_belief",
        "kind": "belief_induced", "subject_ids": ["bl_1"], "evidence_ids": [], "inputs_json": "{}",
        "reason": "similar anomalies", "decided_by": {"job": "induce", "version": "1", "parameters_json": "{}"},
        "payload_json": json.dumps({"belief_id": "bl_1", "text": "IAM changes need admin", "confidence": 0.7,
                                    "support": 2}),
    }


def mixed_workload(brain: Brain) -> None:
    first = dict(tenant="acme", agent="a1", kind="anomaly", text="clicked submit, nothing happened",
                 system="IAM", scope={"env": "prod"}, event_id="ev_caller_1")
    e1 = brain.perceive(**first)
    assert brain.perceive(**first) == e1 == "ev_caller_1"
    e2 = brain.perceive(tenant="acme", kind="message", session="s-1", speaker="user", text="权限不足，提交失败")
    fr = brain.learn(tenant="acme", condition="submit does nothing in IAM", action="use the admin account",
                     reason="permission operations need admin", event_ids=[e1, e2], scope={"env": "prod"})
    pack = brain.recall(tenant="acme", agent="a1", query="IAM submit nothing happened", scope={"env": "prod"})
    assert fr in [i.id for i in pack.items]
    brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[fr], success=True, steps=3)
    brain.outcome(tenant="acme", applied=[e2], success=False)
    brain.runner.submit([("decision", belief_decision())])
    brain.log.append([Message("perceptions", None, GARBAGE)])
    wrong = registry.encode("outcome", {"envelope": envelope("outcome", "acme"), "recall_id": None, "applied": [],
                                        "success": True, "steps": None, "notes": None})
    brain.log.append([Message("recalls", "acme/", wrong)])
    brain.perceive(tenant="other", text="after the corrupt records")
    brain.recall(tenant="acme", query="权限", layers=["episodic"])


@pytest.mark.parametrize("workers", [0, 2], ids=["in-process", "2-workers"])
def test_replay_rebuilds_every_view_exactly(tmp_path, workers):
    with Brain.open(tmp_path) as brain:
        mixed_workload(brain)
        brain.runner.catch_up()
        live = brain.warehouse.digest()
        assert all(n > 0 for n, _ in live.values()), live
        assert live["events"][0] == 3
        assert live["dead_letters"][0] == 2

        fresh = Warehouse(brain.warehouse.url, database="replayed")
        try:
            report = replay(brain.log, fresh, chunk=4, workers=workers)  # small chunks: many tasks
            assert report.workers == workers  # the parallel path really ran
            assert report.records == brain.log.end_offset(ALL_TOPICS, 0)
            assert report.dead_letters == 2
            for name, value in live.items():
                assert report.digest[name] == value, name
            assert fresh.digest() == live
            assert fresh.query("SELECT stage FROM dead_letters FINAL ORDER BY source_offset") == [
                ("decode",), ("validate",)
            ]
        finally:
            fresh.close()
