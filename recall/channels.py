"""The recall channels (MISSION C3): each a pure function from facts about one candidate to a
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
* penalties — contradiction (reviewing or contradicted items) and scope mismatch.
"""

from __future__ import annotations

import math

Contribution = tuple[float, dict]

EXACT_BOOST = 0.5  # a query's exact cues all matched add this much to the lexical score (capped at 1)
GRAPH_STRENGTH = {1: 0.5, 2: 1.0}  # sharing one kind of link (entity or action) vs both: a chain
HALF_LIFE_DAYS = {"high": 7.0, "medium": 90.0, "low": 365.0, "red_line": math.inf}
VOLATILITY_OF_LAYER = {"episodic": "high", "experience": "medium", "knowledge": "low"}
REVIEWING_PENALTY = 0.15
CONTRADICTION_PENALTY, CONTRADICTION_CAP = 0.10, 0.30
SCOPE_PENALTY = 0.20  # per scope coordinate the item and the recall name differently
# Which items a trigger prefers (MISSION C1, C7): an anomaly wants rules and past anomalies,
# a reference to the past wants the timeline, a new task wants knowledge and experience.
TRIGGER_PREFERS = {
    "anomaly": {"fragment", "anomaly"},
    "no_progress": {"fragment"},
    "no_data": {"knowledge"},
    "unresolved_entity": {"knowledge", "event"},
    "user_reference": {"message", "event"},
    "task_start": {"knowledge", "experience"},
}
_US_PER_DAY = 86_400 * 1_000_000


def lexical(bm25: float, query_information: float, matched_exact: list[str], query_exact: int) -> Contribution:
    """``bm25`` relative to ``query_information`` (the sum of the query terms' idf, the score
    of a document holding each term once), plus the exact-cue boost."""
    coverage = min(1.0, bm25 / query_information) if query_information > 0 else 0.0
    boost = EXACT_BOOST * len(matched_exact) / query_exact if query_exact else 0.0
    score = min(1.0, coverage + boost)
    why = {"score": round(score, 4), "bm25": round(bm25, 4), "coverage": round(coverage, 4)}
    if matched_exact:
        why["exact_cues"] = sorted(matched_exact)
    return score, why


def semantic(cosine: float | None, model: str) -> Contribution:
    if cosine is None:
        return 0.0, {"score": 0.0, "model": model, "note": "not among the nearest neighbours"}
    score = max(0.0, min(1.0, cosine))
    return score, {"score": round(score, 4), "cosine": round(cosine, 4), "model": model}


def graph(links: list[tuple[str, float, list[str]]]) -> Contribution:
    """``links``: (other hit's id, its base score, cue terms shared with it). Each link adds
    support ``base × strength`` (noisy-or), stronger when entity *and* action are shared."""
    miss, via = 1.0, []
    for other, base, shared in links:
        kinds = {term.split(":", 1)[0] for term in shared}
        support = base * GRAPH_STRENGTH[min(2, len(kinds))]
        miss *= 1.0 - min(1.0, support)
        via.append({"id": other, "shared": sorted(shared), "support": round(support, 4)})
    score = 1.0 - miss
    via.sort(key=lambda v: -v["support"])
    return score, {"score": round(score, 4), "via": via[:5]}


def scenario(scene: str | None, item_scene: str | None, trigger: str | None, item_traits: set[str]) -> Contribution:
    """Half for the same scene (task type), half for what the trigger prefers."""
    score, why = 0.0, {}
    if scene and item_scene == scene:
        score += 0.5
        why["scene"] = scene
    if trigger and TRIGGER_PREFERS.get(trigger, set()) & item_traits:
        score += 0.5
        why["trigger"] = trigger
    return score, {"score": score, **why}


def utility(applied: int, success: int, failure: int) -> Contribution:
    """Posterior mean of success when applied (Beta(1, 1) prior): 0.5 with no evidence,
    rising with successes, falling with failures. Recall counts play no part."""
    score = (success + 1) / (success + failure + 2)
    return score, {"score": round(score, 4), "applied": applied, "success": success, "failure": failure}


def freshness(ts_us: int, now_us: int, volatility: str) -> Contribution:
    half_life = HALF_LIFE_DAYS[volatility]
    age_days = max(0.0, (now_us - ts_us) / _US_PER_DAY)
    score = 1.0 if math.isinf(half_life) else 0.5 ** (age_days / half_life)
    return score, {"score": round(score, 4), "age_days": round(age_days, 2), "volatility": volatility}


def volatility_of(layer: str, scope: dict) -> str:
    """The item's volatility class: ``scope["volatility"]`` when given, else by its layer."""
    given = scope.get("volatility")
    return given if given in HALF_LIFE_DAYS else VOLATILITY_OF_LAYER[layer]


def contradiction_penalty(status: str, contradictions: int) -> Contribution:
    penalty = min(CONTRADICTION_CAP, CONTRADICTION_PENALTY * contradictions)
    why: dict = {"contradictions": contradictions} if contradictions else {}
    if status == "reviewing":
        penalty += REVIEWING_PENALTY
        why["status"] = status
    return penalty, {"penalty": round(penalty, 4), **why}


def scope_mismatch(item_scope: dict, recall_scope: dict) -> tuple[float, float, dict]:
    """(penalty, scope match in [0, 1], why). A coordinate both name differently is a
    mismatch; one only the recall names makes the item more general (match 0.8)."""
    conflicts = {k: v for k, v in item_scope.items() if k in recall_scope and recall_scope[k] != v}
    general = [k for k in recall_scope if k not in item_scope]
    penalty = SCOPE_PENALTY * len(conflicts)
    match = 0.0 if conflicts else (0.8 if general else 1.0)
    why: dict = {"penalty": penalty, "match": match}
    if conflicts:
        why["conflicts"] = {k: f"{v} ≠ {recall_scope[k]}" for k, v in conflicts.items()}
    return penalty, match, why
