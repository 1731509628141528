"""Episodic → semantic: a recurring anomaly becomes a summary belief briefed in its system."""

from datetime import UTC, datetime


def test_a_recurring_anomaly_is_summarised_and_briefed_where_it_happens(lexical_brain):
    b = lexical_brain
    events = []
    for n in range(4):
        events.append({"tenant": "acme", "task": f"iam-{n}", "kind": "anomaly", "system": "IAM",
                       "action": "submit change", "actual": "no response", "text": "clicked submit, nothing"})
    events += [{"tenant": "acme", "task": f"iam-ok-{n}", "kind": "observation", "system": "IAM",
                "text": "changed a role"} for n in range(2)]
    events += [{"tenant": "acme", "task": f"bill-{n}", "kind": "anomaly", "system": "Billing",
                "action": "export", "actual": "timeout", "text": "export timed out"} for n in range(2)]
    b.perceive_many(events)
    report = b.hindsight()
    summaries = [d for d in report.decisions if d["decided_by"]["job"] == "hindsight.summaries"]
    assert len(summaries) == 1  # Billing's two tasks are below the three a summary needs
    today = datetime.now(UTC).date().isoformat()
    [belief] = b.sql("SELECT * FROM beliefs FINAL WHERE inducer LIKE 'hindsight.summaries%'")
    assert belief["text"] == f"in IAM, ‘submit change’ gave ‘no response’ in 4 of 6 tasks (4 times, {today})"
    assert belief["status"] == "active" and belief["scope"] == {"scene": "IAM"} and belief["support"] == 4
    pack = b.recall(tenant="acme", query="change a user's role", scene="IAM")
    assert belief["belief_id"] in [i.id for i in pack.briefing]
    assert belief["belief_id"] not in [i.id for i in b.recall(tenant="acme", query="x", scene="Billing").briefing]
