"""Every candidate's channel scores, penalties and score at once (design.md §issue-28, columnar hot path).

The engine scored a recall's ~100 candidates one by one, a dozen small function calls each
(``channels.scenario_score``, ``utility_score``, ``scope_fit``, ``combined``, the penalties),
~1.4 ms of a served recall. Here the per-document facts and the arithmetic are one C pass
(``_scan.raw_columns``; numpy columns before it, ~0.3 ms a recall). Each value is computed with
the same operations in the same order as the per-item functions in ``recall.channels`` /
``recall.scoring`` (IEEE add, multiply and divide; ``x + 0.0`` where an item has no such
penalty; the freshness by Python's own int and float operations), so every score is
bit-identical to theirs: the explanation (``RecallEngine._explain``, built from those functions)
always matches what ranked the item. ``tests/recall/test_raw_scores.py`` holds the C pass against
both the per-item functions and the numpy columns it replaced.

Pure: documents and facts in, columns out.
"""

from __future__ import annotations

from typing import NamedTuple

from hindbrain.recall import _scan, channels
from hindbrain.recall import beliefs as belief_layers
from hindbrain.recall.asking import ASKING_PENALTY
from hindbrain.recall.brevity import BREVITY_PENALTY, BREVITY_TOKENS
from hindbrain.recall.scoring import CHANNELS, Weights

# ``_scan.raw_columns`` fills each candidate's channel dict in this order: refuse to import if
# ``CHANNELS`` ever changes under it
if CHANNELS != ("lexical", "semantic", "graph", "scenario", "utility", "freshness"):
    raise ImportError(f"recall.raw_scores writes the channels in another order than CHANNELS {CHANNELS}")


class RawScores(NamedTuple):
    channels: list[dict[str, float]]  # per candidate, channel → score (``CHANNELS``)
    scores: list[float]  # after penalties, plus the belief bias
    penalties: list[float]
    matches: list[float]  # scope match in [0, 1]


def raw_scores(docs: list, counters: dict, query, w: Weights, lexical: list[float], semantic: list[float],
               graph: list[float], briefed: list) -> RawScores:
    """``docs``: the candidates (``recall.documents.Doc``); ``counters``: the tenant's usage counters by
    item id; ``lexical`` / ``semantic`` / ``graph``: each candidate's score of that channel;
    ``briefed``: the beliefs the briefing holds (their bias). ``query``: ``recall.query.Query``.
    The facts and the columns in one C pass (``_scan.raw_columns``): the numpy columns of ~100
    candidates were ~20 calls of a few µs each and a Python pass over the documents."""
    n = len(docs)
    if n == 0:
        return RawScores([], [], [], [])
    fused = w.method == "fused"
    recall_scope, trigger = query.scope, query.trigger
    if recall_scope:
        scope_penalty, match = map(list, zip(*(channels.scope_fit(doc.scope, recall_scope) for doc in docs),
                                             strict=True))
    else:  # channels.scope_fit without a recall scope: no penalty, a full match
        scope_penalty, match = None, [1.0] * n
    bias = [belief_layers.bias(doc, briefed)[0] for doc in docs] if briefed else None
    columns, scores, penalties = _scan.raw_columns(
        docs, counters, query.scene, channels.TRIGGER_PREFERS.get(trigger, ()) if trigger else (), query.now_us,
        channels.HALF_LIFE_DAYS, channels.VOLATILITY_OF_LAYER, channels.US_PER_DAY, lexical, semantic, graph,
        (w.lexical, w.semantic, w.graph, w.scenario, w.freshness, w.utility, w.belief_bias), fused,
        max(0.0, 1.0 - query.associative) if fused else 0.0, _CONSTANTS, scope_penalty, bias, CHANNELS)
    return RawScores(columns, scores, penalties, match)


# the penalties' constants in _scan.raw_columns' order
_CONSTANTS = (channels.CONTRADICTION_CAP, channels.CONTRADICTION_PENALTY, channels.REVIEWING_PENALTY,
              channels.SINGLE_SOURCE_PENALTY, ASKING_PENALTY, BREVITY_PENALTY, BREVITY_TOKENS)
