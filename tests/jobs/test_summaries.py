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


def _every_cased_letter() -> list[str]:
    """Every letter of Unicode with another case (ß, ς, ſ, µ, ǰ …): an agent may be named in any script."""
    return [chr(c) for c in range(0x41, 0x30000)
            if chr(c).isalpha() and len({chr(c), chr(c).lower(), chr(c).upper(), chr(c).casefold()}) > 1]


def test_the_summaries_count_senders_as_fleet_verification_does(lexical_brain):
    """``RELAY_SQL`` (the senders a summary counts) and ``among_agents`` (fleet verification) agree on which two
    spellings are one agent, for every cased letter (round thirty: ``lowerUTF8`` left ``straße`` and ``STRASSE``
    two senders to the summaries and one agent to fleet verification)."""
    from hindbrain.jobs.summaries import RELAY_SQL
    from hindbrain.learning.lifecycle import among_agents

    names = [f"bot-{ch}" for ch in _every_cased_letter()]
    pairs = [(n, other) for n in names for other in sorted({n.upper(), n.lower(), n.casefold()} - {n})]
    same = RELAY_SQL.replace("agent", "a") + " = " + RELAY_SQL.replace("agent", "b")
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    [(got,)] = lexical_brain.warehouse.query(f"SELECT arrayMap((a, b) -> {same}, {{a:Array(String)}}, "
                                             "{b:Array(String)})", {"a": firsts, "b": seconds})
    disagree = [pair for pair, one in zip(pairs, got, strict=True) if bool(one) != among_agents(pair[0], [pair[1]])]
    assert len(pairs) > 2000 and disagree == []


def test_a_belief_that_names_no_reporter_is_held_by_who_sent_it():
    """Events with neither a user nor an agent, in a tenant where one agent is named elsewhere: the hindsight run
    crashed here (an IndexError on the empty reporters); who sent them now decides, as for users' reports."""
    from hindbrain.jobs.summaries import corroborated_scope

    held = ("reported by no named user or agent all sent by the tenant's own integration (no agent), alone of the "
            "tenant's 2 senders: held until another agent reports it")
    assert corroborated_scope({"scene": "fault"}, [], 1, [""], 2) == ({"scene": "fault"}, "inactive", held)
    assert corroborated_scope({}, [], 1, ["", "bot-2"], 2)[1] == "active"  # sent by two senders
    assert corroborated_scope({}, [], 0, [""], 1)[1] == "active"  # a tenant that names no one: as before
