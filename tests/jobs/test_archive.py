"""Capacity with value-based eviction, and cold storage of never-used old episodes."""

from hindsight_helpers import DAY_US, hindsight_at

from hindbrain.jobs import archive
from hindbrain.schemas.records import now_us


def test_over_capacity_the_lowest_value_units_are_archived_and_red_lines_stay(lexical_brain, monkeypatch):
    monkeypatch.setattr(archive, "CAPACITY", {"experience": 2, "knowledge": 2})
    b = lexical_brain
    proven = b.learn(tenant="acme", condition="the CRM bulk update returns HTTP 413", action="send batches of 200")
    red = b.learn(tenant="acme", condition="a production restore from backup starts",
                  action="verify the checksum first", scope={"volatility": "red_line"})
    weak = b.learn(tenant="acme", condition="the nightly report is late", action="page the data team",
                   confidence=0.35)
    b.outcome(tenant="acme", task="t1", applied=[proven], success=True)
    report = hindsight_at(b, now_us() + 200 * DAY_US)
    [evicted] = [d for d in report.decisions if d["kind"] == "units_evicted"]
    assert evicted["subject_ids"] == [weak]
    states = {r["fragment_id"]: r["status"] for r in b.sql("SELECT fragment_id, status FROM unit_states FINAL")}
    assert states[weak] == "archived" and states[red] != "archived" and states[proven] != "archived"
    pack = b.recall(tenant="acme", query="the nightly report is late")
    assert weak not in [i.id for i in pack.items] and any(c["id"] == weak and "archived" in c["reason"]
                                                          for c in pack.cut)
    assert b.sql("SELECT count() AS n FROM fragments FINAL")[0]["n"] == 3  # nothing deleted


def test_old_never_injected_events_go_cold_and_keep_a_summary(lexical_brain):
    b = lexical_brain
    long_text = "the SSO login page loops back to the start " + "with a long trace " * 20
    cold = b.perceive(tenant="acme", kind="observation", text=long_text)
    used = b.perceive(tenant="acme", kind="observation", text="the SSO certificate was rotated on Monday morning")
    assert [i.id for i in b.recall(tenant="acme", query="SSO certificate rotated", k=1).items] == [used]
    report = hindsight_at(b, now_us() + 31 * DAY_US)
    [decision] = [d for d in report.decisions if d["kind"] == "events_cold"]
    assert decision["subject_ids"] == [cold]  # the injected one stays hot
    pack = b.recall(tenant="acme", query="SSO login page loops")
    [item] = [i for i in pack.items if i.id == cold]
    assert item.text.endswith("…") and len(item.text) <= 120 and item.text.startswith("the SSO login page loops")
    [row] = b.sql("SELECT text FROM events WHERE event_id = {e:String}", {"e": cold})
    assert row["text"] == long_text  # the view (and the log) keep the full text
    assert not [d for d in hindsight_at(b, now_us() + 32 * DAY_US).decisions if d["kind"] == "events_cold"]
