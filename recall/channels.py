"""The recall channels (design.md §C3): each a pure function from facts about one candidate to a
score in [0, 1] (penalties: an amount to subtract) and the explanation that goes into
``item.why``. The engine gathers the facts; these functions only judge them.

* lexical — BM25 as the share of the query's information the item matched, plus a boost
  for exact cues (error codes, URLs, accounts, system names): lexical search is uniquely
  good at those;
* semantic — cosine similarity of the embeddings (near-synonyms: "页面一直转圈" ≈
  "提交后长期没有响应");
* graph — support from other hits sharing an entity and/or an action with this item
  (fragments weak alone, strong together: an action chain);
* scenario — the item fits the recall's scene (task type) or trigger;
* utility — historical usefulness from outcomes of *applied* items (never "was recalled");
* freshness — by the item's volatility class; red-line items never fade by disuse;
* penalties — contradiction (reviewing or contradicted items), scope mismatch, and a unit only
  one agent verified (shared with its provenance, ranked below what the fleet verified).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

Contribution = tuple[float, dict]

TURN_DECAY = 0.5  # each older user turn of a dialogue query counts half as much as the next (late interaction)
EXACT_BOOST = 0.5  # a query's exact cues all matched add this much to the lexical score (capped at 1)
GRAPH_STRENGTH = {1: 0.5, 2: 1.0}  # sharing one kind of link (entity or action) vs both: a chain
HALF_LIFE_DAYS = {"high": 7.0, "medium": 90.0, "low": 365.0, "red_line": math.inf}
VOLATILITY_OF_LAYER = {"episodic": "high", "experience": "medium", "knowledge": "low", "identity": "low"}
REVIEWING_PENALTY = 0.15
CONTRADICTION_PENALTY, CONTRADICTION_CAP = 0.10, 0.30
SCOPE_PENALTY = 0.20  # per scope coordinate the item and the recall name differently
SINGLE_SOURCE_PENALTY = 0.10  # a unit one agent verified and shared, not yet verified by the fleet
# Which items a trigger prefers (design.md §C1, C7): an anomaly wants rules and past anomalies,
# a reference to the past wants the timeline, a new task wants knowledge and experience.
TRIGGER_PREFERS = {
    "anomaly": {"fragment", "anomaly"},
    "no_progress": {"fragment"},
    "no_data": {"knowledge"},
    "unresolved_entity": {"knowledge", "event"},
    "user_reference": {"message", "event"},
    "task_start": {"identity", "knowledge", "experience"},
}
US_PER_DAY = 86_400 * 1_000_000


def coverage(bm25: float, query_information: float) -> float:
    """``bm25`` relative to ``query_information`` (the sum of the query terms' idf, the score
    of a document holding each term once)."""
    return min(1.0, bm25 / query_information) if query_information > 0 else 0.0


def lexical_score(bm25: float, query_information: float, matched_exact: int, query_exact: int) -> float:
    """``coverage`` plus the exact-cue boost."""
    boost = EXACT_BOOST * matched_exact / query_exact if query_exact else 0.0
    return min(1.0, coverage(bm25, query_information) + boost)


def lexical(bm25: float, query_information: float, matched_exact: list[str], query_exact: int,
            best_bm25: float | None = None) -> Contribution:
    """The lexical score and its explanation: ``lexical_score`` (share of the query's
    information), or with ``best_bm25`` (the ``fused`` preset) ``relative_lexical_score``."""
    if best_bm25 is None:
        score = lexical_score(bm25, query_information, len(matched_exact), query_exact)
    else:
        score = relative_lexical_score(bm25, best_bm25, len(matched_exact), query_exact)
    why = {"score": round(score, 4), "bm25": round(bm25, 4), "coverage": round(coverage(bm25, query_information), 4)}
    if best_bm25 is not None:
        why["best_bm25"] = round(best_bm25, 4)
    if matched_exact:
        why["exact_cues"] = sorted(matched_exact)
    return score, why


def relative_lexical_score(bm25: float, best_bm25: float, matched_exact: int, query_exact: int) -> float:
    """BM25 relative to this recall's best lexical hit (the ``fused`` preset's lexical score),
    plus the exact-cue boost: per-query normalised, so a long dialogue's many weak matches and
    a short question's few strong ones land on the same scale as the semantic score."""
    boost = EXACT_BOOST * matched_exact / query_exact if query_exact else 0.0
    return min(1.0, (bm25 / best_bm25 if best_bm25 > 0 else 0.0) + boost)


def late_interaction(cosines):
    """A candidate's semantic cosine over the query's views (rows: candidates; column 0 the
    joined query, the others single turns, oldest first, see ``recall.dialogue``): half the
    joined view, a quarter the best single turn, a quarter the turns' recency-weighted mean.
    One view: its cosine. NaN (no vector yet) stays NaN."""
    if cosines.shape[1] == 1:
        return cosines[:, 0]
    turns = cosines[:, 1:]
    weights = np.array([TURN_DECAY ** (turns.shape[1] - 1 - i) for i in range(turns.shape[1])], dtype=np.float32)
    with np.errstate(invalid="ignore"):
        best = turns.max(axis=1)
        recent = turns @ weights / weights.sum()
    return 0.5 * cosines[:, 0] + 0.25 * best + 0.25 * recent


def semantic_score(cosine: float | None) -> float:
    return 0.0 if cosine is None else max(0.0, min(1.0, cosine))


def normalised_semantic_score(cosine: float | None, lowest: float, highest: float) -> float:
    """The cosine min-max scaled over this recall's candidates (the ``fused`` preset)."""
    if cosine is None:
        return 0.0
    return 1.0 if highest <= lowest else max(0.0, min(1.0, (cosine - lowest) / (highest - lowest)))


def semantic(cosine: float | None, model: str, views: int = 1, scale: tuple[float, float] | None = None
             ) -> Contribution:
    """``scale``: the (lowest, highest) cosine among the candidates when the score is min-max
    normalised (``fused``); None: the cosine itself is the score."""
    if cosine is None:
        return 0.0, {"score": 0.0, "model": model, "note": "no vector yet, or not among the nearest neighbours"}
    score = semantic_score(cosine) if scale is None else normalised_semantic_score(cosine, *scale)
    why = {"score": round(score, 4), "cosine": round(cosine, 4), "model": model}
    if views > 1:
        why["views"] = views
    if scale is not None:
        why["scaled_between"] = [round(scale[0], 4), round(scale[1], 4)]
    return score, why


def chain_strength(kinds: int) -> float:
    """How strongly two items are chained by the number of link kinds (entity, action) they
    share: one, or both (an action chain)."""
    return GRAPH_STRENGTH[min(2, kinds)]


def link_strength(shared) -> float:
    """``chain_strength`` of the link kinds (a cue's prefix: ``@entity``, ``@action``) ``shared`` holds."""
    return _strength_of(tuple(shared))


@lru_cache(maxsize=4096)
def _strength_of(shared: tuple[str, ...]) -> float:
    # an explanation's ~80 links a recall are a few cue pairs over and over: split once per pair
    return chain_strength(len({term.split(":", 1)[0] for term in shared}))


def graph_score(supports) -> float:
    """Noisy-or of the links' supports (each ``base × strength``)."""
    miss = 1.0
    for support in supports:
        miss *= 1.0 - min(1.0, support)
    return 1.0 - miss


def graph(links: list[tuple[str, float, list[str]]]) -> Contribution:
    """``links``: (other hit's id, its base score, cue terms shared with it). Each link adds
    support ``base × strength`` (noisy-or), stronger when entity *and* action are shared.
    The explanation names the five strongest."""
    supports = [base * link_strength(shared) for _, base, shared in links]
    strongest = sorted(range(len(links)), key=lambda n: -supports[n])[:5]
    via = [{"id": links[n][0], "shared": sorted(links[n][2]), "support": round(supports[n], 4)} for n in strongest]
    score = graph_score(supports)
    return score, {"score": round(score, 4), "via": via}


def scenario_score(scene: str | None, item_scene: str | None, trigger: str | None, item_traits: set[str]) -> float:
    """Half for the same scene (task type), half for what the trigger prefers."""
    score = 0.5 if scene and item_scene == scene else 0.0
    return score + 0.5 if trigger and TRIGGER_PREFERS.get(trigger, set()) & item_traits else score


def scenario(scene: str | None, item_scene: str | None, trigger: str | None, item_traits: set[str]) -> Contribution:
    why: dict = {}
    if scene and item_scene == scene:
        why["scene"] = scene
    if trigger and TRIGGER_PREFERS.get(trigger, set()) & item_traits:
        why["trigger"] = trigger
    score = 0.5 * len(why)
    return score, {"score": score, **why}


def utility_score(success: int, failure: int) -> float:
    """Posterior mean of success when applied (Beta(1, 1) prior): 0.5 with no evidence,
    rising with successes, falling with failures. Recall counts play no part."""
    return (success + 1) / (success + failure + 2)


def utility(applied: int, success: int, failure: int) -> Contribution:
    score = utility_score(success, failure)
    return score, {"score": round(score, 4), "applied": applied, "success": success, "failure": failure}


def freshness_score(ts_us: int, now_us: int, volatility: str) -> float:
    half_life = HALF_LIFE_DAYS[volatility]
    return 1.0 if math.isinf(half_life) else 0.5 ** (max(0.0, (now_us - ts_us) / US_PER_DAY) / half_life)


def freshness(ts_us: int, now_us: int, volatility: str) -> Contribution:
    score = freshness_score(ts_us, now_us, volatility)
    age_days = max(0.0, (now_us - ts_us) / US_PER_DAY)
    return score, {"score": round(score, 4), "age_days": round(age_days, 2), "volatility": volatility}


def volatility_of(layer: str, scope: dict) -> str:
    """The item's volatility class: ``scope["volatility"]`` when given, else by its layer."""
    given = scope.get("volatility")
    return given if given in HALF_LIFE_DAYS else VOLATILITY_OF_LAYER[layer]


def contradiction_amount(status: str, contradictions: int) -> float:
    penalty = min(CONTRADICTION_CAP, CONTRADICTION_PENALTY * contradictions)
    return penalty + REVIEWING_PENALTY if status == "reviewing" else penalty


def contradiction_penalty(status: str, contradictions: int) -> Contribution:
    penalty = contradiction_amount(status, contradictions)
    why: dict = {"contradictions": contradictions} if contradictions else {}
    if status == "reviewing":
        why["status"] = status
    return penalty, {"penalty": round(penalty, 4), **why}


def scope_fit(item_scope: dict, recall_scope: dict) -> tuple[float, float]:
    """(penalty, scope match in [0, 1]). A coordinate both name differently is a mismatch;
    one only the recall names makes the item more general (match 0.8)."""
    if not recall_scope:
        return 0.0, 1.0
    conflicts = sum(1 for k, v in item_scope.items() if k in recall_scope and recall_scope[k] != v)
    if conflicts:
        return SCOPE_PENALTY * conflicts, 0.0
    return 0.0, (0.8 if any(k not in item_scope for k in recall_scope) else 1.0)


def scope_mismatch(item_scope: dict, recall_scope: dict) -> tuple[float, float, dict]:
    """(penalty, scope match, why): ``scope_fit`` and the coordinates that conflict."""
    penalty, match = scope_fit(item_scope, recall_scope)
    conflicts = {k: v for k, v in item_scope.items() if k in recall_scope and recall_scope[k] != v}
    why: dict = {"penalty": penalty, "match": match}
    if conflicts:
        why["conflicts"] = {k: f"{v} ≠ {recall_scope[k]}" for k, v in conflicts.items()}
    return penalty, match, why
