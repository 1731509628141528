"""One agent's word said again is still one agent's word (docs/security.md, round twenty-seven).

Assimilation adds up the evidence of the same lesson proposed again (noisy-or). A caller repeating its own
``learn`` added up too: six calls by one agent showed its unit as candidate 1.00 in its recalls, and an agent's
own low-confidence proposal (the holding area) left it by being said three times. Now a repetition by an agent
already behind the unit is kept as evidence and moves nothing; another agent's proposal still adds up."""

import json

from hindbrain import Brain

LESSON = {"condition": "the nightly export stalls at 02:00", "action": "restart the export worker, then re-run it"}


def last_unit(b, fid: str) -> dict:
    rows = b.sql("SELECT payload_json FROM decisions FINAL WHERE has(subject_ids, {f:String}) ORDER BY _offset",
                 {"f": fid})
    return json.loads(rows[-1]["payload_json"])["unit"]


def kinds(b, fid: str) -> list[str]:
    return [r["kind"] for r in b.sql("SELECT kind FROM decisions FINAL WHERE has(subject_ids, {f:String}) "
                                     "ORDER BY _offset", {"f": fid})]


def test_one_agent_repeating_a_lesson_counts_once_and_a_second_agent_still_adds_up(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        fid = b.learn(tenant="acme", agent="bot-1", **LESSON)
        for _ in range(5):
            b.learn(tenant="acme", agent="bot-1", **LESSON)
        unit = last_unit(b, fid)
        assert round(unit["confidence"], 2) == 0.60 and unit["agents"] == ["bot-1"] and unit["status"] == "candidate"
        assert kinds(b, fid).count("unit_assimilated") == 5
        [item] = [i for i in b.recall(tenant="acme", agent="bot-1", query="the nightly export stalls").items
                  if i.id == fid]
        assert round(item.confidence, 2) == 0.60
        b.learn(tenant="acme", agent="bot-2", **LESSON)  # an independent agent: evidence adds up
        unit = last_unit(b, fid)
        assert round(unit["confidence"], 2) == 0.84 and unit["agents"] == ["bot-1", "bot-2"]


def test_an_agent_s_own_repetition_does_not_lift_its_proposal_out_of_the_holding_area(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        fid = b.learn(tenant="acme", agent="bot-1", confidence=0.2, **LESSON)
        for _ in range(3):
            b.learn(tenant="acme", agent="bot-1", confidence=0.2, **LESSON)
        assert "unit_released" not in kinds(b, fid) and last_unit(b, fid)["status"] == "held"
        b.learn(tenant="acme", agent="bot-2", confidence=0.2, **LESSON)  # 1 - 0.8² = 0.36 ≥ 0.3: a second source
        assert "unit_released" in kinds(b, fid)
