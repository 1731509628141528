"""Forged outcomes do not promote (docs/security.md and docs/learning.md, round twenty-five): the learner credits
an outcome to a unit only if the recall it names injected that unit, one outcome per recall; an outcome naming no
recall, or one this tenant never made, is evidence that never promotes past verified. Each refusal is a decision
on the log, and a learner folded from the log refuses the same outcomes."""

from __future__ import annotations

import json
import pickle

from hindbrain import Brain
from hindbrain.learning.learner import Learner
from hindbrain.learning.learner_state import TenantState
from hindbrain.learning.lifecycle import RULE_VERSION
from hindbrain.learning.runtime import SNAPSHOT_VERSION, decoded_entries

EXPORT = dict(condition="the report export hangs", action="restart the export worker")
VAULT = dict(condition="the vault token expired", action="renew the lease")


def state(b: Brain, fid: str) -> dict:
    [row] = b.sql("SELECT * FROM unit_states FINAL WHERE fragment_id = {f:String}", {"f": fid})
    return row


def refusals(b: Brain, fid: str) -> list[dict]:
    """The unit's attributions that refused an outcome's credit: (why, the outcome) each."""
    rows = b.sql("SELECT payload_json, evidence_ids, reason FROM decisions FINAL WHERE kind = 'unit_attributed' "
                 "AND has(subject_ids, {f:String}) ORDER BY _offset", {"f": fid})
    return [{"refused": json.loads(r["payload_json"]).get("refused"), "outcome": r["evidence_ids"][0],
             "reason": r["reason"]} for r in rows if "refused" in json.loads(r["payload_json"])]


def injecting(b: Brain, fid: str, tenant: str = "acme", **query) -> str:
    """The id of a recall that injected ``fid``."""
    pack = b.recall(tenant=tenant, **query)
    assert fid in [i.id for i in pack.items]
    return pack.recall_id


def test_five_forged_successes_for_a_unit_no_recall_injected_do_not_make_it_stable(lexical_brain):
    """The round-twenty-four attack: successes naming a unit the agent was never given. Naming a real recall that
    injected something else credits nothing; naming no recall, or a made-up one, verifies it at most."""
    b = lexical_brain
    target = b.learn(tenant="acme", agent="a1", **EXPORT)  # a1's lesson: private until verified
    decoy = b.learn(tenant="acme", **VAULT)
    for n in range(5):  # each a fresh recall, which injected the decoy and not the target
        pack = b.recall(tenant="acme", query="vault token expired", task=f"v{n}", k=1)
        assert [i.id for i in pack.items] == [decoy]
        oc = b.outcome(tenant="acme", recall_id=pack.recall_id, task=f"v{n}", applied=[target], success=True)
        assert refusals(b, target)[-1]["refused"] == "not_injected" and refusals(b, target)[-1]["outcome"] == oc
    assert state(b, target)["status"] == "candidate" and state(b, target)["successes"] == 0
    for n in range(5):  # no recall id, then recall ids nobody made
        b.outcome(tenant="acme", agent=f"mallory{n}", task=f"x{n}", applied=[target], success=True,
                  **({"recall_id": f"rc_forged{n}"} if n % 2 else {}))
    assert state(b, target)["status"] == "verified" and state(b, target)["successes"] == 5  # evidence, never stable
    unit = b.learning.learner.unit("acme", target)
    assert unit.agents == ("a1",) and not unit.shared  # no reporter stands behind it; a1's own memory still
    assert not b.sql("SELECT * FROM decisions WHERE kind IN ('unit_stable', 'unit_skill') AND "
                     "has(subject_ids, {f:String})", {"f": target})
    # genuine deliveries count: the recall injects it, its outcome says it helped; two make it stable, the claims
    # before them none of the two
    for status in ("verified", "stable"):
        b.outcome(tenant="acme", agent="a1", recall_id=injecting(b, target, agent="a1", query="report export hangs"),
                  applied=[target], success=True)
        assert state(b, target)["status"] == status and b.learning.learner.unit("acme", target).shared
        if status == "verified":  # another agent sees it marked with its deliveries, the claims not among them
            [seen] = [i for i in b.recall(tenant="acme", agent="a2", query="report export hangs") if i.id == target]
            provenance = seen.why["provenance"]
            assert (provenance["learned_by"], provenance["verified"]) == ("a1", 1)
    assert b.learning.learner.unit("acme", target).unproven == 5


def test_a_second_outcome_of_a_recall_is_kept_on_the_log_and_credits_nothing(lexical_brain):
    b = lexical_brain
    fid = b.learn(tenant="acme", **EXPORT)
    recall_id = injecting(b, fid, query="report export hangs", task="t1")
    first = b.outcome(tenant="acme", recall_id=recall_id, task="t1", applied=[fid], success=True)
    again = [b.outcome(tenant="acme", recall_id=recall_id, task="t1", applied=[fid], success=ok)
             for ok in (True, True, False)]
    unit = state(b, fid)
    assert unit["status"] == "verified" and (unit["successes"], unit["failures"]) == (1, 0)
    assert [(r["refused"], r["outcome"]) for r in refusals(b, fid)] == [("answered", oc) for oc in again]
    assert first in refusals(b, fid)[0]["reason"]  # it names the outcome that got the credit
    kept = b.sql("SELECT count() AS n FROM outcomes WHERE tenant = 'acme'")[0]["n"]
    assert kept == 4  # never dropped


def test_a_recall_id_of_another_tenant_credits_nothing_there_and_spends_nothing_here(lexical_brain):
    b = lexical_brain
    ours = b.learn(tenant="acme", **EXPORT)
    theirs = b.learn(tenant="globex", **EXPORT)
    recall_id = injecting(b, theirs, tenant="globex", query="report export hangs")
    for n in range(3):  # acme's caller names globex's recall, which injected the same lesson there
        b.outcome(tenant="acme", recall_id=recall_id, task=f"t{n}", applied=[ours, theirs], success=True)
    assert state(b, ours)["status"] == "verified" and state(b, ours)["successes"] == 1  # unknown here; then spent
    assert [r["refused"] for r in refusals(b, ours)] == ["answered", "answered"]
    assert state(b, theirs)["successes"] == 0  # acme's outcomes never reach globex's unit
    b.outcome(tenant="globex", recall_id=recall_id, applied=[theirs], success=True)
    assert state(b, theirs)["status"] == "verified" and not refusals(b, theirs)  # globex's recall is its own


def test_a_snapshot_written_before_the_injections_were_kept_still_loads(tmp_path, monkeypatch):
    """A snapshot whose tenants lack ``injected`` and ``answered`` (round twenty-four's) is loaded, not folded
    again, and the learner goes on: a recall after it is credited once."""
    with Brain.open(tmp_path, embedder="none") as b:
        fid = b.learn(tenant="acme", **EXPORT)
    snapshot = tmp_path / "cache" / "learner.snapshot"
    state_ = pickle.loads(snapshot.read_bytes())
    for t in state_["tenants"].values():
        del t.injected, t.answered  # as the older code pickled it
    assert (state_["version"], state_["rules"]) == (SNAPSHOT_VERSION, RULE_VERSION)
    snapshot.write_bytes(pickle.dumps(state_))
    folded = []
    process = Learner.process
    monkeypatch.setattr(Learner, "process", lambda self, batch, restoring=False: (
        folded.append(len(batch)) if restoring else None, process(self, batch, restoring))[1])
    with Brain.open(tmp_path, embedder="none") as b:
        assert not folded  # the snapshot was used
        t = b.learning.learner.tenants["acme"]
        assert (len(t.injected), len(t.answered)) == (0, 0)
        recall_id = injecting(b, fid, query="report export hangs")
        for _ in range(2):
            b.outcome(tenant="acme", recall_id=recall_id, applied=[fid], success=True)
        assert b.learning.learner.unit("acme", fid).successes == 1


def test_a_learner_folded_from_the_log_refuses_what_the_running_one_refused(tmp_path):
    """The recalls' injections and the outcomes that spent them are rebuilt by folding the log: a brain reopened
    without its snapshot holds the same maps and refuses a recall answered before the restart."""
    with Brain.open(tmp_path, embedder="none") as b:
        fid = b.learn(tenant="acme", **EXPORT)
        other = b.learn(tenant="acme", **VAULT)
        recall_id = injecting(b, fid, query="report export hangs", k=1)
        b.outcome(tenant="acme", recall_id=recall_id, applied=[fid, other], success=True)  # other: not injected
        b.outcome(tenant="acme", recall_id=recall_id, applied=[fid], success=True)
        running = b.learning.learner.tenants["acme"]
        folded, offset = Learner(), 0
        while entries := b.log.read_all(offset, 5_000):
            folded.process(decoded_entries(entries), restoring=True)
            offset = entries[-1].offset + 1
        assert folded.tenants["acme"].injected == running.injected and len(running.injected) == 1
        assert folded.tenants["acme"].answered == running.answered and len(running.answered) == 1
        assert folded.tenants["acme"].units == running.units
    (tmp_path / "cache" / "learner.snapshot").unlink()
    with Brain.open(tmp_path, embedder="none") as b:
        b.outcome(tenant="acme", recall_id=recall_id, applied=[fid], success=True)
        assert b.learning.learner.unit("acme", fid).successes == 1
        assert b.learning.learner.unit("acme", other).successes == 0
        assert [r["refused"] for r in refusals(b, fid)] == ["answered", "answered"]
        assert [r["refused"] for r in refusals(b, other)] == ["not_injected"]


def test_an_old_tenant_state_unpickles_with_empty_maps():
    """``TenantState.__setstate__`` itself: the missing fields get their defaults, the others are kept."""
    t = TenantState()
    t.recall_domain["rc_1"] = "IAM"
    del t.injected, t.answered
    loaded = pickle.loads(pickle.dumps(t))
    assert loaded.recall_domain == {"rc_1": "IAM"} and loaded.injected == {} and loaded.answered == {}
    assert type(loaded.injected).__name__ == "Recent"


def utility_of(b: Brain, fid: str, **query) -> float:
    [item] = [i for i in b.recall(tenant="acme", k=5, **query).items if i.id == fid]
    return item.why["utility"]["score"]


def test_claims_naming_no_injecting_recall_do_not_move_a_unit_s_rank(tmp_path):
    """Utility (a factor of 0.5-1.5 on every recall's score) counts what an injection proved: five claims with no
    recall id, another recall's id or one recall's repeats left the unit at the neutral 0.5 — before, the reported
    successes alone lifted it for everyone (6/7), and claimed failures would sink a rival the same way."""
    b = Brain.open(tmp_path / "b", embedder="none")
    target = b.learn(tenant="acme", agent="a1", **EXPORT)
    decoy = b.learn(tenant="acme", **VAULT)
    pack = b.recall(tenant="acme", query="vault token expired", task="v", k=1)
    assert [i.id for i in pack.items] == [decoy]
    for n in range(5):
        b.outcome(tenant="acme", task=f"x{n}", applied=[target], success=True,
                  **({"recall_id": pack.recall_id} if n % 2 else {}))
    assert utility_of(b, target, query="report export hangs") == 0.5
    b.close()
    with Brain.open(tmp_path / "b", embedder="none") as reopened:  # the views give the same track as the fold
        assert utility_of(reopened, target, query="report export hangs") == 0.5
        real = injecting(reopened, target, query="report export hangs", task="e1")
        reopened.outcome(tenant="acme", recall_id=real, task="e1", applied=[target], success=True)
        assert utility_of(reopened, target, query="report export hangs") > 0.5  # a proven delivery counts
