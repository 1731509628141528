"""The ladder above a stable experience: skill, a proposed trait, and the human approval
that moves it to the identity layer (design.md §seed-000-exp-9, design.md §seed-004-2)."""

import pytest

from hindbrain import Brain
from hindbrain.schemas.api import InvalidInput

DOMAINS = ("iam", "billing", "deploy")


def climb(b, fid, successes=6, positive=2, domains=DOMAINS):
    """Apply the unit successfully in ``successes`` tasks, cycling the task domains; the
    first ``positive`` tasks also get positive feedback."""
    for n in range(successes):
        task = f"t{n}"
        pack = b.recall(tenant="acme", task=task, query="review the change", scope={"scene": domains[n % len(domains)]})
        b.outcome(tenant="acme", recall_id=pack.recall_id, task=task, applied=[fid], success=True)
        if n < positive:
            b.perceive(tenant="acme", task=task, kind="feedback", text="exactly right", polarity=1.0, signal="explicit")


def rung(b, fid):
    [row] = b.sql("SELECT rung FROM unit_states FINAL WHERE fragment_id = {f:String}", {"f": fid})
    return row["rung"]


def a_unit(b):
    return b.learn(tenant="acme", condition="a change request touches production",
                   action="ask for a second reviewer before merging", reason="two eyes catch what one misses",
                   evidence="reviewed changes failed less")


def test_repeated_success_with_positive_feedback_makes_a_skill_then_transfer_proposes_a_trait(lexical_brain):
    b = lexical_brain
    fid = a_unit(b)
    climb(b, fid, successes=5)
    assert rung(b, fid) == "skill"
    assert b.pending_traits("acme") == []
    climb(b, fid, successes=1, positive=0, domains=("deploy",))  # a sixth success; three domains seen
    assert rung(b, fid) == "trait_proposed"
    [pending] = b.pending_traits("acme")
    assert pending["fragment_id"] == fid and pending["domains"] == sorted(DOMAINS)
    assert "second reviewer" in pending["text"]


def test_no_skill_without_converging_feedback(lexical_brain):
    b = lexical_brain
    fid = a_unit(b)
    climb(b, fid, successes=8, positive=1)
    assert rung(b, fid) == "experience"


def test_an_approved_trait_joins_the_identity_layer_and_stays_there_after_reopening(tmp_path):
    with Brain.open(tmp_path, embedder="none") as b:
        fid = a_unit(b)
        climb(b, fid)
        assert fid not in [i.id for i in b.recall(tenant="acme", query="second reviewer", layers=["identity"]).items]
        approval = b.approve(tenant="acme", fragment_id=fid, approver="ops-lead", reason="we want this everywhere")
        assert rung(b, fid) == "trait"
        assert fid in [i.id for i in b.recall(tenant="acme", query="second reviewer", layers=["identity"]).items]
        [row] = b.sql("SELECT * FROM decisions FINAL WHERE decision_id = {d:String}", {"d": approval})
        assert row["kind"] == "trait_approved" and row["job"] == "sdk.approve"
        assert row["reason"] == "we want this everywhere" and "ops-lead" in row["inputs_json"]
        kinds = [e["record"].get("kind") for e in b.explain(fid)]
        assert kinds.index("unit_skill") < kinds.index("trait_proposed") < kinds.index("trait_approved")
        assert b.pending_traits("acme") == []
    with Brain.open(tmp_path, embedder="none") as b:  # the learner folds the human decision too
        assert b.learning.learner.unit("acme", fid).rung == "trait"
        assert fid in [i.id for i in b.recall(tenant="acme", query="second reviewer", layers=["identity"]).items]


def test_a_declined_trait_stays_a_skill_and_is_not_proposed_again(lexical_brain):
    b = lexical_brain
    fid = a_unit(b)
    climb(b, fid)
    b.approve(tenant="acme", fragment_id=fid, approver="ops-lead", accept=False)
    climb(b, fid, successes=3, positive=0)
    assert rung(b, fid) == "skill_declined" and b.pending_traits("acme") == []


def test_only_a_proposed_trait_can_be_approved(lexical_brain):
    b = lexical_brain
    fid = a_unit(b)
    with pytest.raises(InvalidInput, match="is not a proposed trait") as err:
        b.approve(tenant="acme", fragment_id=fid, approver="ops-lead")
    assert err.value.field == "fragment_id"
    with pytest.raises(InvalidInput, match="approver"):
        b.approve(tenant="acme", fragment_id=fid)


def test_the_cli_lists_pending_traits_and_approves_one(tmp_path, capsys):
    from hindbrain.cli import main

    home = tmp_path / "brain"
    with Brain.open(home, embedder="none") as b:
        fid = a_unit(b)
        climb(b, fid)
    assert main(["--home", str(home), "traits", "--tenant", "acme"]) == 0
    assert fid in capsys.readouterr().out
    assert main(["--home", str(home), "approve", fid, "--tenant", "acme", "--by", "ops-lead"]) == 0
    assert f"approved {fid}" in capsys.readouterr().out
    assert main(["--home", str(home), "approve", fid, "--tenant", "acme", "--by", "ops-lead"]) == 2
    assert "is not a proposed trait (its rung is 'trait')" in capsys.readouterr().err
    assert main(["--home", str(home), "traits", "--tenant", "acme"]) == 0
    assert "no trait waits" in capsys.readouterr().out
