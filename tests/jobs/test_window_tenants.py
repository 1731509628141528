"""An A/B window reads its own tenant's outcomes only (round thirty-two). ``jobs.ARM_REPORTS_SQL`` took each
recall's last outcome from every tenant's outcomes: another tenant that sends an outcome naming this tenant's
recall id (a recall id leaked in a log or a shared trace) replaced the honest one and decided the window."""

import random

from hindsight_helpers import hindsight_at
from test_windows import RULE, beliefs, briefed_arm, open_window

from hindbrain.schemas.records import now_us


def test_another_tenant_s_outcomes_naming_this_tenant_s_recalls_do_not_decide_its_window(lexical_brain):
    b = lexical_brain
    window, a, c = open_window(b)
    rng, live = random.Random(5), []
    for n in range(200):  # as the planted-better-arm test: B works better (80 % against 50 %), one honest agent
        task = f"live-{n}"
        recall_id, arm, _ = briefed_arm(b, task, a, c)
        b.outcome(tenant="acme", agent="bot-1", task=task, recall_id=recall_id, success=rng.random() < (
            0.8 if arm == "B" else 0.5))
        live.append((recall_id, arm))
    for n, (recall_id, arm) in enumerate(live):  # later, from another tenant: A always works, B never does
        b.outcome(tenant="evil", agent="bot-1", task=f"forged-{n}", recall_id=recall_id, success=arm == "A")

    report = hindsight_at(b, now_us(), RULE)
    [settled] = [d for d in report.decisions if d["kind"] == "ab_window_settled"]
    assert settled["subject_ids"][0] == window
    assert "B wins" in settled["reason"], settled["reason"]
    assert beliefs(b)[c]["status"] == "active" and beliefs(b)[a]["status"] == "inactive"
