"""Conflicting beliefs settle in an A/B window: a planted better arm wins, the loser stays
(down-weighted, never deleted), recall briefs each task its arm, and a settled conflict is
not reopened. An arm's evidence counts reporters: one agent of a fleet, in any spelling, never settles a
window; a tenant whose fleet is that one agent settles on its outcomes."""

import random
import re

import pytest
from hindsight_helpers import DAY_US, hindsight_at, tasks

from hindbrain.jobs.ab import WindowRule
from hindbrain.schemas.records import now_us

RULE = WindowRule(min_per_arm=40)


def hindsight(b):
    return hindsight_at(b, now_us(), RULE)


def beliefs(b):
    return {r["belief_id"]: r for r in b.sql("SELECT * FROM beliefs FINAL")}


def open_window(b):
    """A conflict's window: (window id, incumbent A, challenger B)."""
    b.perceive_many(tasks("ack", 40, 36, "fault", ["acknowledge the problem", "give the fix"], "angry", seed=1)
                    + tasks("esc", 40, 35, "fault", ["escalate to tier 2"], "angry", seed=2))
    report = hindsight(b)
    [opened] = [d for d in report.decisions if d["kind"] == "ab_window_opened"]
    return opened["subject_ids"]


def briefed_arm(b, task, a, c):
    """A live task's recall: (recall id, the arm it was briefed, the belief it was given)."""
    pack = b.recall(tenant="acme", task=task, query="an angry customer reports a fault", scene="fault")
    [given] = [i for i in pack.briefing if i.id in (a, c)]
    return pack.recall_id, given.why["ab_window"]["arm"], given.id


@pytest.mark.parametrize("agents", [("agent-0", "agent-1"), ("bot-1",)], ids=["two agents", "one agent, the fleet"])
def test_a_conflict_opens_a_window_and_the_planted_better_arm_wins(lexical_brain, agents):
    b = lexical_brain
    window, a, c = open_window(b)
    assert {beliefs(b)[a]["status"], beliefs(b)[c]["status"]} == {"reviewing"}
    texts = {a: beliefs(b)[a]["text"], c: beliefs(b)[c]["text"]}
    assert "acknowledge the problem" in texts[a]  # A, the incumbent, is the more confident (36/40)

    rng, briefed = random.Random(5), {"A": set(), "B": set()}
    for n in range(200):  # the challenger truly works better: 80 % against 50 %; honest agents report (a tenant
        # of one agent counts its outcomes whole: ``windows.fleet_of``)
        task = f"live-{n}"
        recall_id, arm, given = briefed_arm(b, task, a, c)
        briefed[arm].add(given)
        success = rng.random() < (0.8 if arm == "B" else 0.5)
        b.outcome(tenant="acme", agent=agents[n % len(agents)], task=task, recall_id=recall_id, success=success)
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


def test_one_agent_in_any_spelling_does_not_settle_a_window(lexical_brain):
    """robust35's attack: 120 tasks of one agent, failure reported on every A task and success on every B one.
    On the base it settled "B wins (enough outcomes): A 0/66, B 54/54", the incumbent inactive at half its
    confidence. Now one reporter (its look-alike spellings folded into one) counts nothing: the window stays open,
    and at ``max_days`` ends as a tie whose record says whose outcomes were not counted."""
    b = lexical_brain
    window, a, c = open_window(b)
    # a fleet: another agent of the tenant (its beliefs are at stake; a tenant of one agent counts it whole)
    b.perceive(tenant="acme", agent="helper-2", kind="observation", text="the status page shows all green")
    before = beliefs(b)
    spellings = ("mallory", "MALLORY", "Mallory")
    for n in range(120):
        task = f"forged-{n}"
        recall_id, arm, _ = briefed_arm(b, task, a, c)
        b.outcome(tenant="acme", agent=spellings[n % 3], task=task, recall_id=recall_id, success=arm == "B")

    assert not [d for d in hindsight(b).decisions if d["kind"].startswith("ab_window")]  # open: nothing counted
    assert {beliefs(b)[a]["status"], beliefs(b)[c]["status"]} == {"reviewing"}

    report = hindsight_at(b, now_us() + 15 * DAY_US, RULE)  # past max_days (14)
    [settled] = [d for d in report.decisions if d["kind"] == "ab_window_settled"]
    assert settled["subject_ids"][0] == window
    assert settled["reason"].startswith("no winner (14 days passed): A 0/0, B 0/0")
    assert "arm A:" in settled["reason"] and "arm B:" in settled["reason"]
    assert re.search(r"arm B: the \d+ outcomes of MALLORY/Mallory/mallory, its only reporter, not counted",
                     settled["reason"]), settled["reason"]
    after = beliefs(b)  # a tie: neither is the loser (inactive at half its confidence); 15 days aged both alike
    assert after[a]["status"] == after[c]["status"]
    ratio = (after[a]["confidence"] / after[c]["confidence"]) / (before[a]["confidence"] / before[c]["confidence"])
    assert abs(ratio - 1) < 1e-3
