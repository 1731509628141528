"""Belief induction on small hand-made data with known answers: a planted cluster becomes a
belief, a worse action sequence stays inactive, noisy labels induce nothing, and a rerun
with nothing new records nothing new."""

import json

import pytest
from hindsight_helpers import DAY_US, tasks

from hindbrain.brain import tenant_batches
from hindbrain.jobs.confidence import ACTIVATION, age_decay, belief_confidence, wilson_lower
from hindbrain.jobs.induction import task_rows
from hindbrain.jobs.trigger import TriggerPolicy, due


@pytest.fixture
def planted(lexical_brain):
    b = lexical_brain
    b.perceive_many(tasks("ack", 40, 36, "fault", ["acknowledge the problem", "give the fix"], "angry", seed=1)
                    + tasks("fix", 40, 10, "fault", ["give the fix"], "angry", seed=2)
                    + tasks("inv", 40, 34, "billing question", ["look up the invoice"], seed=3)
                    + tasks("cpn", 30, 28, "refund", ["offer a coupon"], "disappointed", signal="self", seed=4))
    return b


def beliefs(b):
    return {r["text"]: r for r in b.sql("SELECT * FROM beliefs FINAL")}


def test_a_planted_cluster_becomes_an_active_belief_with_its_evidence(planted):
    report = planted.hindsight()
    found = beliefs(planted)
    text = ("if emotion in [angry] and scene = fault then first ‘acknowledge the problem’, then ‘give the fix’ "
            "(36 of 40 such tasks succeeded)")
    assert text in found, list(found)
    belief = found[text]
    assert belief["status"] == "active" and belief["confidence"] == pytest.approx(wilson_lower(36, 40), abs=1e-3)
    assert belief["confidence"] >= ACTIVATION and belief["scope"] == {"scene": "fault"}
    assert belief["support"] == 40 * 4 and len(belief["event_ids"]) == 160  # message, 2 actions, outcome per task
    assert belief["inducer"].startswith("hindsight.induction@1")
    [decision] = [d for d in report.decisions
                  if d["kind"] == "belief_induced" and belief["belief_id"] in d["subject_ids"]]
    payload = json.loads(decision["payload_json"])
    assert len(payload["key_event_ids"]) == 3 and payload["k"] >= 2 and "36/40" in decision["reason"]
    pack = planted.recall(tenant="acme", query="the customer is angry about a fault", scene="fault")
    assert belief["belief_id"] in [i.id for i in pack.briefing]


def test_the_worse_sequence_is_inactive_and_noisy_labels_induce_nothing(planted):
    planted.hindsight()
    found = beliefs(planted)
    worse_text = "if emotion in [angry] and scene = fault then ‘give the fix’"
    [worse] = [r for t, r in found.items() if t.startswith(worse_text)]
    assert worse["status"] == "inactive" and worse["confidence"] < ACTIVATION  # 10 of 40
    assert [t for t in found if "scene = ‘billing question’ then ‘look up the invoice’" in t]
    assert not [t for t in found if "coupon" in t]  # "disappointed" came from self-evaluated labels only


def test_a_rerun_with_nothing_new_records_no_new_belief(planted):
    first = planted.hindsight()
    again = planted.hindsight()
    assert [d["kind"] for d in again.decisions] == ["hindsight_run"]
    assert len([d for d in first.decisions if d["kind"] == "belief_induced"]) >= 3


def test_confidence_is_bounded_penalises_small_samples_and_decays_with_age():
    assert 0 <= wilson_lower(0, 5) < wilson_lower(5, 10) < wilson_lower(10, 10) < wilson_lower(100, 100) <= 1
    assert wilson_lower(10, 10) < 0.8 < wilson_lower(100, 100)  # the same 100 % rate, less sure on 10 tasks
    assert wilson_lower(0, 0) == 0.0
    now = 100 * DAY_US
    assert age_decay(now, now) == 1.0 and age_decay(now - 10 * DAY_US, now) == pytest.approx(0.94 ** 10)
    assert belief_confidence(100, 100, now - 30 * DAY_US, now) < ACTIVATION < belief_confidence(100, 100, now, now)


def test_the_trigger_policy():
    now, policy = 10 * DAY_US, TriggerPolicy()
    assert due(501, now - DAY_US, now, policy)[0]
    assert not due(500, now - DAY_US, now, policy)[0]
    assert due(3, now - 4 * DAY_US, now, policy) == (True, "4.0 days since the last run > 3.0")
    assert due(7, None, now, policy) == (True, "never ran before")
    run, why = due(20, now - DAY_US, now, TriggerPolicy(min_new_events=10))
    assert run and why == "20 new events > 10"


def test_explicit_feedback_is_the_outcome_when_no_success_is_given(lexical_brain):
    """design.md §issue-17: tickets whose satisfaction came only as the user's explicit feedback (polarity)
    still teach a belief; self-evaluated feedback does not count."""
    b = lexical_brain
    events = []
    for name, n, good, signal in (("fb", 40, 36, "explicit"), ("self", 40, 36, "self")):
        for event in tasks(name, n, good, "fault", ["acknowledge the problem", "give the fix"], "angry", seed=5):
            if event["kind"] == "outcome":  # no success field: the user's word instead
                polarity = 1.0 if event["success"] else -1.0
                event = {**{k: v for k, v in event.items() if k != "success"}, "kind": "feedback",
                         "text": "thanks" if polarity > 0 else "still broken", "polarity": polarity,
                         "signal": signal, "speaker": "user"}
            events.append({**event, "tenant": name})
    for batch in tenant_batches(events):  # a batch is one tenant's
        b.perceive_many(batch)
    b.hindsight()
    found = {r["tenant"]: r for r in b.sql("SELECT * FROM beliefs FINAL WHERE text LIKE 'if emotion in [angry]%'")}
    assert found["fb"]["status"] == "active" and "(36 of 40 such tasks succeeded)" in found["fb"]["text"]
    assert "self" not in found or found["self"]["status"] != "active"


def test_a_tasks_actions_in_one_instant_keep_the_logs_order(lexical_brain):
    """Times the caller gave (or a batch stamped within one microsecond) tie: the task's sequence
    is the log's order, never the order the views' parts happened to merge in (it failed 1 run in 6
    under load once a batch was stamped in C)."""
    from datetime import UTC, datetime

    b = lexical_brain
    instant = datetime(2026, 5, 1, 12, tzinfo=UTC)
    events = [{**e, "tenant": "acme", "ts": instant}
              for e in tasks("same", 30, 27, "fault", ["acknowledge the problem", "give the fix"], seed=3)]
    for start in range(0, len(events), 7):  # several parts in the views, as many batches make
        b.perceive_many(events[start:start + 7])
    b.runner.flush()
    rows = task_rows(b.warehouse)
    assert len(rows) == 30
    assert {tuple(a) for a in rows.actions} == {("acknowledge the problem", "give the fix")}


def test_the_clock_never_stamps_two_records_alike():
    from hindbrain.schemas.records import now_us

    stamps = [now_us() for _ in range(20_000)]  # far faster than a microsecond a call
    assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))
