"""Every candidate's channel scores, penalties and score at once (design.md §issue-28, columnar hot path).

The engine scored a recall's ~100 candidates one by one, a dozen small function calls each
(``channels.scenario_score``, ``utility_score``, ``scope_fit``, ``combined``, the penalties),
~1.4 ms of a served recall. Here the per-document facts are gathered in one pass and the
arithmetic runs on columns. Each column is computed with the same operations in the same
order as the per-item functions in ``recall.channels`` / ``recall.scoring`` (IEEE
elementwise add, multiply and divide; ``x + 0.0`` where an item has no such penalty), so every
score is bit-identical to theirs: the explanation (``RecallEngine._explain``, built from those
functions) always matches what ranked the item. ``tests/recall/test_raw_scores.py`` holds the
two against each other.

Pure: documents and facts in, columns out.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from hindbrain.recall import beliefs as belief_layers
from hindbrain.recall import channels
from hindbrain.recall.asking import ASKING_PENALTY
from hindbrain.recall.brevity import BREVITY_PENALTY, BREVITY_TOKENS
from hindbrain.recall.scoring import CHANNELS, Weights

# ``raw_scores`` builds each candidate's channel dict as a display in this order (a third of the
# cost of ``dict(zip(CHANNELS, row))``): refuse to import if ``CHANNELS`` ever changes under it
if CHANNELS != ("lexical", "semantic", "graph", "scenario", "utility", "freshness"):
    raise ImportError(f"recall.raw_scores writes the channels in another order than CHANNELS {CHANNELS}")


class RawScores(NamedTuple):
    channels: list[dict[str, float]]  # per candidate, channel → score (``CHANNELS``)
    scores: list[float]  # after penalties, plus the belief bias
    penalties: list[float]
    matches: list[float]  # scope match in [0, 1]


def raw_scores(docs: list, counters: dict, query, w: Weights, lexical: list[float], semantic: list[float],
               graph: list[float], briefed: list) -> RawScores:
    """``docs``: the candidates (``recall.index.Doc``); ``counters``: the tenant's usage counters by
    item id; ``lexical`` / ``semantic`` / ``graph``: each candidate's score of that channel;
    ``briefed``: the beliefs the briefing holds (their bias). ``query``: ``recall.query.Query``."""
    n = len(docs)
    if n == 0:
        return RawScores([], [], [], [])
    fused = w.method == "fused"
    scene, trigger, now_us, recall_scope = query.scene, query.trigger, query.now_us, query.scope
    prefers = channels.TRIGGER_PREFERS.get(trigger, ()) if trigger else ()
    facts = _document_facts(docs, counters, scene, prefers, now_us)
    scenario, success, failure, fresh, contradictions, reviewing, single = facts
    if recall_scope:
        scope_penalty, match = map(list, zip(*(channels.scope_fit(doc.scope, recall_scope) for doc in docs),
                                             strict=True))
    else:  # channels.scope_fit without a recall scope: no penalty, a full match
        scope_penalty, match = [0.0] * n, [1.0] * n
    if fused:
        asks = [doc.asks for doc in docs]
        brief_tokens = [doc.tokens if doc.event_kind == "message" else BREVITY_TOKENS for doc in docs]
    else:
        asks, brief_tokens = [0.0] * n, [BREVITY_TOKENS] * n
    lexical_, semantic_, graph_ = (np.asarray(v, dtype=np.float64) for v in (lexical, semantic, graph))
    scenario_, fresh_ = np.asarray(scenario), np.asarray(fresh)
    success_, failure_ = np.asarray(success, dtype=np.float64), np.asarray(failure, dtype=np.float64)
    utility = (success_ + 1) / (success_ + failure_ + 2)  # channels.utility_score
    # scoring.combined, term by term in its order
    relevance = (w.lexical * lexical_ + w.semantic * semantic_ + w.graph * graph_
                 + w.scenario * scenario_ + w.freshness * fresh_)
    total = relevance * (1.0 + w.utility * (2.0 * utility - 1.0)) if fused else relevance + w.utility * utility
    # channels.contradiction_amount + the scope penalty, then each optional penalty in _raw's order
    contradiction = np.minimum(channels.CONTRADICTION_CAP, channels.CONTRADICTION_PENALTY
                               * np.asarray(contradictions, dtype=np.float64))
    contradiction = contradiction + np.where(reviewing, channels.REVIEWING_PENALTY, 0.0)
    penalty = contradiction + np.asarray(scope_penalty, dtype=np.float64)
    penalty = penalty + np.where(single, channels.SINGLE_SOURCE_PENALTY, 0.0)
    if fused:
        unasked = max(0.0, 1.0 - query.associative)
        asks_ = np.asarray(asks, dtype=np.float64)
        penalty = penalty + np.where(asks_ != 0, ASKING_PENALTY * asks_ * unasked, 0.0)  # recall.asking
        tokens_ = np.asarray(brief_tokens, dtype=np.float64)
        brevity = BREVITY_PENALTY * (1.0 - np.maximum(0.0, tokens_) / BREVITY_TOKENS) * unasked  # recall.brevity
        penalty = penalty + np.where(tokens_ < BREVITY_TOKENS, brevity, 0.0)
        score = total * (1.0 - np.minimum(1.0, penalty))
    else:
        score = total - penalty
    if briefed:
        score = score + w.belief_bias * np.array([belief_layers.bias(doc, briefed)[0] for doc in docs])
    else:
        score = score + 0.0
    columns = zip(lexical_.tolist(), semantic_.tolist(), graph_.tolist(), scenario, utility.tolist(), fresh,
                  strict=True)
    return RawScores([{"lexical": le, "semantic": se, "graph": gr, "scenario": sc, "utility": ut, "freshness": fr}
                      for le, se, gr, sc, ut, fr in columns], score.tolist(), penalty.tolist(), match)


def _document_facts(docs: list, counters: dict, scene, prefers, now_us: int) -> tuple[list, ...]:
    """Per candidate, in one pass: (scenario score, successes, failures, freshness score,
    contradictions, under review, single-source). The per-item functions of ``recall.channels``
    (``scenario_score``, ``freshness_score`` with ``volatility_of``, the counters' ``track``)
    inlined with the same operations in the same order, so the values are bit-identical; a
    query without a scene or trigger skips what cannot score (~110 candidates a recall)."""
    half_lives, of_layer, day = channels.HALF_LIFE_DAYS, channels.VOLATILITY_OF_LAYER, channels.US_PER_DAY
    scenario, success, failure, fresh, contradictions, reviewing, single = [], [], [], [], [], [], []
    for doc in docs:
        scope = doc.scope
        s = 0.5 if scene and (scope.get("scene") or scope.get("task_type")) == scene else 0.0
        if prefers and (doc.kind in prefers or doc.layer in prefers or (doc.event_kind or "") in prefers):
            s += 0.5
        scenario.append(s)
        c = counters.get(doc.id)
        if c is None:
            success.append(0)
            failure.append(0)
            contradictions.append(0)
        else:
            worked, failed = c.track
            success.append(worked)
            failure.append(failed)
            contradictions.append(c.contradiction)
        volatility = scope.get("volatility") if scope else None
        half_life = half_lives[volatility if volatility in half_lives else of_layer[doc.layer]]
        fresh.append(1.0 if half_life == math.inf else
                     0.5 ** (max(0.0, (now_us - doc.fresh_since_us) / day) / half_life))
        reviewing.append(doc.status == "reviewing")
        single.append(bool(doc.provenance))
    return scenario, success, failure, fresh, contradictions, reviewing, single
