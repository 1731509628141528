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


def test_the_summaries_count_senders_with_fleet_verification_s_fold(lexical_brain):
    """One fold (round thirty-two): the summaries read raw agent names and fold them as fleet verification does
    (``lifecycle.senders``). The SQL fold they used (``caseFoldUTF8``, round thirty) is ICU's, of a newer
    Unicode than Python's: it folds U+A7CB to ``ɤ``, which ``str.casefold`` leaves, so ``bot-\ua7cb`` and
    ``bot-ɤ`` were one sender to a summary and two agents to fleet verification. The edge refuses such names (not
    printable in Python's Unicode); a producer on the broker writes the log directly, as these records do."""
    from hindbrain.brain import _perception, perceived
    from hindbrain.learning.lifecycle import among_agents

    b = lexical_brain
    records = []
    for n, agent in enumerate(["bot-\ua7cb", "bot-ɤ", "bot-\ua7cb"]):
        record = _perception(perceived({"tenant": "acme", "agent": "bot-1", "task": f"iam-{n}", "kind": "anomaly",
                                        "system": "IAM", "action": "submit change", "actual": "no response"}))
        records.append(("perception", {**record, "envelope": {**record["envelope"], "agent": agent}}))
    b.runner.submit(records)
    b.perceive(tenant="acme", agent="helper-2", task="other", kind="observation", text="all green")
    assert not among_agents("bot-\ua7cb", ["bot-ɤ"])  # two agents to fleet verification
    b.hindsight()
    [belief] = b.sql("SELECT * FROM beliefs FINAL WHERE inducer LIKE 'hindsight.summaries%'")
    assert belief["status"] == "active", belief["text"]  # two senders: not held as one agent's word


def test_a_belief_that_names_no_reporter_is_held_by_who_sent_it():
    """Events with neither a user nor an agent, in a tenant where one agent is named elsewhere: the hindsight run
    crashed here (an IndexError on the empty reporters); who sent them now decides, as for users' reports."""
    from hindbrain.jobs.summaries import corroborated_scope

    held = ("reported by no named user or agent all sent by the tenant's own integration (no agent), alone of the "
            "tenant's 2 senders: held until another agent reports it")
    assert corroborated_scope({"scene": "fault"}, [], 1, [""], 2) == ({"scene": "fault"}, "inactive", held)
    assert corroborated_scope({}, [], 1, ["", "bot-2"], 2)[1] == "active"  # sent by two senders
    assert corroborated_scope({}, [], 0, [""], 1)[1] == "active"  # a tenant that names no one: as before
