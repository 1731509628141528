"""Near-duplicate rules merge into a meta-rule with the originals as its evidence."""

from hindbrain.jobs.consolidation import groups
from hindbrain.jobs.units import UnitRow


def rule(fid, condition, action, tenant="acme", layer="experience", status="candidate", successes=0):
    return UnitRow(tenant, fid, condition, action, "lived", layer, None, {}, 0, status, 0.6, successes)


def test_groups_are_near_duplicates_of_one_tenant_and_layer_only():
    rules = [rule("a", "the IAM submit button does nothing for a normal account", "switch to the admin account"),
             rule("b", "IAM submit button does nothing for a normal account", "switch to the admin account now"),
             rule("c", "the billing export times out", "run it on the reporting replica"),
             rule("d", "the IAM submit button does nothing for a normal account", "switch to the admin account",
                  tenant="other"),
             rule("e", "the IAM submit button does nothing for a normal account", "switch to the admin account",
                  layer="knowledge"),
             rule("f", "IAM submit button does nothing for the normal account", "switch to admin account",
                  status="invalid")]
    assert [[r.fragment_id for r in g] for g in groups(rules)] == [["a", "b"]]


def test_rules_of_different_scopes_never_merge():
    """The same fix learned in prod and in test is a rule of each: the meta-rule keeps one scope, and the other
    environment lost its rule (design.md §issue-29)."""
    prod, test, test2 = (rule(f, "rebuild the index in Search fails", "page size 500") for f in "abc")
    test, test2 = (UnitRow(**{**vars(r), "scope": {"env": "test"}}) for r in (test, test2))
    test2 = UnitRow(**{**vars(test2), "action": "use page size 500"})
    assert [[r.fragment_id for r in g] for g in groups([prod, test, test2])] == [["b", "c"]]


def test_the_best_proven_rule_speaks_for_the_merged_group(lexical_brain):
    b = lexical_brain
    a = b.learn(tenant="acme", condition="the IAM submit button does nothing for a normal account",
                action="switch to the admin account")
    c = b.learn(tenant="acme", condition="IAM submit button does nothing for a normal account",
                action="switch to the admin account and submit once", reason="permission changes need admin")
    b.outcome(tenant="acme", task="t1", applied=[c], success=True)
    report = b.hindsight()
    [merged] = [d for d in report.decisions if d["kind"] == "units_merged"]
    meta = merged["subject_ids"][0]
    states = {r["fragment_id"]: r for r in b.sql("SELECT fragment_id, status, decision_kind FROM unit_states FINAL")}
    assert states[meta]["status"] == "candidate"  # the meta-rule passed the gate
    assert states[a]["status"] == states[c]["status"] == "absorbed"  # kept, as its evidence
    [row] = b.sql("SELECT action, event_ids FROM fragments FINAL WHERE fragment_id = {f:String}", {"f": meta})
    assert row["action"] == "switch to the admin account and submit once" and set(row["event_ids"]) == {a, c}
    pack = b.recall(tenant="acme", query="IAM submit button does nothing")
    assert [i.id for i in pack.items if i.kind == "fragment"] == [meta]
    # its reason is the representative's own, not how it was merged (that is part of its evidence)
    assert "BECAUSE permission changes need admin" in pack.render() and "merged from" not in pack.render()
    [row] = b.sql("SELECT reason, evidence FROM fragments FINAL WHERE fragment_id = {f:String}", {"f": meta})
    assert row["reason"] == "permission changes need admin" and row["evidence"].startswith("merged from 2 ")
    assert not [d for d in b.hindsight().decisions if d["kind"] == "units_merged"]  # nothing left to merge


def test_a_belief_held_by_many_outcomes_becomes_a_rule_once(lexical_brain):
    from hindsight_helpers import tasks

    b = lexical_brain
    b.perceive_many(tasks("ack", 100, 99, "fault", ["acknowledge the problem", "give the fix"], "angry", seed=1))
    report = b.hindsight()
    [rule] = report.proposals
    assert rule["condition"] == "working on fault and the user feels angry"
    assert rule["action"] == "first acknowledge the problem, then give the fix"
    assert len(rule["event_ids"]) == 3 and rule["reason"].startswith("a belief held by outcomes: if emotion in [angry]")
    [state] = b.sql("SELECT status FROM unit_states FINAL WHERE fragment_id = {f:String}", {"f": rule["fragment_id"]})
    assert state["status"] == "candidate"  # through the learner's gate, like any proposal
    assert b.hindsight().proposals == []


def test_private_rules_merge_only_within_their_agent_and_the_meta_rule_stays_private(lexical_brain):
    """Fleet memory: consolidation never carries a private rule past the bar of shared memory."""
    from dataclasses import replace

    a1 = replace(rule("a", "the IAM submit button does nothing for a normal account", "switch to the admin account"),
                 agent="a1")
    a1b = replace(rule("b", "IAM submit button does nothing for a normal account", "switch to the admin account now"),
                  agent="a1")
    a2 = replace(rule("c", "IAM submit button does nothing for the normal account", "switch to the admin account"),
                 agent="a2")
    assert [[r.fragment_id for r in g] for g in groups([a1, a1b, a2])] == [["a", "b"]]
    b = lexical_brain
    x = b.learn(tenant="acme", agent="a1", condition="the IAM submit button does nothing for a normal account",
                action="switch to the admin account")
    y = b.learn(tenant="acme", agent="a1", condition="IAM submit button does nothing for a normal account",
                action="switch to the admin account and submit once")
    [merged] = [d for d in b.hindsight().decisions if d["kind"] == "units_merged"]
    meta = merged["subject_ids"][0]
    assert set(merged["subject_ids"][1:]) == {x, y}
    [row] = b.sql("SELECT agent FROM fragments FINAL WHERE fragment_id = {f:String}", {"f": meta})
    assert row["agent"] == "a1"
    assert meta not in [i.id for i in b.recall(tenant="acme", agent="a2", query="IAM submit button does nothing")]
    assert meta in [i.id for i in b.recall(tenant="acme", agent="a1", query="IAM submit button does nothing")]
