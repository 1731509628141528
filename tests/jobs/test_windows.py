"""Conflicting beliefs settle in an A/B window: a planted better arm wins, the loser stays
(down-weighted, never deleted), recall briefs each task its arm, and a settled conflict is
not reopened."""

import random

from hindsight_helpers import hindsight_at, tasks

from hindbrain.jobs.ab import WindowRule
from hindbrain.schemas.records import now_us

RULE = WindowRule(min_per_arm=40)


def hindsight(b):
    return hindsight_at(b, now_us(), RULE)


def beliefs(b):
    return {r["belief_id"]: r for r in b.sql("SELECT * FROM beliefs FINAL")}


def test_a_conflict_opens_a_window_and_the_planted_better_arm_wins(lexical_brain):
    b = lexical_brain
    b.perceive_many(tasks("ack", 40, 36, "fault", ["acknowledge the problem", "give the fix"], "angry", seed=1)
                    + tasks("esc", 40, 35, "fault", ["escalate to tier 2"], "angry", seed=2))
    report = hindsight(b)
    [opened] = [d for d in report.decisions if d["kind"] == "ab_window_opened"]
    window, a, c = opened["subject_ids"]
    assert {beliefs(b)[a]["status"], beliefs(b)[c]["status"]} == {"reviewing"}
    texts = {a: beliefs(b)[a]["text"], c: beliefs(b)[c]["text"]}
    assert "acknowledge the problem" in texts[a]  # A, the incumbent, is the more confident (36/40)

    rng, briefed = random.Random(5), {"A": set(), "B": set()}
    for n in range(200):  # the challenger truly works better: 80 % against 50 %
        task = f"live-{n}"
        pack = b.recall(tenant="acme", task=task, query="an angry customer reports a fault", scene="fault")
        [given] = [i for i in pack.briefing if i.id in (a, c)]
        arm = given.why["ab_window"]["arm"]
        briefed[arm].add(given.id)
        success = rng.random() < (0.8 if arm == "B" else 0.5)
        b.outcome(tenant="acme", task=task, recall_id=pack.recall_id, success=success)
    assert briefed == {"A": {a}, "B": {c}}  # each arm always gets its own belief
    arms = b.sql("SELECT arms FROM injections WHERE has(item_ids, {a:String}) OR has(item_ids, {c:String})",
                 {"a": a, "c": c})
    assert all(set(r["arms"]) - {""} <= {"A", "B"} and set(r["arms"]) & {"A", "B"} for r in arms)

    report = hindsight(b)
    [settled] = [d for d in report.decisions if d["kind"] == "ab_window_settled"]
    assert "B wins" in settled["reason"] and settled["subject_ids"][0] == window
    after = beliefs(b)
    assert after[c]["status"] == "active"
    assert after[a]["status"] == "inactive" and after[a]["confidence"] < after[c]["confidence"]  # kept, down-weighted
    pack = b.recall(tenant="acme", task="later", query="an angry customer reports a fault", scene="fault")
    assert [i.id for i in pack.briefing if i.id in (a, c)] == [c]
    kinds = [e["record"]["kind"] for e in b.explain(window) if e["record_type"] == "decision"]
    assert kinds == ["ab_window_opened", "ab_window_settled"]

    again = hindsight(b)  # settled: not reopened without new evidence beyond the margin
    assert not [d for d in again.decisions if d["kind"].startswith("ab_window")]
