"""Every structured field a cue (design.md §issue-16): speaker, session, time, entities, system, identity
and action are reachable from a free-text query that names them, in both languages; and the
ranking rules the quality harness relies on: distinct memories are not merged, k is honoured,
a rule comes before routine events."""

from datetime import UTC, datetime

import pytest

from hindbrain.recall.engine import POOL


def ids(pack):
    return [i.id for i in pack.items]


def turn(b, tenant, event_id, speaker, text, day, session="s1"):
    b.perceive(tenant=tenant, kind="message", session=session, speaker=speaker, text=text, event_id=event_id,
               ts=datetime(2023, 5, day, 18, tzinfo=UTC))


@pytest.mark.parametrize("preset", ["fused", "seed"])
def test_the_speaker_decides_whose_pet_it_is(tmp_path, monkeypatch, preset):
    from hindbrain import Brain

    monkeypatch.setenv("HINDBRAIN_RECALL_PRESET", preset)
    with Brain.open(tmp_path / "b") as b:
        turn(b, "c", "t1", "Maya", "My cat Mochi knocked the plant over again this morning", 1)
        turn(b, "c", "t2", "Daniel", "Ha! My dog Biscuit chewed the sofa this morning", 1)
        turn(b, "c", "t3", "Maya", "I walked past the old bakery and thought of you", 2)
        assert ids(b.recall(tenant="c", query="What is Daniel's pet called?", k=1)) == ["t2"]
        assert ids(b.recall(tenant="c", query="What is Maya's pet called?", k=1)) == ["t1"]
        pack = b.recall(tenant="c", query="Daniel 的宠物叫什么？", k=1)
        assert ids(pack) == ["t2"] and "daniel" in pack.items[0].why["lexical"]["matched_terms"]
        assert pack.items[0].text.startswith("Daniel: ")  # the prompt says who said it
        assert pack.items[0].why["fusion"]["preset"] == preset


def test_an_unknown_preset_is_refused_by_name(tmp_path, monkeypatch):
    from hindbrain import Brain

    monkeypatch.setenv("HINDBRAIN_RECALL_PRESET", "bm42")
    with pytest.raises(ValueError, match="recall preset must be one of .*'bm42'"):
        Brain.open(tmp_path / "b")


def test_dates_sessions_and_entities_are_reachable_from_free_text(lexical_brain):
    b = lexical_brain
    turn(b, "c", "may", "Maya", "We finally went to the lake for a picnic", 14, session="s-07")
    b.perceive(tenant="c", kind="message", speaker="Maya", text="We finally went to the lake for a picnic",
               event_id="june", ts=datetime(2023, 6, 20, tzinfo=UTC))
    assert ids(b.recall(tenant="c", query="the picnic at the lake in May 2023", k=1)) == ["may"]
    assert ids(b.recall(tenant="c", query="the picnic at the lake in June 2023", k=1)) == ["june"]
    assert ids(b.recall(tenant="c", query="2023年5月 湖边野餐 picnic", k=1)) == ["may"]
    assert ids(b.recall(tenant="c", query="what happened in s-07 picnic", k=1)) == ["may"]
    b.perceive(tenant="c", kind="observation", text="the request was stuck for two days", entities=["Change Request"],
               event_id="ent")
    b.perceive(tenant="c", kind="observation", text="the printer was stuck for two days", event_id="other")
    assert ids(b.recall(tenant="c", query="change request stuck", k=1)) == ["ent"]


def test_situation_fields_are_reachable_from_a_question(lexical_brain):
    b = lexical_brain
    b.perceive(tenant="acme", kind="anomaly", text="nothing happened", system="IAM", identity="normal account",
               action="submit change", event_id="iam")
    b.perceive(tenant="acme", kind="anomaly", text="nothing happened", system="CRM", identity="admin",
               action="export contacts", event_id="crm")
    assert ids(b.recall(tenant="acme", query="what went wrong when I tried to submit change?", k=1)) == ["iam"]
    assert ids(b.recall(tenant="acme", query="CRM export as admin", k=1)) == ["crm"]


def test_distinct_memories_that_share_a_template_are_not_merged(lexical_brain):
    b = lexical_brain
    texts = ["Bart won first place in the 100 meters at the sports festival and felt very happy",
             "Bart won first place in the long jump at the sports festival and felt very happy",
             "Bart won first place in the 200 meters at the sports festival and felt very happy"]
    for n, text in enumerate(texts):
        b.perceive(tenant="u", agent="a", kind="observation", text=text, event_id=f"m{n}")
    pack = b.recall(tenant="u", agent="a", query="Bart won first place at the sports festival", k=10)
    assert sorted(ids(pack)) == ["m0", "m1", "m2"]
    assert not [c for c in pack.cut if c["stage"] in ("near_duplicate", "invalidation")]


def test_two_speakers_echoing_each_other_are_two_turns(lexical_brain):
    b = lexical_brain
    for n, speaker in enumerate(["Maya", "Daniel"]):
        b.perceive(tenant="c", agent="chat", kind="message", session="s1", speaker=speaker,
                   text="haha yes that was so much fun", event_id=f"e{n}")
    b.hindsight()
    assert b.sql("SELECT count() AS n FROM decisions FINAL WHERE kind = 'events_merged'") == [{"n": 0}]
    assert sorted(ids(b.recall(tenant="c", query="so much fun", k=5))) == ["e0", "e1"]


def test_k_up_to_100_is_honoured(lexical_brain):
    b = lexical_brain
    b.perceive_many([{"tenant": "t", "kind": "observation", "text": f"deploy step {n} of the release train",
                      "event_id": f"e{n}"} for n in range(150)])
    assert len(b.recall(tenant="t", query="deploy release train step", k=100, budget_tokens=100_000).items) == 100
    assert POOL < 100


def test_a_rule_comes_before_routine_events_about_the_same_system(lexical_brain):
    b = lexical_brain
    for n in range(12):
        b.perceive(tenant="ops", agent="a1", task=f"t{n}", kind="action", action="view dashboard", system="Grafana",
                   identity="viewer", success=True, text="view dashboard succeeded with viewer")
    rule = b.learn(tenant="ops", condition="edit dashboard in Grafana", action="use the editor account",
                   reason="viewers cannot save dashboards", seed=True)
    pack = b.recall(tenant="ops", agent="a2", query="edit dashboard in Grafana", trigger="task_start",
                    situation={"system": "Grafana", "action": "edit dashboard"})
    assert ids(pack)[0] == rule
    routine = [i for i in pack.items if i.kind == "event"]
    assert all(i.score < pack.items[0].score for i in routine)
