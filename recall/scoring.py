"""How channel scores combine into one relevance (design.md §C3), and the named presets.

* ``fused`` (the default) — a weighted sum over **per-query normalised** search channels,
  scaled by the item's track record (``fused``, below):
  lexical is BM25 relative to this recall's best lexical hit, semantic is the (late
  interaction) cosine min-max scaled over this recall's candidates, so the two are on one
  scale whatever the query's length or language. The weights depend on the query's form
  (a question or a dialogue, ``recall.dialogue``) and were fitted on the tuning halves of
  the quality harness (``bench/quality.py``; numbers in docs/recall-quality.md): on a dialogue
  the memory is associative (a feeling, a kind of event) and lexical is only a cue; on a
  question the words carry it.
* ``seed`` — the seed's weighted sum of raw channel scores, ``0.30·Lexical + 0.25·Semantic +
  0.20·Graph + 0.10·Scenario + 0.10·HistoricalUtility + 0.05·Freshness`` (design.md §seed-001-3.3).
* ``rrf`` — reciprocal-rank fusion of the channels' rankings (design.md §seed-001-3.3).

Every method subtracts the contradiction and scope penalties and adds a small belief bias
(design.md §seed-002-3: relevant beliefs re-weight retrieved items). ``HINDBRAIN_RECALL_PRESET``
picks the preset, ``HINDBRAIN_RECALL_WEIGHTS`` (JSON) overrides channel weights of both forms.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

CHANNELS = ("lexical", "semantic", "graph", "scenario", "utility", "freshness")
METHODS = ("weighted", "rrf", "fused")
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
    method: str = "weighted"  # "weighted" (raw channel scores) | "rrf" | "fused" (per-query normalised)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"recall weights: method must be one of {list(METHODS)}, not {self.method!r}")
        negative = [k for k, v in asdict(self).items() if k != "method" and v < 0]
        if negative:
            raise ValueError(f"recall weights: {negative} must not be negative")


@dataclass(frozen=True)
class Fusion:
    """The weights at both ends of the query's associative share (``recall.dialogue``): a
    short question (or a situation), ``text``, and a dialogue or long description, ``dialogue``;
    in between, each channel's weight is interpolated."""

    name: str
    text: Weights
    dialogue: Weights
    # An indirect question's (``recall.indirect``: an inference, a person only described) lexical
    # weight, as a share of its form's: its words find decoys, not evidence. 1: no change.
    indirect_lexical: float = 1.0

    def for_share(self, associative: float) -> Weights:
        if associative <= 0.0 or self.text == self.dialogue:
            return self.text
        if associative >= 1.0:
            return self.dialogue
        mixed = {k: (1 - associative) * getattr(self.text, k) + associative * getattr(self.dialogue, k)
                 for k in (*CHANNELS, "belief_bias")}
        return replace(self.text, **mixed)

    def for_query(self, associative: float, indirect: bool = False) -> Weights:
        """``for_share``, with an indirect question's lexical weight scaled by ``indirect_lexical``."""
        w = self.for_share(associative)
        return replace(w, lexical=w.lexical * self.indirect_lexical) if indirect and self.indirect_lexical != 1.0 \
            else w

    def overridden(self, **weights: float) -> Fusion:
        """The same preset with some channel weights replaced in both forms."""
        if not weights:
            return self
        return Fusion(self.name + "+custom", replace(self.text, **weights), replace(self.dialogue, **weights),
                      self.indirect_lexical)


SEED = Weights()
PRESETS = {
    # Fitted on the tuning halves (bench/quality.py --fit); the question end's lexical 0.7 → 0.35 with the
    # asking penalty (recall.asking), chosen on every conversational tuning half; see docs/recall-quality.md.
    "fused": Fusion("fused",
                    text=Weights(lexical=0.35, semantic=0.50, graph=0.05, scenario=0.05, utility=0.50, freshness=0.0,
                                 method="fused"),
                    dialogue=Weights(lexical=0.10, semantic=1.20, graph=0.0, scenario=0.05, utility=0.50,
                                     freshness=0.0, method="fused"),
                    # chosen on the tuning halves of every question set (0 / 0.1 / 0.2 / 0.3 / 0.5 / 1):
                    # docs/recall-quality.md, round two, third pass
                    indirect_lexical=0.0),
    "seed": Fusion("seed", SEED, SEED),
    "rrf": Fusion("rrf", replace(SEED, method="rrf"), replace(SEED, method="rrf")),
}
DEFAULT_PRESET = "fused"


def preset(name: str) -> Fusion:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"recall preset must be one of {sorted(PRESETS)}, not {name!r}") from None


def weighted(scores: dict[str, float], weights: Weights) -> tuple[float, dict[str, float]]:
    """Σ weight × score over the channels; returns the sum and each contribution."""
    parts = {ch: getattr(weights, ch) * scores.get(ch, 0.0) for ch in CHANNELS}
    return sum(parts.values()), parts


def fused(scores: dict[str, float], weights: Weights) -> tuple[float, dict[str, float]]:
    """The ``fused`` combination: the weighted sum of the relevance channels, scaled by the
    item's track record, ``1 + w_utility × (2·utility − 1)`` (utility is the Beta(1, 1)
    posterior mean of success when applied: 1.0 with no evidence, above with successes, below
    with failures). Outcome evidence is about whether the item *works*, not whether it is
    *about* the query, so it scales relevance rather than adding to it: a rule that failed
    twice since it was learned falls behind the rule that replaced it, and a verified rule
    rises over a raw event equally on topic. Returns the total and each contribution (they
    sum to the total; utility's is what its factor added or took)."""
    parts = {ch: getattr(weights, ch) * scores.get(ch, 0.0) for ch in CHANNELS if ch != "utility"}
    relevance = sum(parts.values())
    factor = 1.0 + weights.utility * (2.0 * scores.get("utility", 0.5) - 1.0)
    contributions = {ch: v * factor for ch, v in parts.items()}
    contributions["utility"] = relevance * (factor - 1.0)
    return relevance * factor, contributions


def combined(scores: dict[str, float], weights: Weights) -> float:
    """``fused``'s or ``weighted``'s total without the contributions: the hot path, run for
    every candidate (the explained ones are checked against ``fused`` / ``weighted``)."""
    w = weights
    relevance = (w.lexical * scores["lexical"] + w.semantic * scores["semantic"] + w.graph * scores["graph"]
                 + w.scenario * scores["scenario"] + w.freshness * scores["freshness"])
    if w.method == "fused":
        return relevance * (1.0 + w.utility * (2.0 * scores["utility"] - 1.0))
    return relevance + w.utility * scores["utility"]


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
