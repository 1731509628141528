"""The fusion of a dialogue-form recall (design.md §issue-30.3), chosen by cross-validation inside
the tuning halves: which order of a dialogue's pool generalises to dialogues it was not fitted on.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/fusion_dialogue.py \\
        --pools /tmp/pools.pkl [--out recall/fusion_trees_use_e5_dialogue.json] [--only ARM,ARM]

The pools are ``bench/fusion_rank.py``'s (one brain holding every set, the default engine and its
memory pass; built and cached by ``--pools`` when missing). A *dialogue pool* is one whose query
the engine read as a dialogue (the ``dialogue`` feature): in the bench, MADial's and the ``dial-*``
sets'. Only those are ordered by the dialogue trees (``learned.MODEL_FILES[e5_dialogue.MIXED_NAME]``):
text questions keep USE's trees, so nothing here can move them.

Round seventeen's trees were fitted on the tuning halves of all six sets together, where MADial is
160 of ~2,900 questions; on MADial's own pools the semantic channel alone beat them on both halves.
Here every candidate ranker is scored by K-fold cross-validation over the dialogue pools' tuning
halves, folds by dialogue (a MADial query id is one dialogue, the same in zh and en: both languages
of one dialogue fall in the same fold, so a fold never tests on a translation of what it trained
on), repeated over several fold draws. The dialogue-tuning sets (``dial-zh`` / ``dial-en``,
bench/data/dialogue-tuning/: tuning questions only) are folded with MADial's: each fold trains on
every dialogue set's rows but its own dialogues, and scores all of them; the choice reads MADial's
mean only (the new sets' CV is printed beside), and every arm that learns is also read trained on
MADial's rows alone, so the table says what the new rows add. The arm with the best mean
cross-validated R@5 is chosen among those --out can write — the tree arms (dialogue-only, and the
six-set refits with their weightings) and the logistic ones, whose output is a probability of
evidence (``learned.rerank`` multiplies it by the track record); the fixed orders, the blends, the
pairwise rankers (a score, not a probability) and the shipped file (fitted on these very tuning
halves: in-sample) are printed for reference. The chosen arm is then fitted on every tuning pool it
trains on and, with ``--out``, exported as the product's model (a tree arm as trees, a logistic arm
as ``learned.Linear``'s weights). The held-out halves are printed after the choice, for every arm,
marked as not used to choose, and each channel alone against the chosen arm ("never below its best
single channel").

Deterministic: the same pools give the same numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

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
Fit = Callable[[dict, list], Order]  # ({dialogue set: its training pools}, other sets' pools) → order


def flat(dialogue: dict[str, list[Pool]]) -> list[Pool]:
    return [p for ps in dialogue.values() for p in ps]


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
        scores = [fusion_rank.r_at_5(flat(d), order_for(w)) for w in grid]
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
        model = logistic_model(flat(d), c, columns)
        return lambda x: np.argsort(-model.margin(x), kind="stable")
    return fit


def pairwise(columns: tuple[str, ...] = FEATURES, c: float = 1.0) -> Fit:
    """``fusion_rank``'s pairwise ranker (a linear RankNet) on the dialogue pools."""
    cols = [COL[f] for f in columns]

    def fit(d, _o) -> Order:
        score, _ = fusion_rank.fit_pairwise(flat(d), cols, c)
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


def six_sets_model(dialogue: dict[str, list[Pool]], others: list[list[Pool]], weighting: str = "",
                   **kw) -> HistGradientBoostingClassifier:
    """Trees fitted on the dialogue pools and every other set's tuning pools (round seventeen's rows).
    ``weighting``: "" every row alike; "sets" each set's rows weighted so every set counts as much in
    the loss, each dialogue set on its own (madial-zh, madial-en, each dialogue-tuning set) as each
    text set; "dialogue as one" the dialogue sets together count as one set (round nineteen's arm)."""
    dialogue_sets = [ps for ps in dialogue.values() if ps]
    if weighting == "dialogue as one":
        dialogue_sets = [[p for ps in dialogue_sets for p in ps]]
    sets = [*dialogue_sets, *(ps for ps in others if ps)]
    return boosted_model([p for s in sets for p in s], set_weights(sets) if weighting else None, **kw)


def set_weights(sets: list[list[Pool]]) -> np.ndarray:
    """A weight per candidate row (``fusion_rank.labelled``'s order) so every set's rows weigh the same
    in all, the mean weight 1."""
    sizes = [sum(len(p[3]) for p in s) for s in sets]
    weights = np.concatenate([np.full(n, 1.0 / n) for n in sizes])
    return weights * (len(weights) / weights.sum())


def without(names: tuple[str, ...], fit: Fit | Models) -> Fit | Models:
    """``fit`` (or an arm's ``models``) trained without the dialogue sets ``names`` (what the arm reads with
    MADial's rows only)."""
    return lambda d, others: fit(leaving_out(d, names), others)


def leaving_out(dialogue: dict[str, list[Pool]], names: tuple[str, ...]) -> dict[str, list[Pool]]:
    return {n: ps for n, ps in dialogue.items() if n not in names}


def cross_validated(fit: Fit, dialogue: dict[str, list[Pool]], others: list[list[Pool]]) -> dict[str, float]:
    """Mean R@5 per dialogue set over ``REPEATS`` draws of ``FOLDS`` folds of the tuning pools of
    every dialogue set together: each pool scored by a ranker fitted without its dialogue (in either
    language; a dialogue-tuning set's dialogues are their own, ``dialogue_of``)."""
    tuning = flat(dialogue)
    name_of = {id(p): n for n, ps in dialogue.items() for p in ps}
    hits = {n: [] for n in dialogue}
    for repeat in range(REPEATS):
        parts = folds(tuning, FOLDS, repeat)
        for test in parts:
            held = set(test)
            train = {n: [] for n in dialogue}
            for i, p in enumerate(tuning):
                if i not in held:
                    train[name_of[id(p)]].append(p)
            order = fit(train, others)
            for i in test:
                p = tuning[i]
                hits[name_of[id(p)]].append(fusion_rank.r_at_5([p], order))
    return {n: float(np.mean(h)) for n, h in hits.items()}


Models = Callable[[dict, list], list]  # the same training rows → the fitted trees a file holds


class Arm(NamedTuple):
    """One way to order a dialogue's pool: ``fit`` for the cross-validation; ``models``, for an arm
    ``--out`` can write as trees, the fits whose mean margin the file holds (``logistic`` arms are
    written as ``learned.Linear`` weights); ``spec`` says how they were fitted, for the file."""

    fit: Fit
    models: Models | None = None
    spec: str = ""


def tree_arm(bags: int = 1, **kw) -> Arm:
    def models(d, _o) -> list:
        return bagged_models(flat(d), bags, **kw) if bags > 1 else [boosted_model(flat(d), **kw)]
    return Arm(lambda d, o: margin_order(models(d, o)), models, "the dialogue-form pools")


def six_set_arm(weighting: str = "", **kw) -> Arm:
    def models(d, o) -> list:
        return [six_sets_model(d, o, weighting, **kw)]
    weighted = {"": "", "sets": ", each set weighted equally",
                "dialogue as one": ", the dialogue sets together weighted as one set"}[weighting]
    return Arm(lambda d, o: margin_order(models(d, o)), models,
               f"the dialogue-form pools and every other set's{weighted}")


def without_new(arm: Arm) -> Arm:
    """``arm`` trained on MADial's rows alone (the dialogue-tuning sets left out): what the new data add."""
    models = without(quality.TUNING_ONLY, arm.models) if arm.models else None
    return Arm(without(quality.TUNING_ONLY, arm.fit), models, arm.spec + " (MADial's rows only)")


LOGISTIC = "logistic, dialogue pools only"
LOGISTIC_COLUMNS = {"channels and ranks": CORE, "semantic and fused": ("semantic", "fused"),
                    "semantic only": ("semantic",)}  # a logistic arm's name → the columns it reads


def arms(shipped_file: Path, new_data: bool) -> dict[str, Arm]:
    """Every arm; ``new_data``: the dialogue-tuning sets are in the rows, so the arms that learn are
    also read trained without them."""
    fixed = {
        "the shipped file (in-sample: fitted on these tuning halves)": shipped(shipped_file),
        "fused (no trees)": by_column("fused"),
        "semantic alone": by_column("semantic"),
        "lexical alone": by_column("lexical"),
        "semantic, ties by lexical": tie_broken("semantic", "lexical"),
        "semantic + w·lexical (w fitted)": blended("semantic", "lexical"),
        "semantic + w·fused (w fitted)": blended("semantic", "fused"),
        f"{LOGISTIC}": logistic(),
        f"{LOGISTIC}, C 0.1": logistic(0.1),
        f"{LOGISTIC}, channels and ranks": logistic(columns=LOGISTIC_COLUMNS["channels and ranks"]),
        # the best single channel as an arm the product can read: a logistic fit on one column keeps its
        # order (a weight > 0), so "never below the semantic channel" is one of the choices the CV weighs
        f"{LOGISTIC}, semantic and fused": logistic(columns=LOGISTIC_COLUMNS["semantic and fused"]),
        f"{LOGISTIC}, semantic only": logistic(columns=LOGISTIC_COLUMNS["semantic only"]),
        "pairwise, dialogue pools only": pairwise(),
        "pairwise, dialogue only, channels and ranks": pairwise(CORE),
        "pairwise, dialogue only, channels and ranks, C 0.01": pairwise(CORE, 0.01),
    }
    out = {name: Arm(fit) for name, fit in fixed.items()}
    out |= {
        "trees, six sets refitted (as round seventeen)": six_set_arm(),
        "trees, six sets, each set weighted equally": six_set_arm("sets"),
        "trees, six sets, the dialogue sets weighted as one (round nineteen's 'each set weighted equally')":
            six_set_arm("dialogue as one"),
        "trees, six sets, each set weighted equally, monotone": six_set_arm("sets", monotone=True),
        "trees, dialogue pools only (depth 3, 150)": tree_arm(),
        "trees, dialogue only, depth 2, 60": tree_arm(depth=2, iters=60),
        "trees, dialogue only, depth 2, 60, monotone": tree_arm(depth=2, iters=60, monotone=True),
        "trees, dialogue only, depth 3, 150, monotone": tree_arm(monotone=True),
        "trees, dialogue only, depth 2, 60, monotone, 8 bags": tree_arm(8, depth=2, iters=60, monotone=True),
        "trees, dialogue only, depth 3, 150, monotone, 8 bags": tree_arm(8, monotone=True),
    }
    if new_data:
        learners = [n for n in out if n.startswith(("trees", LOGISTIC))]
        out |= {f"{n}, MADial's rows only": without_new(out[n]) for n in learners}
    return out


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


def writable(name: str, arm: Arm) -> bool:
    """What ``--out`` can write: tree arms, and the logistic ones (a probability of evidence, which
    ``learned.rerank`` multiplies by the track record)."""
    return arm.models is not None or name.startswith(LOGISTIC)


def single_channels(held: dict[str, list[Pool]], chosen: Order) -> None:
    """"Never below its best single channel", per set, held-out: each channel re-ordering the same pool."""
    print("\nheld-out, each channel alone re-ordering the same pool against the chosen arm")
    print("| set | lexical | semantic | fused | the chosen arm | best channel − chosen |")
    print("|---|---:|---:|---:|---:|---:|")
    for n, ps in held.items():
        ch = {c: fusion_rank.r_at_5(ps, by_column(c)({}, [])) for c in ("lexical", "semantic", "fused")}
        mine = fusion_rank.r_at_5(ps, chosen)
        best = max(ch["lexical"], ch["semantic"])
        print(f"| {n} | {ch['lexical']:.1f} | {ch['semantic']:.1f} | {ch['fused']:.1f} | {mine:.1f} | "
              f"{best - mine:+.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="madial-zh,madial-en,conv-en,conv-zh,hard-en,hard-zh,dial-zh,dial-en")
    ap.add_argument("--madial", type=Path, default=quality.MADIAL)
    ap.add_argument("--dialogue-tuning", type=Path, default=quality.DIALOGUE_TUNING, help="the dial-* sets' files")
    ap.add_argument("--pools", type=Path, required=True, help="fusion_rank.py's cache (built when missing)")
    ap.add_argument("--out", type=Path, help="write the chosen arm's model here (a tree or logistic arm)")
    ap.add_argument("--only", help="score only the arms whose name contains one of these (comma-separated)")
    args = ap.parse_args()
    pools = fusion_rank.pools_of(args.sets.split(","), args.madial, args.pools, fusion_rank.embedder_name(),
                                 args.dialogue_tuning)
    dialogue_sets = [n for n, ps in pools.items() if ps and all(is_dialogue(p) for p in ps)]
    # what each fold scores and the choice reads: the dialogue sets with a held-out half (MADial's);
    # the dialogue-tuning sets are rows to train on, their CV printed beside
    scored = [n for n in dialogue_sets if n not in quality.TUNING_ONLY]
    if not scored:
        raise SystemExit("no set's pools are dialogue-form with a held-out half")
    tuning = {n: [p for p in pools[n] if p[1]] for n in dialogue_sets}
    held = {n: [p for p in pools[n] if not p[1]] for n in scored}
    others = [[p for p in ps if p[1]] for n, ps in pools.items() if n not in dialogue_sets]
    new_data = any(n in quality.TUNING_ONLY for n in dialogue_sets)
    wanted = args.only.split(",") if args.only else None
    candidates = {n: a for n, a in arms(learned.model_path(MIXED_NAME), new_data).items()
                  if not wanted or any(w in n for w in wanted)}

    print(f"cross-validated R@5 on the tuning halves ({FOLDS} folds by dialogue × {REPEATS} draws, every "
          "dialogue set's tuning pools folded together; the choice reads " + " and ".join(scored) + "): "
          + ", ".join(f"{n} {len(ps)} questions" for n, ps in tuning.items()))
    extra = [n for n in dialogue_sets if n not in scored]
    print("| arm | " + " | ".join(f"{n} CV" for n in dialogue_sets) + " | mean CV (" + ", ".join(scored) + ") | "
          + " | ".join(f"{n} in-sample" for n in scored) + " |")
    print("|---|" + "---:|" * (len(dialogue_sets) + 1 + len(scored)))
    cv, fitted = {}, {}
    for name, arm in candidates.items():
        scores = cross_validated(arm.fit, tuning, others)
        cv[name] = float(np.mean([scores[n] for n in scored]))
        fitted[name] = arm.fit(tuning, others)  # on every tuning pool: the in-sample and held-out rows
        in_sample = " | ".join(f"{fusion_rank.r_at_5(tuning[n], fitted[name]):.1f}" for n in scored)
        print(f"| {name} | " + " | ".join(f"{scores[n]:.1f}" for n in dialogue_sets)
              + f" | {cv[name]:.2f} | {in_sample} |", flush=True)
    if extra:
        print(f"({', '.join(extra)}: tuning-only sets, in every fold's training rows but its own; not in the mean)")
    choosable = [n for n in cv if writable(n, candidates[n])]
    if not choosable:
        raise SystemExit("no arm the product can read was scored (see --only)")
    chosen = max(choosable, key=lambda n: cv[n])
    print(f"\nchosen on the tuning halves: {chosen} (mean CV {cv[chosen]:.2f})\n")

    print("held-out halves, every arm fitted on all tuning dialogue pools — the chosen arm's row is the "
          "number of record; the others are for reference, NOT used to choose")
    print("| arm | " + " | ".join(f"{n} held-out" for n in scored) + " | mean |")
    print("|---|" + "---:|" * (len(scored) + 1))
    for name in candidates:
        cells = [fusion_rank.r_at_5(held[n], fitted[name]) for n in scored]
        mark = " (chosen)" if name == chosen else ""
        print(f"| {name}{mark} | " + " | ".join(f"{c:.1f}" for c in cells) + f" | {np.mean(cells):.2f} |",
              flush=True)
    single_channels(held, fitted[chosen])
    if args.out:
        write_chosen(chosen, candidates[chosen], tuning, others, args.out)


def write_chosen(chosen: str, arm: Arm, dialogue: dict[str, list[Pool]], others: list[list[Pool]], out: Path) -> None:
    if chosen.endswith("MADial's rows only"):
        dialogue = leaving_out(dialogue, quality.TUNING_ONLY)
    trained = ", ".join(n for n, ps in dialogue.items() if ps)
    how = (f"chosen by {FOLDS}-fold cross-validation by dialogue × {REPEATS} draws on MADial's tuning halves; "
           f"dialogue sets in the rows: {trained}; pools scored by {MIXED_NAME}")
    if arm.models is None and chosen.startswith(LOGISTIC):
        c = 0.1 if "C 0.1" in chosen else 1.0
        columns = next((cols for label, cols in LOGISTIC_COLUMNS.items() if label in chosen), FEATURES)
        model = logistic_model(flat(dialogue), c, columns)
        out.write_text(json.dumps({
            "kind": "logistic", "features": list(FEATURES), "embedder": MIXED_NAME,
            "weights": model.weights.tolist(), "intercept": model.intercept,
            "fitted_by": f"bench/fusion_dialogue.py: {chosen} (scikit-learn LogisticRegression, liblinear, C {c}, "
                         f"standardised, folded into the weights), fitted on the dialogue-form pools of the tuning "
                         f"halves only, {how}"}) + "\n")
        print(f"wrote {out}: logistic weights over {int((model.weights != 0).sum())} features")
        return
    if arm.models is None:
        raise SystemExit(f"the chosen arm ({chosen}) is not one --out can write: nothing written to {out}")
    models = arm.models(dialogue, others)
    spec = (f"bench/fusion_dialogue.py: {chosen} (HistGradientBoostingClassifier, learning rate 0.05, no early "
            f"stopping), fitted on the tuning halves of {arm.spec}, {how}")
    exported = export_bagged(models, spec)
    x = np.vstack([p[4] for p in flat(dialogue)])
    drift = float(np.abs(learned.Trees.from_json(exported).margin(x)
                         - np.mean([m.decision_function(x) for m in models], axis=0)).max())
    print(f"wrote {out}: {len(exported['trees'])} trees, largest margin difference from scikit-learn {drift:.2e}")
    out.write_text(json.dumps(exported) + "\n")


if __name__ == "__main__":
    main()
