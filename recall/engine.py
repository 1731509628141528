"""The recall engine: candidates from the channels, one explained score each, then the gate.

1. **Candidates**: the best lexical hits (words + cue terms) and the nearest semantic
   neighbours, in the requested layers;
2. **graph**: the strongest candidates lend support to others sharing an entity and/or an
   action with them, and pull in items reachable only that way (rare cues only: a cue
   shared by hundreds of items is not a link);
3. **score**: every channel of ``recall.channels`` for every candidate, combined by
   ``recall.scoring`` (the seed's weights or RRF), minus penalties, plus the belief bias;
4. **gate**: the best ``pool`` candidates go through ``recall.gate`` after the briefing has
   taken its share of the budget.

IO-free apart from reading the in-memory index; timings per stage are returned for the
latency benchmark.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from hindbrain.recall import beliefs as belief_layers
from hindbrain.recall import channels
from hindbrain.recall.gate import GateItem, gate
from hindbrain.recall.index import Belief, Doc, RecallIndex, TenantIndex
from hindbrain.recall.query import Query
from hindbrain.recall.scoring import CHANNELS, Weights, competition_ranks, rrf, weighted
from hindbrain.streams.gc_pause import gc_paused

FETCH = 64  # hits each search channel contributes
POOL = 32  # scored candidates that reach the gate and the recall record
GRAPH_SEEDS = 8  # strongest candidates whose links the graph follows
GRAPH_MAX_DF = 200  # a cue term held by more items than this is not followed (not distinctive)
GRAPH_NEW = 64  # items the graph may add beyond the search hits


@dataclass
class Scored:
    doc: Doc
    score: float
    why: dict
    scope_match: float
    channel_scores: dict[str, float] = field(default_factory=dict)


@dataclass
class RecallResult:
    ranked: list[Scored]  # the pool, best first, every why filled
    selected: list[GateItem]
    cut: list[dict]
    briefed: list[tuple[Belief, str]]
    timings_ms: dict[str, float] = field(default_factory=dict)


class RecallEngine:
    def __init__(self, index: RecallIndex, weights: Weights | None = None, pool: int = POOL, fetch: int = FETCH):
        self.index, self.weights, self.pool, self.fetch = index, weights or Weights(), pool, fetch

    def recall(self, query: Query) -> RecallResult:
        # Scoring allocates only acyclic, short-lived dicts; without the pause, their churn
        # triggered full collections over the index's objects (~170 ms at 100k units).
        with gc_paused():
            return self._recall(query)

    def _recall(self, query: Query) -> RecallResult:
        clock = _Clock()
        tenant = self.index.tenants.get(query.tenant)
        if tenant is None:
            return RecallResult([], [], [], [], clock.laps)
        mask = tenant.layer_mask(query.layers)
        lexical = self._lexical(tenant, query, mask)
        clock.lap("lexical")
        cosines = self._semantic(query, mask, clock)
        briefed = _within(belief_layers.briefing(list(tenant.beliefs.values()), query.scene, query.user),
                          query.budget_tokens)
        ranked = self.score(tenant, query, lexical, cosines, mask, [b for b, _ in briefed])
        clock.lap("score")
        items = [GateItem(s.doc, s.score, s.scope_match, s.why) for s in ranked]
        for item in items:
            _explain_terms(item, query)
        reserved = sum(b.tokens for b, _ in briefed)
        selected, cut = gate(items, query.scope, query.budget_tokens, query.k, reserved_tokens=reserved)
        clock.lap("gate")
        return RecallResult(ranked, selected, cut, briefed, clock.laps)

    # -- channels that search ------------------------------------------------------------
    def _lexical(self, tenant: TenantIndex, query: Query, mask) -> dict[int, tuple[float, float]]:
        """doc number → (bm25, query information) for the best ``fetch`` lexical hits."""
        scores, idfs = tenant.bm25.scores(query.terms)
        if mask is not None:
            scores = np.where(mask[: len(scores)], scores, 0.0)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > self.fetch:
            hits = hits[np.argpartition(-scores[hits], self.fetch - 1)[: self.fetch]]
        # A query term no document holds still carries information (idf as if df = 0): without
        # it, a query whose only known word is "the" would be fully "covered" by any document.
        unseen = math.log(1.0 + (len(tenant.bm25) + 0.5) / 0.5)
        information = sum(idfs.get(t, unseen) for t in query.terms)
        return {int(d): (float(scores[d]), information) for d in hits}

    def _semantic(self, query: Query, mask, clock) -> dict[int, float]:
        semantic = self.index.semantic
        if semantic is None or not query.semantic_text:
            return {}
        vector = semantic.embed_query(query.semantic_text)
        clock.lap("embed")
        hits = semantic.search(query.tenant, vector, self.fetch, mask)
        clock.lap("semantic")
        return dict(hits)

    # -- scoring -------------------------------------------------------------------------
    def score(self, tenant: TenantIndex, query: Query, lexical: dict[int, tuple[float, float]],
              cosines: dict[int, float], mask, briefed: list[Belief]) -> list[Scored]:
        """Every channel for every candidate; returns the best ``pool``, best first."""
        model = self.index.semantic.embedder.name if self.index.semantic is not None else "none"
        parts: dict[int, dict[str, tuple[float, dict]]] = {}
        for no in set(lexical) | set(cosines):
            doc = tenant.docs[no]
            bm25, information = lexical.get(no, (0.0, 0.0))
            matched = [c for c in doc.exact if c in query.exact]
            parts[no] = {"lexical": channels.lexical(bm25, information, matched, len(query.exact)),
                         "semantic": channels.semantic(cosines.get(no), model)}
        w = self.weights
        # The graph's seeds: the search channels' view of relevance (an equal mix when both are off).
        wl, ws = (w.lexical, w.semantic) if w.lexical + w.semantic > 0 else (1.0, 1.0)
        base = {no: (wl * p["lexical"][0] + ws * p["semantic"][0]) / (wl + ws) for no, p in parts.items()}
        for no, links in _graph_links(tenant, base, mask).items():
            parts.setdefault(no, {"lexical": channels.lexical(0.0, 0.0, [], 0),
                                  "semantic": channels.semantic(cosines.get(no), model)})
            parts[no]["graph"] = channels.graph(links)
        scored = [self._combine(tenant, query, tenant.docs[no], p, briefed) for no, p in parts.items()]
        if w.method == "rrf":
            scored = self._rrf(scored)
        scored.sort(key=lambda s: (-s.score, s.doc.id))
        return scored[: self.pool]

    def _combine(self, tenant: TenantIndex, query: Query, doc: Doc, p: dict, briefed: list[Belief]) -> Scored:
        counters = tenant.counters.get(doc.id)
        traits = {doc.kind, doc.layer, doc.event_kind or ""}
        p.setdefault("graph", channels.graph([]))
        p["scenario"] = channels.scenario(query.scene, doc.scope.get("scene") or doc.scope.get("task_type"),
                                          query.trigger, traits)
        p["utility"] = channels.utility(*(
            (counters.applied, counters.success, counters.failure) if counters else (0, 0, 0)))
        p["freshness"] = channels.freshness(doc.ts_us, query.now_us, channels.volatility_of(doc.layer, doc.scope))
        raw = {ch: p[ch][0] for ch in CHANNELS}
        total, contributions = weighted(raw, self.weights)
        why = {ch: {**p[ch][1], "weight": getattr(self.weights, ch), "contribution": round(contributions[ch], 4)}
               for ch in CHANNELS}
        contradiction, why["contradiction_penalty"] = channels.contradiction_penalty(
            doc.status, counters.contradiction if counters else 0)
        scope_penalty, match, why["scope"] = channels.scope_mismatch(doc.scope, query.scope)
        strength, belief_ids = belief_layers.bias(doc, briefed)
        bias = self.weights.belief_bias * strength
        if belief_ids:
            why["belief_bias"] = {"beliefs": belief_ids, "contribution": round(bias, 4)}
        penalty = contradiction + scope_penalty
        why["penalties"] = round(penalty, 4)
        score = total - penalty + bias
        why["score"] = round(score, 4)
        return Scored(doc, score, why, match, raw)

    def _rrf(self, scored: list[Scored]) -> list[Scored]:
        """Replace the weighted sums by reciprocal-rank fusion of the raw channel scores;
        penalties then scale the fused score down (RRF scores are not on the channels' scale)."""
        fused = rrf({ch: competition_ranks([s.channel_scores[ch] for s in scored]) for ch in CHANNELS}, self.weights)
        for n, s in enumerate(scored):
            s.score = sum(fused.get(n, {}).values()) * (1.0 - min(1.0, s.why["penalties"]))
            s.why["score"] = round(s.score, 6)
            s.why["method"] = "rrf"
        return scored

def _graph_links(tenant: TenantIndex, base: dict[int, float], mask) -> dict[int, list[tuple[str, float, list[str]]]]:
    """Candidate → [(seed id, seed base score, shared link cues)] for the strongest seeds."""
    seeds = sorted((no for no, b in base.items() if b > 0), key=lambda no: -base[no])[:GRAPH_SEEDS]
    links: dict[int, list] = {}
    new = 0
    for seed in seeds:
        seed_doc = tenant.docs[seed]
        seed_links = set(seed_doc.links)
        if not seed_links:
            continue
        reach = set(base)
        for term in seed_links:
            holders = tenant.bm25.docs_with(term)
            if len(holders) <= GRAPH_MAX_DF:
                reach.update(int(d) for d in holders if mask is None or mask[d])
        for no in reach:
            if no == seed:
                continue
            shared = seed_links.intersection(tenant.docs[no].links)
            if not shared:
                continue
            if no not in base and no not in links:
                if new >= GRAPH_NEW:
                    continue
                new += 1
            links.setdefault(no, []).append((seed_doc.id, base[seed], sorted(shared)))
    return links


def _within(briefed: list[tuple[Belief, str]], budget: int) -> list[tuple[Belief, str]]:
    """The briefing comes first but never exceeds the budget on its own."""
    kept, used = [], 0
    for belief, layer in briefed:
        if used + belief.tokens <= budget:
            kept.append((belief, layer))
            used += belief.tokens
    return kept


def _explain_terms(item: GateItem, query: Query) -> None:
    if item.why["lexical"]["bm25"] > 0:
        words = item.words.union(item.doc.links, item.doc.exact)
        item.why["lexical"]["matched_terms"] = sorted(words.intersection(query.terms))[:20]


class _Clock:
    def __init__(self):
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = (now - self._t) * 1000
        self._t = now
