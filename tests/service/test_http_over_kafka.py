"""``hindbrain serve`` on a brain whose log is a real Kafka broker (single node: chDB views,
this process projects and learns): the agent loop over HTTP learns as on the embedded log."""

from __future__ import annotations

import time

from http_helpers import call, serving

SITUATION = {"system": "IAM", "identity": "normal account", "action": "submit change",
             "expected": "success message", "actual": "no response"}


def test_the_agent_loop_over_http_on_kafka(tmp_path, kafka):
    settings = dict(kafka=kafka.bootstrap, kafka_prefix=kafka.prefix, worker_group=f"{kafka.prefix}projector")
    with serving(tmp_path, **settings) as (base, brain, keys):
        key = keys.create("acme", role="admin")  # the agent loop, then SQL
        for body in ({"task": "t1", "kind": "anomaly", "text": "clicked submit, nothing happened", **SITUATION},
                     {"task": "t1", "kind": "outcome", "text": "submit succeeded as admin", "system": "IAM",
                      "identity": "admin account", "action": "submit change", "success": True}):
            assert call(base, "POST", "/v1/perceive", body, key)[0] == 200
        deadline = time.monotonic() + 30  # the learner's lesson reaches recall through the topics
        query = {"task": "t2", "situation": SITUATION, "layers": ["experience"]}  # the lesson, not the events
        while not (pack := call(base, "POST", "/v1/recall", query, key)[1])["items"]:
            assert time.monotonic() < deadline, "the lesson never reached recall"
            time.sleep(0.2)
        fid = pack["items"][0]["id"]
        assert fid.startswith("fr_") and "admin account" in pack["prompt"]
        status, _, _ = call(base, "POST", "/v1/outcome", {"task": "t2", "recall_id": pack["recall_id"],
                                                          "applied": [fid], "success": True}, key)
        assert status == 200
        deadline = time.monotonic() + 30
        while not call(base, "POST", "/v1/sql", {"query": "SELECT 1 FROM unit_states FINAL WHERE fragment_id = "
                                                          f"'{fid}' AND status = 'verified'"}, key)[1]["rows"]:
            assert time.monotonic() < deadline, "the outcome never verified the lesson"
            time.sleep(0.2)
