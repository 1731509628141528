"""A crash loses nothing: reopening a brain projects what the views missed, exactly once."""

from __future__ import annotations

from hindbrain import Brain
from hindbrain.streams.runner import CONSUMER
from hindbrain.streams.sqlite_log import ALL_TOPICS


def workload(brain: Brain) -> dict:
    e1 = brain.perceive(tenant="acme", kind="anomaly", text="clicked submit, nothing happened", system="IAM")
    e2 = brain.perceive(tenant="acme", kind="observation", text="the account lacks the admin role")
    fr = brain.learn(tenant="acme", condition="submit does nothing in IAM", action="switch to the admin account",
                     event_ids=[e1, e2])
    pack = brain.recall(tenant="acme", query="IAM submit does nothing")
    assert fr in [i.id for i in pack.items]
    brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[fr], success=True)
    return {"events": [e1, e2], "fragment": fr, "recall": pack.recall_id}


def crash(brain: Brain) -> None:
    """Release the brain's files the way a dying process would: no flush, no Brain.close."""
    brain.warehouse.close()
    brain.log.close()


def counts(brain: Brain) -> dict[str, int]:
    return {name: n for name, (n, _) in brain.warehouse.digest().items()}


def test_records_appended_but_never_projected_are_projected_on_reopen(tmp_path):
    brain = Brain.open(tmp_path)
    ids = workload(brain)
    log_length = brain.log.end_offset(ALL_TOPICS, 0)
    # 2 perceptions, cognition, its gate decision, recall, injection, outcome, the unit's verification
    assert brain.runner.pending == log_length == 8
    crash(brain)

    with Brain.open(tmp_path) as brain:
        assert brain.log.committed(CONSUMER, ALL_TOPICS, 0) == brain.log.end_offset(ALL_TOPICS, 0) == log_length
        n = counts(brain)
        assert (n["events"], n["fragments"], n["recalls"], n["outcomes"], n["dead_letters"]) == (2, 1, 1, 1, 0)
        assert sorted(r[0] for r in brain.warehouse.query("SELECT event_id FROM events")) == sorted(ids["events"])
        assert brain.sql("SELECT recalled, injected, applied, success, failure FROM feedback "
                         "WHERE item_id = {i:String}", {"i": ids["fragment"]}) == [
            {"recalled": 1, "injected": 1, "applied": 1, "success": 1, "failure": 0}
        ]
        assert ids["fragment"] in [i.id for i in brain.recall(tenant="acme", query="IAM submit").items]


def test_rows_inserted_but_not_committed_are_not_counted_twice(tmp_path):
    brain = Brain.open(tmp_path)
    workload(brain)
    brain.runner.flush()
    digest = brain.warehouse.digest()
    # The crash came after the inserts returned but before the offset was committed.
    brain.log.commit(CONSUMER, ALL_TOPICS, 0, 0)
    crash(brain)

    with Brain.open(tmp_path) as brain:
        assert brain.warehouse.digest() == digest
        assert brain.log.committed(CONSUMER, ALL_TOPICS, 0) == brain.log.end_offset(ALL_TOPICS, 0)
