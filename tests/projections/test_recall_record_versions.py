"""A recall record as schema v1 wrote it (every candidate's brief ``why`` as JSON, the gate's
verdict inside) and as v2 writes it (the verdict and the numbers typed, the full explanation
only for what was returned) project into the same rows, replay into the same views and read as
the same audit timeline (docs/speed.md, "The recall record, round twelve")."""

from __future__ import annotations

import json

from hindbrain import Brain, audit
from hindbrain.projections.views import project_record
from hindbrain.recall.scoring import CHANNELS
from hindbrain.schemas.codec import registry
from hindbrain.streams.log import Message, Position
from hindbrain.streams.replay import replay
from hindbrain.streams.sqlite_log import SqliteLog
from hindbrain.streams.topics import TOPIC_OF, key_of


def _a_recall_with_a_cut(tmp_path) -> tuple[str, list[dict], list[tuple[str, dict]]]:
    """(the cut candidate's id, ``Brain.explain`` of it, the recall's two records): a recall that
    selected one unit and cut the other by scope, written by today's code."""
    with Brain.open(tmp_path / "brain", embedder="none") as b:
        for env in ("prod", "test"):
            b.learn(tenant="acme", condition=f"role change in {env}", action=f"use the {env} procedure",
                    scope={"env": env})
        pack = b.recall(tenant="acme", query="role change procedure", scope={"env": "prod"})
        cut_id = pack.cut[0]["id"]
        records = [(e["record_type"], e["record"]) for e in b.explain(pack.recall_id)]
        assert [rt for rt, _ in records] == ["recall", "injection"]
        return cut_id, b.explain(cut_id), records


def _as_v1(record: dict) -> dict:
    """The same recall as schema v1 wrote it, read back by today's reader: a candidate the
    engine did not explain in full carries the brief ``why`` v1 kept (channel scores, bm25,
    penalties, score, the gate's verdict)."""
    candidates = []
    for c in record["candidates"]:
        why = c["why_json"]
        if why is None:
            scores = dict(zip(record["score_names"], c["scores"], strict=True))
            brief = {ch: {"score": round(scores[ch], 4)} for ch in CHANNELS}
            brief["lexical"]["bm25"] = round(scores["bm25"], 4)
            brief |= {"penalties": round(scores["penalties"], 4), "score": round(c["score"], 6),
                      "gate": {"stage": c["stage"], "reason": c["reason"]}}
            why = json.dumps(brief)
        candidates.append({"item_id": c["item_id"], "item_kind": c["item_kind"], "score": c["score"],
                           "why_json": why})
    old = {k: v for k, v in record.items() if k != "score_names"}
    old |= {"envelope": {**record["envelope"], "schema_version": 1}, "candidates": candidates}
    value = registry.encode("recall", old, version=1)
    assert value[2:10] == registry.versions("recall")[0].fingerprint
    return registry.decode(value)[1]


def test_today_a_cut_candidate_carries_its_verdict_and_numbers_not_an_explanation(tmp_path):
    cut_id, chain, _ = _a_recall_with_a_cut(tmp_path)
    [recall] = [e["record"] for e in chain if e["record_type"] == "recall"]
    assert recall["envelope"]["schema_version"] == registry.current("recall").version == 2
    [cut] = [c for c in recall["candidates"] if c["item_id"] == cut_id]
    assert cut["why_json"] is None and cut["stage"] == "scope"
    assert len(cut["scores"]) == len(recall["score_names"])


def test_a_v1_and_a_v2_recall_record_project_to_the_same_rows(tmp_path):
    _, _, records = _a_recall_with_a_cut(tmp_path)
    new = records[0][1]
    old = _as_v1(new)
    assert old["score_names"] == [] and all(c["stage"] is None for c in old["candidates"])
    at = Position("recalls", 0, 7)
    rows = project_record("recall", new, at)
    assert rows == project_record("recall", old, at)
    assert {r["item_id"] for r in rows["feedback_signals"]} == {c["item_id"] for c in new["candidates"]}


def test_the_audit_reads_the_gate_of_either_version_alike(tmp_path):
    cut_id, chain, _ = _a_recall_with_a_cut(tmp_path)
    old_chain = [{**e, "record": _as_v1(e["record"])} if e["record_type"] == "recall" else e for e in chain]
    lines = audit.timeline(cut_id, chain)
    assert lines == audit.timeline(cut_id, old_chain)
    assert any("not injected (gate: scope 1)" in line and "does not match env=prod" in line for line in lines)


def test_a_replay_of_either_version_rebuilds_the_same_views(tmp_path, open_warehouse):
    _, _, records = _a_recall_with_a_cut(tmp_path)
    digests, recalled = [], []
    for version in (1, 2):
        log = SqliteLog(tmp_path / f"v{version}.sqlite")
        try:
            log.append([Message(TOPIC_OF[rt], key_of(r), registry.encode(rt, _as_v1(r), version=1)
                                if rt == "recall" and version == 1 else registry.encode(rt, r))
                        for rt, r in records])
            warehouse = open_warehouse()
            digests.append(replay(log, warehouse).digest)
            recalled.append(warehouse.query("SELECT item_id, recalled, injected FROM feedback ORDER BY item_id"))
        finally:
            log.close()
    assert digests[0] == digests[1]
    # both candidates recalled once, the selected one injected
    assert recalled[0] == recalled[1] and sorted((n, i) for _, n, i in recalled[0]) == [(1, 0), (1, 1)]
