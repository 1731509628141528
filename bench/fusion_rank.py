"""Learned fusion, second try (design.md §issue-30.3): per-query *relative* features and three
rankers over the default engine's pool, fitted on the tuning halves of every set together,
compared with the default's fused order and each channel alone on every set's two halves.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/fusion_rank.py [--pools /tmp/pools.pkl]

The first try (``bench/fusion_fit.py``: a pointwise logistic regression over each candidate's
absolute channel scores) did not beat the per-form weights. Here each candidate is also placed
relative to its query's pool — its rank in each channel, its cosine's gap to the pool's best,
how much of the pool the lexical channel reached at all (a query whose words hit everything
says little), the query's form flags — and three rankers are fitted:

* ``logistic``: pointwise logistic regression (liblinear, standardised);
* ``pairwise``: logistic regression on the differences gold − non-gold inside one query's pool
  (a linear RankNet), i.e. only the order within a query counts;
* ``boosted``: scikit-learn's HistGradientBoostingClassifier, shallow, fixed seed.

The pools (one brain holding every set, the default engine, ``POOL`` candidates a question)
are cached with ``--pools`` so refits cost seconds. They are scored by the embedder
``HINDBRAIN_EMBEDDER`` configures, and the trees are fitted for it: its name goes into the
exported file, and the product reads each embedder's own file (``recall.learned.MODEL_FILES``;
round ten fitted ``fusion_trees_use_e5.json`` with ``HINDBRAIN_EMBEDDER=use+e5 OMP_NUM_THREADS=1``).
"Never below its best single channel" is checked inside the same pool: the channels' own orders
(``semantic``, ``lexical``) re-rank the same candidates. Deterministic: the same pools give the same numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_fit  # noqa: E402
import quality  # noqa: E402

from hindbrain.recall import engine as recall_engine  # noqa: E402
from hindbrain.recall import informative, learned  # noqa: E402
from hindbrain.recall.embed import embedder_from_name  # noqa: E402
from hindbrain.recall.engine import POOL as ENGINE_POOL  # noqa: E402
from hindbrain.recall.engine import RecallEngine  # noqa: E402
from hindbrain.recall.query import build_query  # noqa: E402
from hindbrain.recall.scoring import PRESETS  # noqa: E402
from hindbrain.schemas.api import RecallInput  # noqa: E402
from hindbrain.schemas.records import now_us  # noqa: E402
from hindbrain.settings import Settings  # noqa: E402

POOL = ENGINE_POOL  # the pool the engine re-orders
FEATURES = learned.FEATURES


def collect(brain, data: quality.DataSet) -> list[tuple[str, bool, set, list[str], np.ndarray, np.ndarray]]:
    """Each question's pool as the product's trees see it: the fused order *before* the information
    factor (``recall.informative``), which the product multiplies into the trees' probability
    (``learned.rerank``'s ``prior``) — kept beside the features, ones where it does not apply. (Until
    round twenty-five the pools were collected with the factor already in the fused order, a pool
    the trees never see in the product.)"""
    engine = RecallEngine(brain.index, PRESETS["fused"], pool=POOL, learned=False)  # the fused pool
    out = []
    weight = informative.WEIGHT
    for q in data.questions:
        query = build_query(RecallInput(tenant=q.tenant, agent=data.agent, query=q.query, k=10,
                                        budget_tokens=100000, layers=["episodic"]), now_us())
        informative.WEIGHT = 0.0  # the fused order alone
        try:
            ranked = engine.recall(query).ranked
        finally:
            informative.WEIGHT = weight
        tenant = brain.index.tenants[q.tenant]
        prior = np.asarray(recall_engine._informative(tenant, ranked)
                           if recall_engine._asks_what_someone_said(tenant, query, ranked) else np.ones(len(ranked)))
        ids = [s.doc.event_ids[0] if s.doc.event_ids else s.doc.id for s in ranked]
        x = learned.features(ranked, query)
        out.append((q.qid, q.tuning, set(q.gold), ids, x, prior))
    return out


def embedder_name() -> str:
    """The name of the embedder ``HINDBRAIN_EMBEDDER`` configures (no model is loaded)."""
    return embedder_from_name(Settings().embedder).name


def fingerprint(data: quality.DataSet) -> str:
    """What a set's pools were collected from (its events and questions): a cached set whose data
    changed since (a dialogue-tuning file still being written) is collected again."""
    rows = [data.events, [(q.qid, q.tenant, q.query, sorted(q.gold), q.tuning) for q in data.questions]]
    return hashlib.sha256(json.dumps(rows, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()


def pools_of(sets: list[str], madial: Path, cache: Path | None, embedder: str,
             dialogue: Path = quality.DIALOGUE_TUNING) -> dict[str, list]:
    """Every set's pools, scored by ``embedder`` (a cache scored by another one is refused). A set the
    cache lacks, or holds from other data, is collected in a brain of its own and added to the cache:
    a tenant's pool reads only that tenant's documents, so which other sets share the brain does not
    change it. (A set cached before fingerprints were kept is taken as it is.)"""
    cached = {"embedder": embedder, "pools": {}, "fingerprints": {}}
    if cache is not None and cache.exists():
        cached = pickle.loads(cache.read_bytes())
        if cached["embedder"] != embedder:
            raise SystemExit(f"{cache}: pools scored by {cached['embedder']!r}, this run's embedder is {embedder!r}")
        cached.setdefault("fingerprints", {})
    data = {n: fusion_fit.prefixed(quality.load(n, madial, dialogue), n) for n in sets}
    prints = {n: fingerprint(d) for n, d in data.items()}  # each set's events serialised and hashed once
    stale = [n for n in data if n not in cached["pools"] or cached["fingerprints"].get(n, prints[n]) != prints[n]]
    if stale:
        everything = quality.DataSet("all", [e for n in stale for e in data[n].events], [])
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(everything, Path(home))
            try:
                for n in stale:
                    cached["pools"][n] = collect(brain, data[n])
                    cached["fingerprints"][n] = prints[n]
            finally:
                brain.close()
        if cache is not None:
            cache.write_bytes(pickle.dumps(cached))
    return {n: cached["pools"][n] for n in sets}


def r_at_5(pools, order_of) -> float:
    """R@5 of ``order_of(features)`` over ``pools`` (rows of ``collect``, or of its five first columns:
    ``bench/fusion_dialogue.py``'s)."""
    return 100 * float(np.mean([quality.recall_at(p[2], [p[3][i] for i in order_of(p[4])])[5]
                                for p in pools])) if pools else 0.0


def r_at_5_with_prior(pools, order_of) -> float:
    """R@5 of ``order_of(features, prior)`` over ``collect``'s rows (``prior``: the information factor)."""
    return 100 * float(np.mean([quality.recall_at(gold, [ids[i] for i in order_of(x, prior)])[5]
                                for _, _, gold, ids, x, prior in pools])) if pools else 0.0


def by_probability(margin):
    """An order by the probability ``margin`` gives, times the information factor (``learned.rerank``)."""
    return lambda f, prior: np.argsort(-(1.0 / (1.0 + np.exp(-margin(f))) * prior), kind="stable")


def labelled(pools, cols):
    x = np.vstack([p[4][:, cols] for p in pools])
    y = np.concatenate([[float(i in p[2]) for i in p[3]] for p in pools])
    return x, y


def fit_logistic(pools, cols, c=1.0):
    x, y = labelled(pools, cols)
    mean, scale = x.mean(0), np.maximum(x.std(0), 1e-6)
    m = LogisticRegression(C=c, solver="liblinear", max_iter=1000).fit((x - mean) / scale, y)
    coef = m.coef_[0]
    return lambda f: -(((f[:, cols] - mean) / scale) @ coef), (mean, scale, coef)


def fit_pairwise(pools, cols, c=1.0):
    x, _ = labelled(pools, cols)
    mean, scale = x.mean(0), np.maximum(x.std(0), 1e-6)
    diffs = []
    for p in pools:
        gold, ids, f = p[2], p[3], p[4]
        z = (f[:, cols] - mean) / scale
        pos = [i for i, e in enumerate(ids) if e in gold]
        neg = [i for i, e in enumerate(ids) if e not in gold]
        for i in pos:
            diffs.append(z[i] - z[neg])
    d = np.vstack(diffs)
    xx = np.vstack([d, -d])
    yy = np.concatenate([np.ones(len(d)), np.zeros(len(d))])
    m = LogisticRegression(C=c, solver="liblinear", fit_intercept=False, max_iter=1000).fit(xx, yy)
    coef = m.coef_[0]
    return lambda f: -(((f[:, cols] - mean) / scale) @ coef), (mean, scale, coef)


def fit_boosted(pools, cols):
    x, y = labelled(pools, cols)
    m = HistGradientBoostingClassifier(max_depth=3, max_iter=150, learning_rate=0.05, random_state=0).fit(x, y)
    return lambda f: -m.predict_proba(f[:, cols])[:, 1], m


def export(model: HistGradientBoostingClassifier, embedder: str) -> dict:
    """The fitted trees as plain arrays (``recall.learned.Trees``): the product needs no scikit-learn.
    ``embedder``: whose pools they were fitted on (the product checks it against the file's name)."""
    trees = []
    for (predictor,) in model._predictors:
        n = predictor.nodes
        trees.append({"feature": n["feature_idx"].tolist(), "threshold": n["num_threshold"].tolist(),
                      "left": n["left"].tolist(), "right": n["right"].tolist(),
                      "missing_left": n["missing_go_to_left"].astype(bool).tolist(),
                      "leaf": n["is_leaf"].astype(bool).tolist(), "value": n["value"].tolist()})
    depth = max(int(p.nodes["depth"].max()) for (p,) in model._predictors)
    return {"features": list(FEATURES), "embedder": embedder,
            "baseline": float(np.ravel(model._baseline_prediction)[0]), "depth": depth,
            "trees": trees, "fitted_by": "bench/fusion_rank.py (HistGradientBoostingClassifier, max_depth 3, "
            "150 iterations, learning rate 0.05, seed 0) on the tuning halves of every bench/quality.py set, "
            f"pools scored by {embedder}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="madial-zh,madial-en,conv-en,conv-zh,hard-en,hard-zh")
    ap.add_argument("--madial", type=Path, default=quality.MADIAL)
    ap.add_argument("--dialogue-tuning", type=Path, default=quality.DIALOGUE_TUNING, help="the dial-* sets' files")
    ap.add_argument("--checks", default="",
                    help="sets measured but not fitted on (tuning only: hard2-en,hard2-zh, a second generator's)")
    ap.add_argument("--half", default="both", choices=("both", "tuning"),
                    help="tuning: print no held-out column (read those once, at the end)")
    ap.add_argument("--pools", type=Path, help="cache of the collected pools (built when missing)")
    ap.add_argument("--out", type=Path, help="write the boosted trees here (the product: recall/ + "
                    "learned.MODEL_FILES[the embedder])")
    args = ap.parse_args()
    embedder = embedder_name()
    fitted = args.sets.split(",")
    checks = [n for n in args.checks.split(",") if n]
    pools = pools_of(fitted + checks, args.madial, args.pools, embedder, args.dialogue_tuning)
    tuning = [p for n in fitted for p in pools[n] if p[1]]
    col = {f: n for n, f in enumerate(FEATURES)}
    base = [col[f] for f in fusion_fit.FEATURES]
    every = list(range(len(FEATURES)))
    orders = {
        "fused": lambda f, prior: np.argsort(-f[:, col["fused"]] * prior, kind="stable"),
        "semantic": lambda f, prior: np.argsort(-f[:, col["semantic"]] * prior, kind="stable"),
        "lexical": lambda f, prior: np.argsort(-f[:, col["lexical"]] * prior, kind="stable"),
    }
    for name, (score, _) in {"logistic (first try's features)": fit_logistic(tuning, base),
                             "logistic": fit_logistic(tuning, every),
                             "pairwise": fit_pairwise(tuning, every),
                             "pairwise (first try's features)": fit_pairwise(tuning, base)}.items():
        orders[name] = (lambda s: lambda f, prior: np.argsort(s(f), kind="stable"))(score)
    boosted, model = fit_boosted(tuning, every)
    orders["boosted"] = lambda f, prior: np.argsort(boosted(f) * prior, kind="stable")
    exported = export(model, embedder)
    trees = learned.Trees.from_json(exported)
    orders["boosted, as the product evaluates it"] = by_probability(trees.margin)
    # the shipped files as they are (read before --out replaces one): this embedder's, and USE's
    for name in dict.fromkeys((embedder, learned.DEFAULT_EMBEDDER)):
        shipped = learned.Trees.from_json(json.loads(learned.model_path(name).read_text("utf-8")))
        orders[f"the shipped trees for {name} ({learned.model_path(name).name})"] = by_probability(shipped.margin)
    x = np.vstack([p[4] for p in tuning])
    drift = float(np.abs(trees.margin(x) - model.decision_function(x)).max())
    print(f"exported trees: {len(exported['trees'])}, largest margin difference from scikit-learn {drift:.2e}")
    if args.out:
        args.out.write_text(json.dumps(exported) + "\n")
    held = args.half == "both"
    print("| order | " + " | ".join(f"{n}{'*' if n in checks else ''} tun{' / held' if held else ''}"
                                     for n in pools) + " |")
    print("|---|" + "---:|" * len(pools))
    for name, order in orders.items():
        cells = [f"{r_at_5_with_prior([p for p in ps if p[1]], order):.1f}"
                 + (f" / {r_at_5_with_prior([p for p in ps if not p[1]], order):.1f}" if held else "")
                 for ps in pools.values()]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
