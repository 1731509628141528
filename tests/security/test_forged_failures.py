"""Forged failures do not end a unit (docs/security.md, round thirty-two). A failure an outcome reports without a
recall that injected the unit is evidence: it lowers confidence and may put the unit in review, where the next
genuine delivery decides; it never makes it invalid, which is for good (never injected, so nothing restores it).
On the base three outcomes of one agent naming no recall ended an operator's seed rule for the whole fleet."""

from __future__ import annotations

from hindbrain import Brain

FRAUD = dict(condition="a refund is asked for an order over 500 dollars", action="run the fraud check before refunding")
ASK = "a customer asks a refund for an order over 500 dollars"
IAM = {"system": "IAM", "identity": "normal account", "expected": "success message", "actual": "no response"}


def state(b: Brain, fid: str) -> dict:
    [row] = b.sql("SELECT status, failures, contradictions FROM unit_states FINAL WHERE fragment_id = {f:String}",
                  {"f": fid})
    return row


def given(b: Brain, fid: str, agent: str = "bot-2", query: str = ASK) -> str | None:
    """The recall id of ``agent``'s recall if it injected ``fid``, else None."""
    pack = b.recall(tenant="acme", agent=agent, query=query)
    return pack.recall_id if fid in [i.id for i in pack.items] else None


def test_failures_naming_no_recall_put_a_seed_rule_in_review_at_most(lexical_brain):
    b = lexical_brain
    seed = b.learn(tenant="acme", seed=True, **FRAUD)
    for n in range(5):
        b.outcome(tenant="acme", agent="mallory", task=f"t{n}", applied=[seed], success=False)
    assert state(b, seed) == {"status": "reviewing", "failures": 5, "contradictions": 0}
    recall_id = given(b, seed)  # still given to the fleet; a genuine delivery verifies it again
    assert recall_id is not None
    b.outcome(tenant="acme", agent="bot-2", task="real", recall_id=recall_id, applied=[seed], success=True)
    assert state(b, seed)["status"] == "verified"


def test_failures_of_recalls_that_injected_the_rule_still_end_it(lexical_brain):
    b = lexical_brain
    seed = b.learn(tenant="acme", seed=True, **FRAUD)
    for n in range(3):
        b.outcome(tenant="acme", agent="bot-2", task=f"t{n}", recall_id=given(b, seed), applied=[seed], success=False)
    assert state(b, seed)["status"] == "invalid"
    assert given(b, seed) is None


def test_a_recovery_naming_no_recall_puts_the_rule_in_review_at_most(lexical_brain):
    """The other falsification an outcome reports: its action failed and another option then worked in the same
    task (a contradiction, design.md §issue-17), here with no recall behind the outcome."""
    b = lexical_brain
    rule = b.learn(tenant="acme", condition="submit change in IAM as the normal account gives no response",
                   action="switch to the admin account", seed=True, confidence=0.9)
    for n in range(3):
        b.perceive(tenant="acme", agent="mallory", task=f"t{n}", kind="anomaly", text="still nothing happened",
                   **{**IAM, "action": "switch to the admin account"})
        b.perceive(tenant="acme", agent="mallory", task=f"t{n}", kind="action", text="the IAM team approved it",
                   system="IAM", identity="normal account", action="ask the IAM team to approve", success=True)
        b.outcome(tenant="acme", agent="mallory", task=f"t{n}", applied=[rule], success=True)
    assert state(b, rule) == {"status": "reviewing", "failures": 0, "contradictions": 3}


def test_feedback_on_a_task_whose_outcome_names_no_recall_moves_no_unit(lexical_brain):
    """"That was wrong" after an outcome claiming the rule was applied: the claim proves no delivery, so the
    feedback is no contradiction of the rule (it still counts for the feedback's own topic)."""
    b = lexical_brain
    seed = b.learn(tenant="acme", seed=True, **FRAUD)
    for n in range(3):
        b.outcome(tenant="acme", agent="mallory", task=f"t{n}", applied=[seed], success=False)
        b.perceive(tenant="acme", agent="mallory", task=f"t{n}", kind="feedback", polarity=-1.0, text="that was wrong")
    assert state(b, seed) == {"status": "reviewing", "failures": 3, "contradictions": 0}
    recall_id = given(b, seed)  # a delivered rule: the feedback on its task is a contradiction, as before
    b.outcome(tenant="acme", agent="bot-2", task="real", recall_id=recall_id, applied=[seed], success=True)
    b.perceive(tenant="acme", agent="bot-2", task="real", kind="feedback", polarity=-1.0, text="that was wrong")
    assert state(b, seed)["contradictions"] == 1
