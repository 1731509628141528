"""Fusion learned, not hand-set (design.md §issue-30.3): a small tree ensemble re-orders the
fused pool by features of each candidate *relative to its query's pool*.

The per-form weights (``recall.scoring``) add each channel's normalised score; they cannot say
"a lexical hit matters when few candidates have one" or "an expanded turn beats a weak direct
hit when the question is short". A gradient-boosted ranker (scikit-learn's
HistGradientBoostingClassifier, depth 3, fitted by ``bench/fusion_rank.py`` on the tuning halves
of every set of ``bench/quality.py`` together) reads, per candidate: each channel's normalised
score, the fused score and its share of the best, the query's associative share, item kind,
age rank, the expansion (kind, score), its rank in each channel and in the fused order, its
cosine and the gap to the pool's best, the share of the pool the lexical channel reached, the
query's length and form flags. Its trees are data (``fusion_trees.json``, written by the bench
script) evaluated here with numpy: no scikit-learn on the recall path.

Trees are fitted per embedder (``MODEL_FILES``): the ``cosine`` and ``cosine_gap`` features read
the embedder's own cosine scale, and the quality mode's ensemble (``use+e5``) spreads a pool's
cosines otherwise than USE, so USE's trees cost it MADial's ≥ 66 (docs/recall-quality.md, round
nine). An embedder without its own file (``e5`` alone, ``static``), or whose file is missing,
gets USE's trees, logged once and named in each item's ``why["learned"]["trees"]``.

A fusion file may hold logistic weights instead (``Linear``, the same features, ``"kind":
"logistic"``): ``bench/fusion_dialogue.py`` writes one when its cross-validation on MADial's tuning
dialogues picks it. The shipped dialogue file (``MIXED_NAME``) holds trees: on the pools of the
dialogue's e5 cue at 1 : 3 the six-set refit read 72.8 out of fold against the logistic's 72.5
(docs/recall-quality.md, round nineteen, the merge).

The ranker only *orders*: the pool's fused scores are handed out again in the new order, so the
gate's relevance ratios and budget see the same values as before (``rerank``). ``why["learned"]``
says where the item stood before, its probability of being evidence, and the fused score it had.
Pure functions over the pool; each tree file is read once.

A question's order is then hedged (``hedge``): the trees' order and the semantic channel's own
("semantic alone", ``SEMANTIC_ALONE``) in reciprocal-rank fusion. The two are complementary — the
trees far ahead at the first place, the semantic channel ahead at the fifth, where the trees give
places to turns matching only a question's frame words — and the fusion keeps the first and takes
the second's best after it (docs/recall-quality.md, round twenty-seven).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from hindbrain.recall import _scan
from hindbrain.recall.e5_dialogue import MIXED_NAME
from hindbrain.recall.embed import USE_E5_NAME, UseEmbedder
from hindbrain.recall.expand import VIA_KINDS
from hindbrain.recall.scoring import Weights

log = logging.getLogger(__name__)

DEFAULT_EMBEDDER = UseEmbedder.name  # a tree file that names no embedder was fitted on USE's pools
# each embedder's trees, fitted on pools it scored (bench/fusion_rank.py --out)
MODEL_FILES = {DEFAULT_EMBEDDER: "fusion_trees.json", USE_E5_NAME: "fusion_trees_use_e5.json",
               # a dialogue's pool in the default: USE's cosines mixed with e5's (recall.e5_dialogue)
               MIXED_NAME: "fusion_trees_use_e5_dialogue.json"}
MODEL_DIR = Path(__file__).parent
MODEL_PATH = MODEL_DIR / MODEL_FILES[DEFAULT_EMBEDDER]
CHANNEL_FEATURES = ("lexical", "semantic", "graph", "scenario", "freshness")
FEATURES = (*CHANNEL_FEATURES, "fused", "fused_share", "associative", "message", "age_rank",
            *(f"via_{k}" for k in VIA_KINDS), "expansion_score",
            "lexical_rank", "semantic_rank", "fused_rank", "cosine", "cosine_gap", "lexical_reach",
            "nterms", "indirect", "described", "dialogue")
# ``_scan.pool_features`` writes the columns in this layout: refuse to import if it changes under it
if len(FEATURES) != 21 + len(VIA_KINDS) or CHANNEL_FEATURES[:2] != ("lexical", "semantic"):
    raise ImportError(f"recall.learned: _scan.pool_features writes 21 + len(VIA_KINDS) columns, FEATURES is {FEATURES}")


# The semantic channel's own order ("semantic alone": the fused method, every other weight 0; the
# expansion and the information factor still apply), which ``hedge`` fuses with the trees' order.
SEMANTIC_ALONE = Weights(lexical=0.0, semantic=1.0, graph=0.0, scenario=0.0, utility=0.0, freshness=0.0,
                         belief_bias=0.0, method="fused")
# Reciprocal-rank fusion of the two orders: a place p (0 the first) adds 1 / (HEDGE_K + 1 + p) from the
# trees' order and HEDGE_WEIGHT / (HEDGE_K + 1 + p) from the semantic one. Chosen on the tuning halves of
# the six text sets (docs/recall-quality.md, round twenty-seven): k 1, weight 0.7 in a plateau of
# k 0.5-2, weight 0.7-0.75; a larger k or weight costs hard-zh's R@1 (the trees' first place is the
# default's lead there), a smaller one leaves conv-en below the semantic channel at R@5.
HEDGE_K = 1.0
HEDGE_WEIGHT = 0.7
# Where the two orders disagree on the top — fewer than HEDGE_AGREE of their best HEDGE_TOP are the same
# items — the semantic order votes as much as the trees' (HEDGE_WEIGHT_APART): the trees' lead is their
# first place among items the semantic channel also ranks high, and when they are apart the trees' places
# 2-5 go mostly to turns matching the question's words, the evidence of a question whose evidence shares
# none (hard3's categories). Where they agree, the trees order the shared top as before (their R@1).
# Chosen on the tuning halves of eight text sets, out of fold by set (docs/recall-quality.md, round thirty).
HEDGE_TOP = 5
HEDGE_AGREE = 4
HEDGE_WEIGHT_APART = 1.0
# Where the two orders are apart (HEDGE_WEIGHT_APART), the trees' places after their first count only for an item
# the semantic order ranks among its first HEDGE_REACH, or does not hold at all (the trees' own finds: expansions,
# items outside the semantic pool). Over hard3-zh's gold that semantic alone ranks in its top 5 and the default
# placed 6th-12th, 22 of the 23 items holding the places above it were items both orders hold; 4 of them the trees
# alone put there (the semantic order's 10th-16th) — the part this rule takes away; the other 18 the semantic order
# ranks in its first 10 too (no rule on the two orders separates those).
# 12 on the tuning halves of eight question sets through Brain.recall, R@5 in questions against None: hard3-zh +0.5,
# hard3-en +0.67, conv-en +1.5, conv-zh -0.5, hard-zh -0.5, the rest 0; at 10 conv-zh lost 1.17 (past the
# one-question rule) (docs/recall-quality.md, round thirty-three). None: every place of the trees' counts (rounds
# 27-32). A dialogue is not hedged.
HEDGE_REACH: int | None = 12
# An item the trees never pooled (the semantic pool's alone: outside the first scoring's pool, so the trees
# never saw it) has no place in their order, and that is no vote against it: under ``HEDGE_UNPOOLED_WHOLE`` it
# counts at its semantic place with the trees' weight too — (1 + w) / (HEDGE_K + 1 + place), as if both orders
# put it there — instead of w alone (``False``: the rule of rounds twenty-seven to thirty-one). Items both orders
# hold keep w, so the trees' first place among them is untouched. hard3-zh's gold that semantic alone ranks in
# its top 5 and the default lost was all such items. Only at the semantic order's first HEDGE_UNPOOLED_TOP places
# (its top HEDGE_TOP, the places the two orders' agreement is read on): at every place hard3-en lost half a
# question and hard3-zh gained half less. Tuning halves, R@5 in questions against the old rule: hard3-zh +1.5,
# hard3-en +0.5, hard2-en +0.5, conv-en +1.0, conv-zh −1.2, the rest 0; at the first 3 places conv-en's multi-hop
# lost two questions' whole gold. Held-out read against it (conv-zh R@1 −2.6, R@5 −2.5 questions; hard3-zh +0.5).
# Off by default: conv-zh's −1.2 questions on tuning is past the one-question rule (a preset kept for measuring:
# ``bench/never_below.py --unpooled``), and the held-out read agreed (docs/recall-quality.md, round thirty-one).
HEDGE_UNPOOLED_WHOLE = False
HEDGE_UNPOOLED_TOP = HEDGE_TOP
# The semantic channel's first POOL_FROM_SEMANTIC items ("semantic alone"'s order, the hedge's second) join the
# trees' pool before they rank it, scored with their real features (the first scoring's: fused score and ranks
# past the pool's 32nd), so the trees can place what the hedge could only weigh blind: hard3-zh's gold that
# semantic alone ranks in its top 5 and the default lost was all outside the pool of 32 (round thirty-one), and
# widening the whole pool to 48 lost six of eight sets. 0 is the pool of rounds twenty-seven to thirty-one
# (docs/recall-quality.md, round thirty-two). Off: on the tuning halves of eight text sets no K of 3, 5, 8 moved one
# question at R@5 — the trees place what it brings in past their 5th (its fused rank is the pool's last) — kept as
# a preset for measuring (``bench/never_below.py --feed``) and for trees fitted on pools that hold such items.
# A question's only: a dialogue is not hedged, and a dialogue's semantic first 8 were always in its pool of 32.
POOL_FROM_SEMANTIC = 0
# A pair or chain the expansion placed among the fused order's first HEDGE_TOP (``expand.pair_placed``: turns that
# answer the question together, each scored into its slot) stands no lower than that slot after the trees and the
# hedge, as "semantic alone" keeps it (its order is the fused one). On hard3's tuning halves the hedge, not the
# trees, moved such turns out: a chain turn the semantic order never pooled gets the trees' part alone, one past
# its HEDGE_REACHth loses that part too (hard3-zh-00-q11: the trees' 1st-3rd, hedged 2nd, 6th and 20th). Tuning
# halves through Brain.recall, R@5 in questions against off: hard3-zh +1.17, hard3-en +1.33, conv-en and conv-zh
# +0.5, hard-en, hard-zh, hard2-en, hard2-zh 0; multi-hop all gold never lower (docs/recall-quality.md, round
# thirty-three, second part). Off (the lead's merge): read once on the held-out halves it lost hard3-zh and hard3-en a
# question each and won conv-zh two (net 0), and left hard3-en below "semantic alone" (−0.9, −0.2 without it) — a
# change one question either way held-out that widens a never-below gap is not shipped (round twenty-nine's merge).
# A preset for measuring (``bench/never_below.py --placed``); False: the order of the trees and the hedge alone.
KEEP_PLACED = False


def enabled() -> bool:
    """``HINDBRAIN_LEARNED_FUSION=0`` turns the re-ordering off (to measure it, or if the trees
    misbehave on a tenant's data): the pool stays in fused order."""
    return os.environ.get("HINDBRAIN_LEARNED_FUSION", "1") != "0" and MODEL_PATH.exists()


def features(pool, query) -> np.ndarray:
    """One row per candidate of ``pool`` (``recall.engine.Scored``, fused order), ``FEATURES``: the
    candidates' facts, their ranks (0 the pool's best, 1 its worst, ties by position) and the
    pool's columns in one C pass (``_scan.pool_features``; its numpy columns, ~0.12 ms a pool of
    32, are the oracle in tests/recall/test_learned.py)."""
    n = len(pool)
    x = np.empty((n, len(FEATURES)), dtype=np.float64)
    if not n:
        return x
    flags = (float(np.log1p(len(query.terms))) if query.terms else 0.0, float(query.indirect),
             float(query.described), float(query.views is not None and query.views.form == "dialogue"))
    _scan.pool_features(list(pool), CHANNEL_FEATURES, VIA_KINDS, float(query.associative), flags, x)
    return x


@dataclass(frozen=True)
class Trees:
    """Gradient-boosted trees flattened into one node table: a split sends a row to ``left`` when
    its feature is ≤ the threshold, else to ``right`` (absolute node numbers); a leaf points to
    itself, so ``depth`` steps from every tree's root reach every row's leaf in all trees at once
    (~0.1 ms for 150 trees × 32 candidates, where indexing a tree × node grid took ~1 ms).
    Features are never NaN here (``features``), so scikit-learn's missing-value side is not kept."""

    feature: np.ndarray  # per node
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray  # each tree's first node
    baseline: float
    depth: int
    features: tuple[str, ...]
    embedder: str = DEFAULT_EMBEDDER  # whose pools they were fitted on

    def margin(self, x: np.ndarray) -> np.ndarray:
        """The ensemble's log-odds for each row of ``x`` (rows × ``features``): the walk in C
        (``_scan.tree_sums``: 0.03 ms for a pool of 32 where numpy's passes over trees × rows
        took 0.10, thread CPU, load ~12), bit for bit ``py_margin`` (tests/recall/test_learned.py)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ValueError(f"fusion trees: rows of {len(self.features)} features expected, got shape {x.shape}")
        sums = np.empty(len(x), dtype=np.float64)
        _scan.tree_sums(x, x.shape[1], self.feature, self.threshold, self.left, self.right, self.value, self.roots,
                        self.depth, sums)
        return self.baseline + sums

    def py_margin(self, x: np.ndarray) -> np.ndarray:
        """``margin`` in numpy, every row through every tree at once: the definition."""
        rows = len(x)
        flat = np.ascontiguousarray(x, dtype=np.float64).ravel()
        offset = np.arange(rows) * x.shape[1]
        node = np.repeat(self.roots, rows)  # tree-major: tree t's rows at t*rows …
        offset = np.tile(offset, len(self.roots))
        for _ in range(self.depth):
            go_left = flat.take(self.feature.take(node) + offset) <= self.threshold.take(node)
            node = np.where(go_left, self.left.take(node), self.right.take(node))
        return self.baseline + self.value.take(node).reshape(len(self.roots), rows).sum(axis=0)

    @classmethod
    def from_json(cls, data: dict) -> Trees:
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"fusion trees: fitted on features {data['features']}, the code computes {FEATURES}")
        feature, threshold, left, right, value, roots = [], [], [], [], [], []
        for t in data["trees"]:
            base = len(feature)
            roots.append(base)
            for n, leaf in enumerate(t["leaf"]):
                feature.append(0 if leaf else t["feature"][n])
                threshold.append(0.0 if leaf else t["threshold"][n])
                left.append(base + n if leaf else base + t["left"][n])
                right.append(base + n if leaf else base + t["right"][n])
                value.append(t["value"][n] if leaf else 0.0)
        return cls(np.array(feature, dtype=np.int64), np.array(threshold, dtype=np.float64),
                   np.array(left, dtype=np.int64), np.array(right, dtype=np.int64), np.array(value, dtype=np.float64),
                   np.array(roots, dtype=np.int64), float(data["baseline"]), int(data["depth"]),
                   tuple(data["features"]), str(data.get("embedder", DEFAULT_EMBEDDER)))


@dataclass(frozen=True)
class Linear:
    """A logistic fusion: log-odds ``intercept + x · weights`` (the fit's standardisation folded into
    ``weights``), what ``bench/fusion_dialogue.py`` exports when its cross-validation on MADial's
    tuning dialogues picks it over trees (trees fitted on those 160 dialogues alone learn the
    folds they saw; docs/recall-quality.md round nineteen)."""

    weights: np.ndarray  # per feature
    intercept: float
    features: tuple[str, ...]
    embedder: str = DEFAULT_EMBEDDER

    def margin(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ValueError(f"fusion weights: rows of {len(self.features)} features expected, got shape {x.shape}")
        return self.intercept + x @ self.weights

    @classmethod
    def from_json(cls, data: dict) -> Linear:
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"fusion weights: fitted on features {data['features']}, the code computes {FEATURES}")
        weights = np.array(data["weights"], dtype=np.float64)
        if weights.shape != (len(FEATURES),) or not np.isfinite(weights).all():
            raise ValueError(f"fusion weights: {len(FEATURES)} finite weights expected, got {data['weights']}")
        return cls(weights, float(data["intercept"]), tuple(data["features"]), str(data["embedder"]))


def model_from_json(data: dict) -> Trees | Linear:
    """A fusion file's model: ``"kind": "logistic"`` a ``Linear``, otherwise (every file before
    round nineteen) ``Trees``."""
    return Linear.from_json(data) if data.get("kind") == "logistic" else Trees.from_json(data)


def model_path(embedder: str) -> Path:
    """The tree file fitted on ``embedder``'s pools, or USE's when it has none (or it is missing)."""
    own = MODEL_FILES.get(embedder)
    return MODEL_DIR / own if own is not None and (MODEL_DIR / own).exists() else MODEL_PATH


@lru_cache(maxsize=4)
def trees(embedder: str = DEFAULT_EMBEDDER) -> Trees | Linear:
    """The trees (or ``Linear`` weights, for a file of that kind) fitted on ``embedder``'s pools (read
    once per embedder). A file that says it was fitted
    on another embedder than the one it is filed under is refused, not used on the wrong scale."""
    path = model_path(embedder)
    model = model_from_json(json.loads(path.read_text("utf-8")))
    filed_for = next((name for name, file in MODEL_FILES.items() if MODEL_DIR / file == path), None)
    if filed_for is not None and model.embedder != filed_for:
        raise ValueError(f"fusion trees: {path.name} was fitted on the pools of {model.embedder!r}, "
                         f"it is filed for {filed_for!r}")
    if model.embedder != embedder:
        log.warning("fusion trees: none fitted on the pools of %r (%s); ordering with those of %r",
                    embedder, MODEL_FILES.get(embedder, "no file named for it"), model.embedder)
    return model


def rerank(pool: list, query, utility_weight: float = 0.0, embedder: str = DEFAULT_EMBEDDER,
           prior: list[float] | None = None) -> list:
    """``pool`` (fused order) re-ordered by the trees fitted on ``embedder``'s pools (``trees``):
    the probability of evidence × the item's track-record factor; the fused scores, best first,
    handed out again in the new order (the gate's ratios see the same values), each move
    explained (``trees``: whose trees, when they are another embedder's).

    The track record (``scoring.fused``: ``1 + w_utility × (2·utility − 1)``) multiplies the
    probability as it multiplies fused relevance: the tuning data hold no outcomes, so the trees
    never learned it, and without it a rule that worked would lose the lead outcomes gave it.
    ``prior`` (one factor a candidate, or None) multiplies it too, for what the trees were not
    fitted on (an inference question's information factor, ``recall.informative``)."""
    if len(pool) < 2:
        return pool
    model = trees(embedder)
    probability = 1.0 / (1.0 + np.exp(-model.margin(features(pool, query))))
    factor = np.array([1.0 + utility_weight * (2.0 * s.channel_scores.get("utility", 0.5) - 1.0) for s in pool])
    order = np.argsort(-(probability * factor * (1.0 if prior is None else np.asarray(prior, dtype=np.float64))),
                       kind="stable")
    scores = sorted((s.score for s in pool), reverse=True)
    probabilities, factors = probability.tolist(), factor.tolist()  # the same floats, no numpy scalar a read
    out = []
    for place, i in enumerate(order.tolist()):
        s = pool[i]
        s.why["learned"] = {"probability": round(probabilities[i], 4), "place": place, "fused_place": i,
                            "fused_score": round(s.score, 6)}
        if factors[i] != 1.0:
            s.why["learned"]["track_record"] = round(factors[i], 4)
        if model.embedder != embedder:
            s.why["learned"]["trees"] = model.embedder
        s.score = scores[place]
        s.why["score"] = round(s.score, 6)
        out.append(s)
    return out


def hedges(query) -> bool:
    """Whether the trees' order is hedged with the semantic channel's own (``hedge``): for a question
    (text form), unless ``HINDBRAIN_HEDGE=0``. Not a dialogue: its semantic channel is e5's mix and
    "semantic alone" is below the trees on MADial's tuning halves (docs/recall-quality.md, round
    twenty-seven)."""
    return query.form != "dialogue" and os.environ.get("HINDBRAIN_HEDGE", "1") != "0"


def hedge_places(first: list[int], second: list[int], k: float = HEDGE_K, weight: float = HEDGE_WEIGHT,
                 unpooled_weight: float | None = None, unpooled_top: int = 0,
                 reach: int | None = None) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion of two orders of document numbers: (number, fused value), best first;
    a tie keeps ``first``'s order, then ``second``'s. A number in ``first`` only gets that order's part; one
    in ``second`` only gets ``unpooled_weight`` / (k + 1 + place) at its places before ``unpooled_top``
    (``weight``'s after them, or when ``unpooled_weight`` is None). ``reach``: ``first``'s places after its
    first count only for numbers ``second`` holds before ``reach`` or not at all (None: every place counts)."""
    value = {no: 1.0 / (k + 1.0 + place) for place, no in enumerate(first)}
    if reach is not None:
        beyond = {no for no in second[reach:] if no in value and no != first[0]}
        value.update(dict.fromkeys(beyond, 0.0))
    alone = weight if unpooled_weight is None else unpooled_weight
    for place, no in enumerate(second):
        held = value.get(no)  # one look-up: None is an item the first order never held
        if held is not None:
            value[no] = held + weight / (k + 1.0 + place)
        else:
            value[no] = (alone if place < unpooled_top else weight) / (k + 1.0 + place)
    # a stable sort: ties keep ``value``'s insertion order, which is first's order, then second's
    return sorted(value.items(), key=lambda nv: -nv[1])


def fed_pool(pool: list, scored: list, semantic_nos: list[int], top: int) -> tuple[list, dict[int, int]]:
    """``pool`` (the first scoring's best, fused order) and, after it in the semantic order, the items of
    ``scored`` (that scoring's every candidate) among ``semantic_nos``' first ``top`` that ``pool`` lacks: the
    pool the trees rank, and each brought-in item's semantic place (0 the first). An item the first scoring
    never scored (the semantic scoring's graph reached it alone) has no features of its own there: not fed."""
    if top <= 0:  # the default (off): no map of every candidate built a recall for nothing
        return pool, {}
    held = {s.no for s in pool}
    by_no = {s.no: s for s in scored}
    places = {no: place for place, no in enumerate(semantic_nos[:top]) if no not in held and no in by_no}
    return [*pool, *(by_no[no] for no in places)], places


def hedge_weight(first: list[int], second: list[int]) -> float:
    """The semantic order's weight in ``hedge_places`` for two orders of document numbers: ``HEDGE_WEIGHT``
    where their best ``HEDGE_TOP`` share at least ``HEDGE_AGREE`` items, ``HEDGE_WEIGHT_APART`` where not."""
    shared = len(set(first[:HEDGE_TOP]).intersection(second[:HEDGE_TOP]))
    return HEDGE_WEIGHT if shared >= HEDGE_AGREE else HEDGE_WEIGHT_APART


def hedge_reach(weight: float) -> int | None:
    """How far into the semantic order the trees' places after their first count (``hedge_places``' ``reach``) at
    the semantic weight ``weight``: ``HEDGE_REACH`` where the orders are apart (``HEDGE_WEIGHT_APART``), else all."""
    return HEDGE_REACH if weight == HEDGE_WEIGHT_APART and weight != HEDGE_WEIGHT else None


def unpooled_weight(weight: float, whole: bool) -> float:
    """The weight of a place in the semantic order (one of its first ``HEDGE_UNPOOLED_TOP``) for an item the
    trees never pooled: 1 (the trees' own) + ``weight`` when ``whole`` (``HEDGE_UNPOOLED_WHOLE``), else
    ``weight`` as any semantic place."""
    return 1.0 + weight if whole else weight


def hedge(pool: list, semantic_pool: list) -> list:
    """``pool`` (the trees' order) fused with ``semantic_pool`` (the same recall scored by
    ``SEMANTIC_ALONE``) by ``hedge_places``, the semantic order weighed by ``hedge_weight``: the default
    leads at the first place (R@1 three to four times the semantic channel's on the hard sets) while the
    semantic channel's best fill the places after it that the trees give to frame-word matches
    (docs/recall-quality.md, round twenty-seven).
    As many items as ``pool``; an item of ``semantic_pool`` alone comes in with its own channel scores.
    ``pool``'s scores, best first, are handed out again in the new order (the gate sees the same
    values, as ``rerank``); ``why["hedge"]`` gives each item's place in both orders, the weight its semantic
    place counted at (``unpooled_weight``'s for an item the trees never pooled, at the semantic order's first
    ``HEDGE_UNPOOLED_TOP`` places) and what moved it — also when its place in the trees' order did not count
    (``hedge_reach``: the orders apart, the item past the semantic order's ``HEDGE_REACH``th)."""
    if len(pool) < 2 or not semantic_pool:
        return pool
    by_no = {s.no: s for s in semantic_pool} | {s.no: s for s in pool}
    first = {s.no: i for i, s in enumerate(pool)}
    second = {s.no: i for i, s in enumerate(semantic_pool)}
    first_nos, second_nos = [s.no for s in pool], [s.no for s in semantic_pool]
    weight = hedge_weight(first_nos, second_nos)
    alone = unpooled_weight(weight, HEDGE_UNPOOLED_WHOLE)
    reach = hedge_reach(weight)
    fused = hedge_places(first_nos, second_nos, HEDGE_K, weight, alone, HEDGE_UNPOOLED_TOP, reach)[: len(pool)]
    scores = sorted((s.score for s in pool), reverse=True)
    out = []
    for place, (no, value) in enumerate(fused):
        s = by_no[no]
        whole = no not in first and second[no] < HEDGE_UNPOOLED_TOP and alone != weight
        s.why["hedge"] = {"place": place, "default_place": first.get(no), "semantic_place": second.get(no),
                          "rrf": round(value, 4), "weight": alone if whole else weight,
                          "reason": hedge_reason(place, first.get(no), second.get(no), whole)}
        if reach is not None and first.get(no, 0) > 0 and second.get(no, -1) >= reach:
            s.why["hedge"]["reason"] += f"; the default's rank not counted: past the semantic channel's {reach}th"
        s.score = scores[place]
        s.why["score"] = round(s.score, 6)
        out.append(s)
    return out


def placed_slots(pool: list, pairs: set[int], top: int = HEDGE_TOP) -> list[tuple[int, object]]:
    """(slot, item) of each item of ``pool`` (the fused order) among its first ``top`` whose number is in ``pairs``
    (the turns the expansion placed as a pair or chain): the places ``keep_placed`` holds them to."""
    return [(slot, s) for slot, s in enumerate(pool[:top]) if s.no in pairs]


def keep_placed(pool: list, placed: list[tuple[int, object]]) -> list:
    """``pool`` (the trees' order, hedged) with each item of ``placed`` (slot, item) at its place there or its slot,
    whichever is higher, and back in the pool if the hedge left it out: the rest keep their order below. As many
    items as ``pool``; its scores, best first, handed out again in the new order (as ``hedge``); a moved item says so
    in ``why["placed"]``."""
    if not placed:
        return pool
    where = {s.no: i for i, s in enumerate(pool)}
    pinned = {s.no for _, s in placed}
    targets = sorted((min(slot, where.get(s.no, slot)), slot, s) for slot, s in placed)
    out = [s for s in pool if s.no not in pinned]
    for target, slot, s in targets:
        out.insert(target, s)
        if target != where.get(s.no):
            before = where.get(s.no)
            s.why["placed"] = (f"the expansion's slot {slot + 1} kept: "
                               + (f"the trees and the hedge had it {before + 1}th" if before is not None
                                  else "the hedge had left it out"))
    out = out[: len(pool)]
    scores = sorted((s.score for s in pool), reverse=True)
    for s, score in zip(out, scores, strict=True):
        s.score = score
        if "score" in s.why:
            s.why["score"] = round(score, 6)
    return out


def hedge_reason(place: int, default_place: int | None, semantic_place: int | None,
                 unpooled_whole: bool = False) -> str:
    """Why an item stands at ``place`` of the hedged order, in words (places from 0, ranks from 1);
    ``unpooled_whole``: an item the trees never pooled counted the trees' weight too (``unpooled_weight``)."""
    semantic = f"the semantic channel's rank {semantic_place + 1}" if semantic_place is not None \
        else "no rank in the semantic channel's pool"
    if default_place is None:
        whole = ", counted with the trees' weight too: outside their pool" if unpooled_whole else ""
        return f"brought in by {semantic}{whole}"
    if place < default_place:
        return f"raised from the default's rank {default_place + 1} by {semantic}"
    if place > default_place:
        return f"lowered from the default's rank {default_place + 1}: {semantic}"
    return f"the default's rank {default_place + 1}, {semantic}"
