"""An A/B window counts a recall's first outcome, as the learner credits it (round thirty-three).
``jobs.ARM_REPORTS_SQL`` took each recall's *last* outcome: any sender of the tenant that saw the fleet's recall ids
(in a log, a trace, a shared prompt) could report on them after the honest agents and replace every honest report
with its own, which the learner refused ("answered already") but the window counted."""

import random

from hindsight_helpers import hindsight_at
from test_windows import RULE, beliefs, briefed_arm, open_window

from hindbrain.schemas.records import now_us


def test_a_later_outcome_naming_another_agent_s_recall_does_not_replace_the_first(lexical_brain):
    b = lexical_brain
    window, a, c = open_window(b)
    rng, live = random.Random(5), []
    for n in range(200):  # B works better (80 % against 50 %), two honest agents
        task, agent = f"live-{n}", ("bot-1", "bot-2")[n % 2]
        recall_id, arm, _ = briefed_arm(b, task, a, c)
        b.outcome(tenant="acme", agent=agent, task=task, recall_id=recall_id, success=rng.random() < (
            0.8 if arm == "B" else 0.5))
        live.append((recall_id, arm))
    for n, (recall_id, arm) in enumerate(live):  # later, one agent of the tenant: A always works, B never does
        b.outcome(tenant="acme", agent="mallory", task=f"forged-{n}", recall_id=recall_id, success=arm == "A")

    report = hindsight_at(b, now_us(), RULE)
    # the base: nothing settled (each arm held mallory's reports alone, "not counted"), the window stayed open
    [settled] = [d for d in report.decisions if d["kind"] == "ab_window_settled"]
    assert settled["subject_ids"][0] == window
    assert "B wins" in settled["reason"], settled["reason"]
    assert beliefs(b)[c]["status"] == "active" and beliefs(b)[a]["status"] == "inactive"
