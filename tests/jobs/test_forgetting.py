"""Forgetting as metabolism: decay by disuse at the speed of the volatility class (a red
line survives a year), invalidation by an environment change (never injected again), and a
conflict pending (both kept, recall keeps the one that ranks higher)."""

import pytest
from hindsight_helpers import DAY_US, hindsight_at

from hindbrain.jobs.forgetting import accessibility
from hindbrain.schemas.api import InvalidInput
from hindbrain.schemas.records import now_us


def decayed(report):
    return {d["subject_ids"][0]: d for d in report.decisions if d["kind"] == "unit_decayed"}


def test_a_red_line_rule_survives_a_year_of_disuse_and_an_ordinary_one_fades(lexical_brain):
    b = lexical_brain
    red = b.learn(tenant="acme", condition="a production database is restored from backup",
                  action="verify the checksum before switching traffic", scope={"volatility": "red_line"})
    plain = b.learn(tenant="acme", condition="the weekly report export is slow", action="run it on the replica")
    assert accessibility(365, "red_line") == 1.0 and accessibility(90, "medium") == pytest.approx(0.5)
    year = hindsight_at(b, now_us() + 365 * DAY_US)
    steps = decayed(year)
    assert red not in steps  # never fades by disuse
    assert steps[plain]["reason"].startswith("unused for 365 days (medium volatility")
    assert '"step": 3' in steps[plain]["payload_json"]  # below 0.1: ranked lower, kept
    assert b.sql("SELECT count() AS n FROM fragments FINAL")[0]["n"] == 2
    again = hindsight_at(b, now_us() + 366 * DAY_US)
    assert decayed(again) == {}  # a step is recorded once per idle period


def test_a_use_restarts_the_idle_clock(lexical_brain):
    import json

    b = lexical_brain
    fid = b.learn(tenant="acme", condition="the weekly report export is slow", action="run it on the replica")
    first = json.loads(decayed(hindsight_at(b, now_us() + 100 * DAY_US))[fid]["payload_json"])
    assert decayed(hindsight_at(b, now_us() + 100 * DAY_US)) == {}  # the same idle period: recorded once
    b.outcome(tenant="acme", task="t1", applied=[fid], success=True)
    second = json.loads(decayed(hindsight_at(b, now_us() + 100 * DAY_US))[fid]["payload_json"])
    assert second["idle_since_us"] > first["idle_since_us"]  # counted from the use, a new idle period


def test_an_invalidated_rule_is_never_injected_again(lexical_brain):
    b = lexical_brain
    fid = b.learn(tenant="acme", condition="exporting invoices from billing", action="use the v1 export endpoint")
    assert fid in [i.id for i in b.recall(tenant="acme", query="export invoices from billing").items]
    b.invalidate(tenant="acme", fragment_id=fid, reason="the v1 endpoint was removed", version="billing v2",
                 by="ops-lead")
    pack = b.recall(tenant="acme", query="export invoices from billing")
    assert fid not in [i.id for i in pack.items]
    assert any(c["id"] == fid and c["stage"] == "invalidation" for c in pack.cut)
    b.outcome(tenant="acme", task="t1", applied=[fid], success=True)  # a lucky success does not bring it back
    assert fid not in [i.id for i in b.recall(tenant="acme", query="export invoices from billing").items]
    [row] = b.sql("SELECT status, decision_kind FROM unit_states FINAL WHERE fragment_id = {f:String}", {"f": fid})
    assert row == {"status": "invalid", "decision_kind": "unit_invalidated"}
    with pytest.raises(InvalidInput, match="already invalid"):
        b.invalidate(tenant="acme", fragment_id=fid, reason="again")
    with pytest.raises(InvalidInput, match="reason"):
        b.invalidate(tenant="acme", fragment_id=fid, reason=" ")


def test_a_conflict_pending_keeps_both_and_recall_keeps_the_higher(lexical_brain):
    b = lexical_brain
    old = b.learn(tenant="acme", condition="the deploy pipeline is blocked", action="retry the pipeline")
    new = b.learn(tenant="acme", condition="the deploy pipeline is blocked", action="open a change ticket first")
    report = hindsight_at(b, now_us())
    [pending] = [d for d in report.decisions if d["kind"] == "conflict_pending"]
    assert set(pending["subject_ids"]) == {old, new} and '"source": "lived"' in pending["payload_json"]
    pack = b.recall(tenant="acme", query="the deploy pipeline is blocked")
    kept = [i.id for i in pack.items if i.id in (old, new)]
    assert len(kept) == 1
    [cut] = [c for c in pack.cut if c["id"] in (old, new)]
    assert cut["stage"] == "conflict" and kept[0] in cut["reason"]
    assert b.sql("SELECT count() AS n FROM fragments FINAL")[0]["n"] == 2  # both kept
    assert not [d for d in hindsight_at(b, now_us()).decisions if d["kind"] == "conflict_pending"]  # once
