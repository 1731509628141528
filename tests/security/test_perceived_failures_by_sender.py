"""Round thirty-three (docs/learning.md, "Perceived failures count senders"): what the learner reads from perceived
events — change detection (an option that failed where it used to work, another worked instead) and a routine (an
option that worked for two agents) — counts senders (``lifecycle.sender_of``), not the agent names in the bodies.
One sender may doubt a unit alone (in review at once), never end it: on the base three of one agent's forged task
trajectories made a verified rule invalid for every agent of the tenant, and one API key bound to no agent, naming
a1 and a2, taught a routine the whole fleet was given as "worked for independent agents"."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
from http_helpers import call, serving  # noqa: E402

from hindbrain import Brain  # noqa: E402
from hindbrain.learning.lifecycle import HOLD_BELOW  # noqa: E402

RULE = dict(condition="submit change in IAM gives no response", action="switch to the admin account")
ASK = "submit change in IAM gives no response"


def state(b: Brain, fid: str) -> dict:
    [row] = b.sql("SELECT status, contradictions, confidence FROM unit_states FINAL WHERE fragment_id = {f:String}",
                  {"f": fid})
    return row


def delivered(b: Brain) -> str:
    """An operator's rule, verified by one genuine delivery (a recall that injected it, then a success): a unit
    that worked before is what change detection may contradict."""
    rule = b.learn(tenant="acme", seed=True, **RULE)
    pack = b.recall(tenant="acme", agent="bot-2", query=ASK)
    assert rule in [i.id for i in pack.items]
    b.outcome(tenant="acme", agent="bot-2", task="real", recall_id=pack.recall_id, applied=[rule], success=True)
    assert state(b, rule)["status"] == "verified"
    return rule


def changed(n: int, **agent) -> list[dict]:
    """A task whose trajectory says the world changed: the rule's option failed, another one then worked."""
    task = {"tenant": "acme", "task": f"t{n}", "system": "IAM", **agent}
    return [{**task, "kind": "anomaly", "action": "switch to the admin account", "text": "still nothing happened",
             "expected": "success message", "actual": "no response"},
            {**task, "kind": "action", "action": "ask the IAM team to approve", "text": "the IAM team approved it",
             "success": True}]


def test_one_agents_perceived_trajectories_put_a_rule_in_review_at_most(lexical_brain):
    b = lexical_brain
    rule = delivered(b)
    for n in range(4):
        for event in changed(n, agent="mallory"):
            b.perceive(**event)
    row = state(b, rule)
    # the base: {'status': 'invalid', 'contradictions': 3, 'confidence': 0.18…}, never injected again
    assert (row["status"], row["contradictions"]) == ("reviewing", 4) and row["confidence"] >= HOLD_BELOW
    [reason] = [r["reason"] for r in b.sql("SELECT reason FROM decisions WHERE has(subject_ids, {f:String}) "
                                           "ORDER BY ts DESC LIMIT 1", {"f": rule})]
    assert "sent by 'mallory' alone" in reason


def test_three_agents_perceived_trajectories_still_end_it(lexical_brain):
    """The honest fleet: the world changed for three agents (passes on the base too)."""
    b = lexical_brain
    rule = delivered(b)
    for n, agent in enumerate(("a1", "a2", "a3")):
        for event in changed(n, agent=agent):
            b.perceive(**event)
    assert state(b, rule)["status"] == "invalid"


def _perceived(base: str, key: str, events: list[dict]) -> None:
    events = [{k: v for k, v in e.items() if k != "tenant"} for e in events]
    status, body, _ = call(base, "POST", "/v1/perceive/batch", {"events": events}, key)
    assert status == 200, body


def test_one_unbound_key_naming_three_agents_is_one_sender_of_a_change(tmp_path):
    with serving(tmp_path / "served") as (base, b, keys):
        rule = delivered(b)
        key = keys.create("acme", "integration", "agent")  # bound to no agent: it may name any
        _perceived(base, key, [e for n, a in enumerate(("m1", "m2", "m3")) for e in changed(n, agent=a)])
        b.runner.flush()
        row = state(b, rule)  # the base: invalid
        assert (row["status"], row["contradictions"]) == ("reviewing", 3)
        for n, agent in enumerate(("a1", "a2")):  # two agents' own bound keys: the world did change
            _perceived(base, keys.create("acme", agent, "agent", agent=agent), changed(10 + n))
        b.runner.flush()
        assert state(b, rule)["status"] == "invalid"


def worked(n: int, **agent) -> dict:
    return {"task": f"r{n}", "kind": "action", "system": "Billing", "action": "export the invoice",
            "identity": "finance account", "text": "the invoice was exported", "success": True, **agent}


def _routines(b: Brain) -> list[str]:
    return [r["action"] for r in b.sql("SELECT action FROM fragments WHERE source = 'lived' "
                                       "AND condition LIKE '%invoice%'")]


def test_one_unbound_key_naming_two_agents_teaches_no_routine(tmp_path):
    with serving(tmp_path / "served") as (base, b, keys):
        key = keys.create("acme", "integration", "agent")
        _perceived(base, key, [worked(n, agent=("a1", "a2")[n % 2]) for n in range(4)])
        b.runner.flush()
        assert _routines(b) == []  # the base: a routine "worked for" a1 and a2, shared with the fleet at once
        _perceived(base, keys.create("acme", "a3", "agent", agent="a3"), [worked(9)])  # a second sender
        b.runner.flush()
        assert _routines(b) == ["use the finance account"]
