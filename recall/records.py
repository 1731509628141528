"""The log records of one recall (what was considered, and why) and what the agent gets.

The recall record keeps every candidate of the pool with its score, its numbers (each
channel's score, bm25, the graph's chain support, the penalties: ``SCORE_NAMES``, named once a
record) and the gate's verdict (stage and reason), so a cut is as auditable as a selection. A
candidate's explanation as JSON (``why_json``) only when the recall asked ``explain=True``: the
returned items' full explanations (~1.6 kB each, ~18 kB of a 31 kB record at 100k events) went
to the agent in the pack already, and nothing that reads the log (the views, the audit's
timeline) read more of any candidate's than the gate's verdict (schema v2, docs/speed.md "The
recall record, round twelve"). The injection record lists what entered the prompt — briefed
beliefs first, then the placed items — with rank, tokens and score.
"""

from __future__ import annotations

import orjson

from hindbrain.recall.documents import Belief
from hindbrain.recall.engine import RecallResult, Scored
from hindbrain.recall.pack import Recalled, RecallPack
from hindbrain.recall.provenance import attribution_of
from hindbrain.recall.scoring import CHANNELS
from hindbrain.schemas.records import envelope, new_id

SCORE_NAMES = (*CHANNELS, "bm25", "chain", "penalties")  # a candidate's ``scores``, in this order


def _json(why: dict) -> str:
    # orjson: a pool of 32 explanations per recall took ~1 ms with json.dumps (~8x slower);
    # scores may be numpy floats, which json.dumps only took because they subclass float.
    return orjson.dumps(why, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def _belief_why(belief: Belief, layer: str, arm: tuple[str, str] | None = None) -> dict:
    why = {"briefing": {"layer": layer}, "layer": layer, "support": belief.support, "score": belief.confidence}
    if arm:
        why["ab_window"] = {"window": arm[0], "arm": arm[1]}
    return why


def recall_records(q, result: RecallResult) -> tuple[dict, dict]:
    """(recall record, injection record) for validated input ``q`` and the engine's result."""
    recall_id = new_id("recall")
    env = dict(tenant=q.tenant, agent=q.agent, task=q.task)
    briefed = [{"item_id": b.id, "item_kind": "belief", "score": b.confidence,
                "why_json": _json(_belief_why(b, layer, result.arms.get(b.id))),
                "stage": None, "reason": None, "scores": []}
               for b, layer in result.briefed]
    verdicts = gate_verdicts(result)
    considered = [_candidate(s, verdicts.get(s.doc.id, (None, None)), q.explain) for s in result.ranked]
    recall_record = {
        "envelope": envelope("recall", record_id=recall_id, **env),
        "recall_id": recall_id, "query": q.query, "situation": dict(q.situation), "trigger": q.trigger,
        "scope": dict(q.scope), "budget_tokens": q.budget_tokens, "k": q.k, "layers": list(q.layers or []),
        "score_names": list(SCORE_NAMES), "candidates": briefed + considered,
    }
    injected = [(b.id, "belief", b.tokens, b.confidence, result.arms.get(b.id, (None, None))[1])
                for b, _ in result.briefed]
    injected += [(i.id, i.doc.kind, i.doc.tokens, i.relevance, None) for i in result.selected]
    injection_record = {
        "envelope": envelope("injection", causation_ids=[recall_id], **env),
        "recall_id": recall_id, "budget_tokens": q.budget_tokens,
        "items": [{"item_id": item, "item_kind": kind, "rank": n, "tokens": tokens, "score": score, "arm": arm}
                  for n, (item, kind, tokens, score, arm) in enumerate(injected)],
    }
    return recall_record, injection_record


def gate_verdicts(result: RecallResult) -> dict[str, tuple[str, str | None]]:
    """item id → (stage, reason) of the gate's verdict: ``("selected", None)`` or the cut's. A
    selected item cut afterwards (an event its selected unit covers) is cut."""
    verdicts = {i.id: ("selected", None) for i in result.selected}
    verdicts.update((c["id"], (c["stage"], c["reason"])) for c in result.cut)
    return verdicts


def _candidate(s: Scored, verdict: tuple[str | None, str | None], explain: bool) -> dict:
    """A pooled candidate as the recall record keeps it: its numbers (``SCORE_NAMES``) and the
    gate's verdict always, its full ``why`` as JSON on ``explain``. Floats made plain: the Avro
    writer's C path takes ``float`` exactly, a numpy scalar would send the whole record to fastavro."""
    channel = s.channel_scores
    scores = [float(channel[c]) for c in CHANNELS]
    scores += [float(s.why["lexical"].get("bm25", 0.0)), float(s.chain), float(s.penalty)]
    return {"item_id": s.doc.id, "item_kind": s.doc.kind, "score": float(s.score),
            "why_json": _json(s.why) if explain else None, "stage": verdict[0], "reason": verdict[1],
            "scores": scores}


def pack_of(recall_id: str, budget_tokens: int, result: RecallResult, scope: dict | None = None) -> RecallPack:
    items = [
        Recalled(id=i.id, kind=i.doc.kind, text=i.doc.text, event_ids=list(i.doc.event_ids), score=i.relevance,
                 why=i.why, source=i.doc.source, layer=i.doc.layer, confidence=i.doc.confidence,
                 tokens=i.doc.tokens, scope=dict(i.doc.scope), condition=i.doc.condition, action=i.doc.action,
                 reason=i.doc.reason, status=i.doc.status, ts_us=i.doc.ts_us, attribution=attribution_of(i.doc))
        for i in result.selected
    ]
    briefing = [
        Recalled(id=b.id, kind="belief", text=b.text, event_ids=list(b.event_ids), score=b.confidence,
                 why=_belief_why(b, layer, result.arms.get(b.id)), source="induced", layer=layer,
                 confidence=b.confidence,
                 tokens=b.tokens, scope=dict(b.scope), status=b.status, ts_us=b.ts_us)
        for b, layer in result.briefed
    ]
    return RecallPack(recall_id, items, budget_tokens, result.cut, briefing, result.timings_ms, dict(scope or {}))
