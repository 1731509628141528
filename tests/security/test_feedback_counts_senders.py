"""Round thirty-three (docs/security.md, "A recall's outcome is its agent's"): negative feedback on a task that
applied a unit is its sender's word — nothing proves a person said it — so it counts senders
(``lifecycle.sender_of``) as perceived failures do: one sender may put the unit in review, not end it. On the base one
user's three complaints, sent by one agent, made an operator's rule invalid for every agent of the tenant."""

from __future__ import annotations

from hindbrain import Brain
from hindbrain.learning.lifecycle import HOLD_BELOW

RULE = dict(condition="a customer asks how long a refund takes", action="promise the refund within 5 days")
ASK = "a customer asks how long a refund takes"


def state(b: Brain, fid: str) -> dict:
    [row] = b.sql("SELECT status, contradictions, confidence FROM unit_states FINAL WHERE fragment_id = {f:String}",
                  {"f": fid})
    return row


def delivered(b: Brain, rule: str, agent: str, task: str) -> None:
    """A genuine delivery of ``rule`` to ``agent`` in ``task`` that went well (the recall injected it)."""
    pack = b.recall(tenant="shop", agent=agent, task=task, query=ASK)
    assert rule in [i.id for i in pack.items]
    b.outcome(tenant="shop", agent=agent, task=task, recall_id=pack.recall_id, applied=[rule], success=True)


def complaint(b: Brain, agent: str, task: str) -> None:
    b.perceive(tenant="shop", agent=agent, task=task, kind="feedback", signal="explicit", speaker="mallory",
               polarity=-1.0, text="that refund promise was wrong")


def test_one_senders_negative_feedback_puts_a_rule_in_review_and_two_senders_end_it(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        rule = b.learn(tenant="shop", seed=True, **RULE)
        for n in range(3):
            delivered(b, rule, "bot-1", f"t{n}")
        for n in range(3):  # one user, through one agent, complains about each task afterwards
            complaint(b, "bot-1", f"t{n}")
        row = state(b, rule)
        # the base: {'status': 'invalid', 'contradictions': 3, …}, never injected again for any agent
        assert (row["status"], row["contradictions"]) == ("reviewing", 3) and row["confidence"] >= HOLD_BELOW
        [reason] = [r["reason"] for r in b.sql("SELECT reason FROM decisions WHERE has(subject_ids, {f:String}) "
                                               "ORDER BY ts DESC LIMIT 1", {"f": rule})]
        assert "sent by 'bot-1' alone" in reason
        delivered(b, rule, "bot-2", "t-2a")  # a second sender's user complains as well: two senders end it
        for n in range(3):
            complaint(b, ("bot-1", "bot-2")[n % 2], "t-2a" if n % 2 else f"t{n}")
        assert state(b, rule)["status"] == "invalid"
