"""The fusion of a dialogue-form recall (design.md §issue-30.3), chosen by cross-validation inside
the tuning halves: which order of a dialogue's pool generalises to dialogues it was not fitted on.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/fusion_dialogue.py \\
        --pools /tmp/pools.pkl [--out recall/fusion_trees_use_e5_dialogue.json]

The pools are ``bench/fusion_rank.py``'s (one brain holding every set, the default engine and its
memory pass; built and cached by ``--pools`` when missing). A *dialogue pool* is one whose query
the engine read as a dialogue (the ``dialogue`` feature): in the bench, MADial's. Only those are
ordered by the dialogue trees (``learned.MODEL_FILES[e5_dialogue.MIXED_NAME]``): text questions keep
USE's trees, so nothing here can move them.

Round seventeen's trees were fitted on the tuning halves of all six sets together, where MADial is
160 of ~2,900 questions; on MADial's own pools the semantic channel alone beat them on both halves.
Here every candidate ranker is scored by K-fold cross-validation over the dialogue pools' tuning
halves, folds by dialogue (a MADial query id is one dialogue, the same in zh and en: both languages
of one dialogue fall in the same fold, so a fold never tests on a translation of what it trained
on), repeated over several fold draws. The arm with the best mean cross-validated R@5 is chosen
among those --out can write — the dialogue-only tree arms and the logistic ones, whose
output is a probability of evidence (``learned.rerank`` multiplies it by the track record); the
fixed orders, the blends, the six-set refits, the pairwise rankers (a score, not a probability) and the shipped file
(fitted on these very tuning halves: in-sample) are printed for reference. The chosen arm is
then fitted on every tuning dialogue pool and, with ``--out``, exported as the product's model (a
tree arm as trees, a logistic arm as ``learned.Linear``'s weights). The held-out halves are
printed after the choice, for every arm, marked as not used to choose.

Deterministic: the same pools give the same numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_rank  # noqa: E402
import quality  # noqa: E402

from hindbrain.recall import learned  # noqa: E402
from hindbrain.recall.e5_dialogue import MIXED_NAME  # noqa: E402

FEATURES = learned.FEATURES
COL = {f: n for n, f in enumerate(FEATURES)}
FOLDS = 5
REPEATS = 4  # fold draws: one draw of 5 folds over 80 dialogues moves a mean by a point or more
# A higher channel score can only raise a candidate's odds, a worse rank only lower them: what the
# monotone arm imposes (the rest are free).
MONOTONE = {"lexical": 1, "semantic": 1, "fused": 1, "fused_share": 1, "cosine": 1, "cosine_gap": -1,
            "lexical_rank": -1, "semantic_rank": -1, "fused_rank": -1}

# what a linear arm may read when all 28 columns are too many for 160 questions
CORE = ("lexical", "semantic", "fused", "cosine", "cosine_gap", "lexical_rank", "semantic_rank", "fused_rank",
        "lexical_reach")

Pool = tuple  # (qid, tuning, gold, ids, x): fusion_rank.collect's rows
Order = Callable[[np.ndarray], np.ndarray]  # a pool's features → candidate indices, best first
Fit = Callable[[list, list], Order]  # (dialogue pools, other sets' pools) → order


def is_dialogue(pool: Pool) -> bool:
    x = pool[4]
    return len(x) > 0 and bool(x[0, COL["dialogue"]])


def dialogue_of(qid: str) -> str:
    """The dialogue a question asks from: MADial's ids are ``lang-N``, the same N in both languages."""
    return qid.split("-", 1)[-1]


def folds(pools: list[Pool], k: int, seed: int) -> list[list[int]]:
    """Indices of ``pools`` in ``k`` folds, whole dialogues to a fold, drawn by ``seed``."""
    groups = sorted({dialogue_of(p[0]) for p in pools})
    perm = np.random.default_rng(seed).permutation(len(groups))
    fold_of = {groups[g]: n % k for n, g in enumerate(perm)}
    return [[i for i, p in enumerate(pools) if fold_of[dialogue_of(p[0])] == f] for f in range(k)]


def by_column(name: str) -> Fit:
    def fit(_d, _o) -> Order:
        return lambda x: np.argsort(-x[:, COL[name]], kind="stable")
    return fit


def tie_broken(first: str, then: str) -> Fit:
    """``first``'s order, ties (equal scores) broken by ``then``."""
    def fit(_d, _o) -> Order:
        return lambda x: np.lexsort((-x[:, COL[then]], -x[:, COL[first]]))
    return fit


BLEND_GRID = tuple(np.round(np.linspace(0, 1, 21), 2))


def blended(a: str, b: str, grid=BLEND_GRID) -> Fit:
    """``(1 − w)·a + w·b``, ``w`` the grid point with the best R@5 on the training pools (the
    first best: the smallest ``w``)."""
    def order_for(w: float) -> Order:
        return lambda x: np.argsort(-((1 - w) * x[:, COL[a]] + w * x[:, COL[b]]), kind="stable")

    def fit(d, _o) -> Order:
        scores = [fusion_rank.r_at_5(d, order_for(w)) for w in grid]
        return order_for(grid[int(np.argmax(scores))])
    return fit


def logistic_model(pools: list[Pool], c: float = 1.0, columns: tuple[str, ...] = FEATURES) -> learned.Linear:
    """Pointwise logistic regression over every feature, standardised (liblinear, as
    ``fusion_rank.fit_logistic``), the standardisation folded into the weights: the product's
    ``learned.Linear``. A column constant over the training rows (e.g. ``indirect`` on MADial)
    gets weight 0: the fit never saw it vary, so a query where it does must not move by it; so
    does a column not in ``columns``."""
    x, y = fusion_rank.labelled(pools, list(range(len(FEATURES))))
    mean, std = x.mean(0), x.std(0)
    varies = (std > 1e-6) & np.isin(np.arange(len(FEATURES)), [COL[f] for f in columns])
    z = (x[:, varies] - mean[varies]) / std[varies]
    m = LogisticRegression(C=c, solver="liblinear", max_iter=1000).fit(z, y)
    weights = np.zeros(len(FEATURES))
    weights[varies] = m.coef_[0] / std[varies]
    intercept = float(m.intercept_[0] - weights[varies] @ mean[varies])
    return learned.Linear(weights, intercept, FEATURES, MIXED_NAME)


def logistic(c: float = 1.0, columns: tuple[str, ...] = FEATURES) -> Fit:
    def fit(d, _o) -> Order:
        model = logistic_model(d, c, columns)
        return lambda x: np.argsort(-model.margin(x), kind="stable")
    return fit


def pairwise(columns: tuple[str, ...] = FEATURES, c: float = 1.0) -> Fit:
    """``fusion_rank``'s pairwise ranker (a linear RankNet) on the dialogue pools."""
    cols = [COL[f] for f in columns]

    def fit(d, _o) -> Order:
        score, _ = fusion_rank.fit_pairwise(d, cols, c)
        return lambda x: np.argsort(score(x), kind="stable")
    return fit


def shipped(path: Path) -> Fit:
    model = learned.model_from_json(json.loads(path.read_text("utf-8")))
    return lambda _d, _o: (lambda x: np.argsort(-model.margin(x), kind="stable"))


def boosted_model(pools: list[Pool], weights: np.ndarray | None = None, *, depth=3, iters=150, rate=0.05,
                  monotone=False, seed=0) -> HistGradientBoostingClassifier:
    x, y = fusion_rank.labelled(pools, list(range(len(FEATURES))))
    cst = [MONOTONE.get(f, 0) for f in FEATURES] if monotone else None
    # no early stopping: its validation split is a random draw (the six-set fit's rows pass 10,000,
    # where scikit-learn's "auto" turns it on), and a refit should not depend on one
    return HistGradientBoostingClassifier(max_depth=depth, max_iter=iters, learning_rate=rate, random_state=seed,
                                          early_stopping=False, monotonic_cst=cst).fit(x, y, sample_weight=weights)


def bagged_models(pools: list[Pool], bags: int, **kw) -> list[HistGradientBoostingClassifier]:
    """``bags`` fits, each on a bootstrap draw of whole dialogues (seeds 0 …): their margins averaged
    are one ranker that depends less on which dialogues one fit saw."""
    groups = sorted({dialogue_of(p[0]) for p in pools})
    models = []
    for seed in range(bags):
        drawn = np.random.default_rng(1000 + seed).choice(len(groups), len(groups), replace=True)
        count = {g: 0 for g in groups}
        for g in drawn:
            count[groups[g]] += 1
        sample = [p for p in pools for _ in range(count[dialogue_of(p[0])])]
        models.append(boosted_model(sample, seed=seed, **kw))
    return models


def margin_order(models) -> Order:
    return lambda x: np.argsort(-np.mean([m.decision_function(x) for m in models], axis=0), kind="stable")


def boosted(bags: int = 1, **kw) -> Fit:
    def fit(d, _o) -> Order:
        return margin_order(bagged_models(d, bags, **kw) if bags > 1 else [boosted_model(d, **kw)])
    return fit


def six_sets(per_set_weights: bool, **kw) -> Fit:
    """Fitted on the dialogue pools and every other set's tuning pools (round seventeen's rows);
    ``per_set_weights``: each set's rows weighted so every set counts as much in the loss."""
    def fit(d, others) -> Order:
        sets = [d, *others]
        pools = [p for s in sets for p in s]
        weights = None
        if per_set_weights:
            weights = np.concatenate([np.full(sum(len(p[3]) for p in s), 1.0 / sum(len(p[3]) for p in s))
                                      for s in sets])
            weights *= len(weights) / weights.sum()
        return margin_order([boosted_model(pools, weights, **kw)])
    return fit


def cross_validated(fit: Fit, dialogue: dict[str, list[Pool]], others: list[list[Pool]]) -> dict[str, float]:
    """Mean R@5 per dialogue set over ``REPEATS`` draws of ``FOLDS`` folds of the tuning pools:
    each pool scored by a ranker fitted without its dialogue (in either language)."""
    tuning = [p for ps in dialogue.values() for p in ps]
    name_of = {id(p): n for n, ps in dialogue.items() for p in ps}
    hits = {n: [] for n in dialogue}
    for repeat in range(REPEATS):
        parts = folds(tuning, FOLDS, repeat)
        for test in parts:
            held = set(test)
            order = fit([p for i, p in enumerate(tuning) if i not in held], others)
            for i in test:
                p = tuning[i]
                hits[name_of[id(p)]].append(fusion_rank.r_at_5([p], order))
    return {n: float(np.mean(h)) for n, h in hits.items()}


def arms(shipped_file: Path) -> dict[str, Fit]:
    return {
        "the shipped file (in-sample: fitted on these tuning halves)": shipped(shipped_file),
        "fused (no trees)": by_column("fused"),
        "semantic alone": by_column("semantic"),
        "lexical alone": by_column("lexical"),
        "semantic, ties by lexical": tie_broken("semantic", "lexical"),
        "semantic + w·lexical (w fitted)": blended("semantic", "lexical"),
        "semantic + w·fused (w fitted)": blended("semantic", "fused"),
        "logistic, dialogue pools only": logistic(),
        "logistic, dialogue pools only, C 0.1": logistic(0.1),
        "logistic, dialogue pools only, channels and ranks": logistic(columns=CORE),
        "pairwise, dialogue pools only": pairwise(),
        "pairwise, dialogue only, channels and ranks": pairwise(CORE),
        "pairwise, dialogue only, channels and ranks, C 0.01": pairwise(CORE, 0.01),
        "trees, six sets refitted (as round seventeen)": six_sets(False),
        "trees, six sets, each set weighted equally": six_sets(True),
        "trees, dialogue pools only (depth 3, 150)": boosted(),
        "trees, dialogue only, depth 2, 60": boosted(depth=2, iters=60),
        "trees, dialogue only, depth 2, 60, monotone": boosted(depth=2, iters=60, monotone=True),
        "trees, dialogue only, depth 3, 150, monotone": boosted(monotone=True),
        "trees, dialogue only, depth 2, 60, monotone, 8 bags": boosted(bags=8, depth=2, iters=60, monotone=True),
        "trees, dialogue only, depth 3, 150, monotone, 8 bags": boosted(bags=8, monotone=True),
    }


def export_bagged(models: list[HistGradientBoostingClassifier], spec: str) -> dict:
    """Several fits as one tree file: the mean of their margins is every tree's leaf ÷ the number of
    fits plus the mean baseline (``learned.Trees`` sums trees, so no product change reads it)."""
    parts = [fusion_rank.export(m, MIXED_NAME) for m in models]
    for part in parts:
        for t in part["trees"]:
            t["value"] = [v / len(parts) for v in t["value"]]
    out = parts[0]
    out["trees"] = [t for part in parts for t in part["trees"]]
    out["baseline"] = float(np.mean([part["baseline"] for part in parts]))
    out["depth"] = max(part["depth"] for part in parts)
    out["fitted_by"] = spec
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="madial-zh,madial-en,conv-en,conv-zh,hard-en,hard-zh")
    ap.add_argument("--madial", type=Path, default=quality.MADIAL)
    ap.add_argument("--pools", type=Path, required=True, help="fusion_rank.py's cache (built when missing)")
    ap.add_argument("--out", type=Path, help="write the chosen arm's trees here (when it is a tree arm)")
    ap.add_argument("--only", help="score only the arms whose name contains this (a quicker look)")
    args = ap.parse_args()
    pools = fusion_rank.pools_of(args.sets.split(","), args.madial, args.pools, fusion_rank.embedder_name())
    dialogue_sets = [n for n, ps in pools.items() if ps and all(is_dialogue(p) for p in ps)]
    if not dialogue_sets:
        raise SystemExit("no set's pools are dialogue-form")
    tuning = {n: [p for p in pools[n] if p[1]] for n in dialogue_sets}
    held = {n: [p for p in pools[n] if not p[1]] for n in dialogue_sets}
    others = [[p for p in ps if p[1]] for n, ps in pools.items() if n not in dialogue_sets]
    every_tuning = [p for ps in tuning.values() for p in ps]
    candidates = {n: f for n, f in arms(learned.model_path(MIXED_NAME)).items() if not args.only or args.only in n}

    print(f"cross-validated R@5 on the tuning halves ({FOLDS} folds by dialogue × {REPEATS} draws): "
          + ", ".join(f"{n} {len(ps)} questions" for n, ps in tuning.items()))
    print("| arm | " + " | ".join(f"{n} CV" for n in dialogue_sets) + " | mean CV | tuning (in-sample) |")
    print("|---|" + "---:|" * (len(dialogue_sets) + 2))
    cv = {}
    for name, fit in candidates.items():
        scores = cross_validated(fit, tuning, others)
        cv[name] = float(np.mean(list(scores.values())))
        order = fit(every_tuning, others)
        in_sample = " / ".join(f"{fusion_rank.r_at_5(ps, order):.1f}" for ps in tuning.values())
        print(f"| {name} | " + " | ".join(f"{scores[n]:.1f}" for n in dialogue_sets)
              + f" | {cv[name]:.2f} | {in_sample} |", flush=True)
    choosable = [n for n in cv if n in EXPORTABLE or n.startswith("logistic, dialogue pools only")]
    if not choosable:
        raise SystemExit("no arm the product can read was scored (see --only)")
    chosen = max(choosable, key=lambda n: cv[n])
    print(f"\nchosen on the tuning halves: {chosen} (mean CV {cv[chosen]:.2f})\n")

    print("held-out halves, every arm fitted on all tuning dialogue pools — the chosen arm's row is the "
          "number of record; the others are for reference, NOT used to choose")
    print("| arm | " + " | ".join(f"{n} held-out" for n in dialogue_sets) + " | mean |")
    print("|---|" + "---:|" * (len(dialogue_sets) + 1))
    for name, fit in candidates.items():
        order = fit(every_tuning, others)
        cells = [fusion_rank.r_at_5(held[n], order) for n in dialogue_sets]
        mark = " (chosen)" if name == chosen else ""
        print(f"| {name}{mark} | " + " | ".join(f"{c:.1f}" for c in cells) + f" | {np.mean(cells):.2f} |",
              flush=True)
    if args.out:
        write_chosen(chosen, every_tuning, args.out)


# the tree arms --out can write: name → (bags, boosted_model's arguments)
EXPORTABLE = {
    "trees, dialogue pools only (depth 3, 150)": (1, {}),
    "trees, dialogue only, depth 2, 60": (1, {"depth": 2, "iters": 60}),
    "trees, dialogue only, depth 2, 60, monotone": (1, {"depth": 2, "iters": 60, "monotone": True}),
    "trees, dialogue only, depth 3, 150, monotone": (1, {"monotone": True}),
    "trees, dialogue only, depth 2, 60, monotone, 8 bags": (8, {"depth": 2, "iters": 60, "monotone": True}),
    "trees, dialogue only, depth 3, 150, monotone, 8 bags": (8, {"monotone": True}),
}


def write_chosen(chosen: str, pools: list[Pool], out: Path) -> None:
    if chosen.startswith("logistic, dialogue pools only"):
        c = 0.1 if chosen.endswith("C 0.1") else 1.0
        model = logistic_model(pools, c, CORE if chosen.endswith("channels and ranks") else FEATURES)
        out.write_text(json.dumps({
            "kind": "logistic", "features": list(FEATURES), "embedder": MIXED_NAME,
            "weights": model.weights.tolist(), "intercept": model.intercept,
            "fitted_by": f"bench/fusion_dialogue.py: {chosen} (scikit-learn LogisticRegression, liblinear, C {c}, "
                         f"standardised, folded into the weights), fitted on the dialogue-form pools of the tuning "
                         f"halves only, chosen by {FOLDS}-fold cross-validation by dialogue × {REPEATS} draws; "
                         f"pools scored by {MIXED_NAME}"}) + "\n")
        print(f"wrote {out}: logistic weights over {int((model.weights != 0).sum())} features")
        return
    if chosen not in EXPORTABLE:
        raise SystemExit(f"the chosen arm ({chosen}) is not a dialogue-only tree arm: nothing written to {out}")
    bags, kw = EXPORTABLE[chosen]
    models = bagged_models(pools, bags, **kw) if bags > 1 else [boosted_model(pools, **kw)]
    spec = (f"bench/fusion_dialogue.py: {chosen} (HistGradientBoostingClassifier, learning rate 0.05, no early "
            f"stopping), fitted on the dialogue-form pools of the tuning halves only, chosen by "
            f"{FOLDS}-fold cross-validation by dialogue × {REPEATS} draws; pools scored by {MIXED_NAME}")
    exported = export_bagged(models, spec)
    x = np.vstack([p[4] for p in pools])
    drift = float(np.abs(learned.Trees.from_json(exported).margin(x)
                         - np.mean([m.decision_function(x) for m in models], axis=0)).max())
    print(f"wrote {out}: {len(exported['trees'])} trees, largest margin difference from scikit-learn {drift:.2e}")
    out.write_text(json.dumps(exported) + "\n")


if __name__ == "__main__":
    main()
