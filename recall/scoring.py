"""How channel scores combine into one relevance (MISSION C3).

The default is the seed's weighted sum,
``0.30·Lexical + 0.25·Semantic + 0.20·Graph + 0.10·Scenario + 0.10·HistoricalUtility +
0.05·Freshness − ContradictionPenalty − ScopeMismatchPenalty``, plus a small belief bias
(seed 002 §3: relevant beliefs re-weight retrieved items). Weights are configurable; rank
fusion (RRF, seed 001 §3.3) is the alternative, for channels whose scores are not on one scale.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

CHANNELS = ("lexical", "semantic", "graph", "scenario", "utility", "freshness")
RRF_K = 60


@dataclass(frozen=True)
class Weights:
    lexical: float = 0.30
    semantic: float = 0.25
    graph: float = 0.20
    scenario: float = 0.10
    utility: float = 0.10
    freshness: float = 0.05
    belief_bias: float = 0.10  # times the belief's confidence, for an item a briefed belief rests on or names
    method: str = "weighted"  # "weighted" | "rrf"

    def __post_init__(self):
        if self.method not in ("weighted", "rrf"):
            raise ValueError(f"recall weights: method must be 'weighted' or 'rrf', not {self.method!r}")
        negative = [k for k, v in asdict(self).items() if k != "method" and v < 0]
        if negative:
            raise ValueError(f"recall weights: {negative} must not be negative")


def weighted(scores: dict[str, float], weights: Weights) -> tuple[float, dict[str, float]]:
    """Σ weight × score over the channels; returns the sum and each contribution."""
    parts = {ch: getattr(weights, ch) * scores.get(ch, 0.0) for ch in CHANNELS}
    return sum(parts.values()), parts


def competition_ranks(scores: list[float]) -> dict[int, int]:
    """Position → rank (1 = best) among the positive scores; equal scores share a rank
    (1, 2, 2, 4). A channel that scores every item alike ranks none: it carries no order."""
    if len(set(scores)) <= 1:
        return {}
    order = sorted((n for n, v in enumerate(scores) if v > 0), key=lambda n: -scores[n])
    ranks: dict[int, int] = {}
    for place, n in enumerate(order, 1):
        same = place > 1 and scores[n] == scores[order[place - 2]]
        ranks[n] = ranks[order[place - 2]] if same else place
    return ranks


def rrf(ranks: dict[str, dict[int, int]], weights: Weights, k: int = RRF_K) -> dict[int, dict[str, float]]:
    """Reciprocal-rank fusion: per channel, item → rank (1 = best); each item gets
    ``weight / (k + rank)`` from each channel that ranked it."""
    parts: dict[int, dict[str, float]] = {}
    for channel, ranked in ranks.items():
        w = getattr(weights, channel)
        for item, rank in ranked.items():
            parts.setdefault(item, {})[channel] = w / (k + rank)
    return parts
