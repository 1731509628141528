"""Learned-fusion variants for MADial chosen by cross-validation *inside* the tuning halves
(design.md §issue-30; docs/recall-quality.md, "MADial, round eleven").

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/fusion_rank.py --pools P
    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/fusion_cv.py --pools P --scratch DIR [--heldout]

Why cross-validation: the trees are fitted on the tuning halves, so a tuning R@5 of trees is
in-sample and flatters them (round ten shipped trees whose MADial gain was that). Here every
tuning question is scored by trees fitted on the *other* fold (2 folds by ``crc32(qid)``, every
set's tuning half; ``--fold-salt`` draws another split), so variants of the fit are compared
out of sample before the held-out halves are read once. The pools are ``bench/fusion_rank.py``'s
(the engine's fused pool of 32 a question, its ``learned.FEATURES``); the fit is the shipped one
(depth 3, 150 × 0.05, seed 0).

Variants, each a hypothesis of the brief:

* ``dialogue weight w``: each dialogue-form question's candidates weigh ``w`` in the fit (MADial is
  160 of ~2,900 tuning questions, so the trees mostly learn the other sets);
* ``+ feedback``: round nine's hand-set feedback as features the trees may use: each candidate's
  USE cosine to the semantic channel's best candidate, its mean cosine to the best three, and
  the rank of the first (USE vectors of the candidates' texts, cached in ``--scratch``);
* ``+ static e5``: a static e5 table built the model2vec way (every vocabulary token of the
  static tier embedded alone by e5 — ``--embed-e5-tokens`` writes them, ~10 min —, the rows
  centred, PCA to 256, SIF-weighted; a text is the sum of its tokens' rows, documents and
  queries alike, so neither ingest nor recall runs e5): the query's cosine, its gap to the
  pool's best and its rank;
* ``guard``: per dialogue query, a logistic model over the pool's agreement (top-5 overlap of
  the product and the semantic channel, of the lexical and semantic channels, lexical reach,
  terms, the cosine gaps at 1-5 and 5-6) predicts whether the product loses to the semantic
  channel; where it does, the semantic order is used. Fitted on MADial's tuning halves.

The rule, fixed before any run: a variant is worth building in the engine only if its
out-of-fold tuning R@5 gains ≥ 1.0 on both MADial languages over the shipped features and no
other set drops by more than 0.5. ``--heldout`` prints the held-out halves (trees fitted on
every tuning half) for the record, never to choose.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall import learned  # noqa: E402
from hindbrain.recall.dialogue import views  # noqa: E402
from hindbrain.recall.distill import _use_pieces, sif_weights, vocabulary  # noqa: E402
from hindbrain.recall.static import StaticTable  # noqa: E402

COL = {f: n for n, f in enumerate(learned.FEATURES)}
BASE = list(range(len(learned.FEATURES)))
Pool = tuple  # (qid, tuning, gold, candidate ids, features): fusion_rank.collect's rows


FOLD_SALT = [""]  # --fold-salt: another split of the same questions, to see how much the split decides


def fold_of(qid: str) -> int:
    """The first split is ``crc32(qid)``'s parity; a salted one is SHA-1's. A salt prefixed to
    crc32 is no new split: crc32 is affine over GF(2), so two one-letter salts flip the parity of
    every question id of one length alike and draw the same partition (seen: salts c and d)."""
    if not FOLD_SALT[0]:
        return zlib.crc32(qid.encode()) % 2
    return hashlib.sha1(f"{FOLD_SALT[0]}:{qid}".encode()).digest()[0] % 2


def fit_trees(pools: list[Pool], cols: list[int], dialogue_weight: float = 1.0) -> HistGradientBoostingClassifier:
    x = np.vstack([p[4][:, cols] for p in pools])
    y = np.concatenate([[float(i in p[2]) for i in p[3]] for p in pools])
    w = np.concatenate([np.full(len(p[3]), dialogue_weight if p[4][0, COL["dialogue"]] else 1.0) for p in pools])
    return HistGradientBoostingClassifier(max_depth=3, max_iter=150, learning_rate=0.05,
                                          random_state=0).fit(x, y, sample_weight=w)


def hits(pools: list[Pool], order: Callable[[np.ndarray], np.ndarray]) -> list[float]:
    return [quality.recall_at(gold, [ids[i] for i in order(x)])[5] for _, _, gold, ids, x in pools]


def by_trees(model, cols: list[int]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: np.argsort(-model.predict_proba(x[:, cols])[:, 1], kind="stable")


def out_of_fold(pools: dict[str, list[Pool]], cols: list[int], dialogue_weight: float = 1.0) -> dict[str, float]:
    """Every set's tuning R@5, each question ranked by trees fitted on the other fold."""
    tuning = [p for ps in pools.values() for p in ps if p[1]]
    per = {n: [] for n in pools}
    for fold in (0, 1):
        model = fit_trees([p for p in tuning if fold_of(p[0]) != fold], cols, dialogue_weight)
        for n, ps in pools.items():
            per[n] += hits([p for p in ps if p[1] and fold_of(p[0]) == fold], by_trees(model, cols))
    return {n: 100 * float(np.mean(v)) for n, v in per.items()}


def with_columns(pools: dict[str, list[Pool]], extra: Callable[[str, Pool], np.ndarray]) -> dict[str, list[Pool]]:
    return {n: [(*p[:4], np.hstack([p[4], extra(n, p)])) for p in ps] for n, ps in pools.items()}


def rank01(values: np.ndarray) -> np.ndarray:
    """Each value's place, best (highest) first, scaled to 0..1."""
    return np.argsort(np.argsort(-values, kind="stable"), kind="stable") / max(len(values) - 1, 1)


def unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


# -- the features of the variants -------------------------------------------------------------
def feedback_columns(vectors: dict[str, dict[str, np.ndarray]]) -> Callable[[str, Pool], np.ndarray]:
    def extra(name: str, p: Pool) -> np.ndarray:
        v = np.array([vectors[name][i] for i in p[3]], dtype=np.float64)
        semantic = np.argsort(-p[4][:, COL["semantic"]], kind="stable")
        to_best = v @ v[semantic[0]]
        return np.c_[to_best, (v @ v[semantic[:3]].T).mean(1), rank01(to_best)]
    return extra


def model2vec_table(path: Path, dim: int = 256) -> StaticTable:
    """The e5 token rows centred, reduced by PCA and SIF-weighted (model2vec's recipe; the
    shipped USE table is uncentred so it maps back into USE's space, which e5's table need not)."""
    z = np.load(path, allow_pickle=True)
    rows = z["rows"].astype(np.float64)
    rows -= rows.mean(0)
    _, _, vt = np.linalg.svd(rows, full_matrices=False)
    reduced = rows @ vt[:dim].T * sif_weights(z["log_probs"])[:, None]
    return StaticTable(list(z["tokens"]), reduced.astype(np.float32), np.eye(dim, dtype=np.float32), "e5-m2v")


def static_columns(table: StaticTable, texts: dict[str, dict[str, str]],
                   queries: dict[str, dict[str, str]]) -> Callable[[str, Pool], np.ndarray]:
    def extra(name: str, p: Pool) -> np.ndarray:
        q = queries[name][p[0]]
        v = views(q)
        qv = unit(table.pooled([v.joined if v.form == "dialogue" else q]))[0]
        cos = unit(table.pooled([texts[name].get(i, "") for i in p[3]])) @ qv
        return np.c_[cos, cos.max() - cos, rank01(cos)]
    return extra


def embed_e5_tokens(out: Path) -> None:
    """e5's vector of every static-tier vocabulary token, embedded alone (``E5Embedder``)."""
    from hindbrain.recall.embed import E5Embedder

    vocab = vocabulary(*_use_pieces(), 40_000)
    tokens = [t for t, _ in vocab]
    e5 = E5Embedder()
    rows = np.concatenate([e5.embed_passages(tokens[s : s + 1000]) for s in range(0, len(tokens), 1000)])
    np.savez(out, tokens=np.array(tokens, dtype=object), log_probs=np.array([lp for _, lp in vocab]), rows=rows)


# -- the guard --------------------------------------------------------------------------------
def agreement(x: np.ndarray, product: np.ndarray) -> np.ndarray:
    semantic = np.argsort(-x[:, COL["semantic"]], kind="stable")
    lexical = np.argsort(-x[:, COL["lexical"]], kind="stable")
    cos = np.sort(x[:, COL["cosine"]])[::-1]
    return np.array([len(set(product[:5]) & set(semantic[:5])) / 5, len(set(lexical[:5]) & set(semantic[:5])) / 5,
                     x[0, COL["lexical_reach"]], x[0, COL["nterms"]], cos[0] - cos[4], cos[4] - cos[5]])


def guard_rows(pools: list[Pool], trees: learned.Trees) -> list[tuple[str, np.ndarray, float, float]]:
    """(qid, agreement, the product's R@5, the semantic channel's R@5) per question."""
    rows = []
    for qid, _, gold, ids, x in pools:
        product = np.argsort(-trees.margin(x), kind="stable")
        semantic = np.argsort(-x[:, COL["semantic"]], kind="stable")
        rows.append((qid, agreement(x, product), quality.recall_at(gold, [ids[i] for i in product])[5],
                     quality.recall_at(gold, [ids[i] for i in semantic])[5]))
    return rows


def guarded(train: list, test: list) -> tuple[list[float], int]:
    """``test``'s R@5 with the guard fitted on ``train``, and how many questions it switched."""
    y = np.array([r[2] < r[3] - 1e-9 for r in train], dtype=float)
    if y.sum() < 2:  # too few losses to learn from: the guard never switches
        return [r[2] for r in test], 0
    x = np.array([r[1] for r in train])
    mean, scale = x.mean(0), np.maximum(x.std(0), 1e-6)
    model = LogisticRegression(max_iter=1000, class_weight="balanced").fit((x - mean) / scale, y)
    switch = model.predict((np.array([r[1] for r in test]) - mean) / scale) > 0.5
    return [r[3] if s else r[2] for r, s in zip(test, switch, strict=True)], int(switch.sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pools", type=Path, required=True, help="bench/fusion_rank.py's --pools cache")
    ap.add_argument("--scratch", type=Path, required=True, help="where the USE vectors and e5 tokens are cached")
    ap.add_argument("--embed-e5-tokens", action="store_true", help="(re)build the e5 token rows (~10 min)")
    ap.add_argument("--heldout", action="store_true", help="also print the held-out halves (never to choose)")
    ap.add_argument("--fold-salt", default="", help="prefixed to each qid before crc32: another 2-fold split")
    args = ap.parse_args()
    FOLD_SALT[0] = args.fold_salt
    cached = pickle.loads(args.pools.read_bytes())
    pools, trees = cached["pools"], learned.trees(cached["embedder"])
    data = {n: quality.madial(n.split("-")[1]) if n.startswith("madial-") else quality.SETS[n]() for n in pools}
    texts = {n: d.texts for n, d in data.items()}
    queries = {n: {q.qid: q.query for q in d.questions} for n, d in data.items()}
    args.scratch.mkdir(parents=True, exist_ok=True)
    use_cache, tokens = args.scratch / "use_vectors.pkl", args.scratch / "e5_tokens.npz"
    if not use_cache.exists():
        from hindbrain.recall.embed import UseEmbedder

        use = UseEmbedder()
        needed = {n: sorted({i for p in ps for i in p[3]}) for n, ps in pools.items()}
        use_cache.write_bytes(pickle.dumps({n: dict(zip(ids, use.embed_passages([texts[n][i] for i in ids]),
                                                        strict=True)) for n, ids in needed.items()}))
    if args.embed_e5_tokens or not tokens.exists():
        embed_e5_tokens(tokens)
    extra3 = [len(BASE), len(BASE) + 1, len(BASE) + 2]
    arms = {"the shipped features": (pools, BASE, 1.0),
            **{f"dialogue weight {w:g}": (pools, BASE, w) for w in (4.0, 16.0)},
            "+ feedback": (with_columns(pools, feedback_columns(pickle.loads(use_cache.read_bytes()))),
                           BASE + extra3, 1.0),
            "+ static e5": (with_columns(pools, static_columns(model2vec_table(tokens), texts, queries)),
                            BASE + extra3, 1.0)}
    names = list(pools)
    print("| trees, out-of-fold tuning R@5 | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names))
    for label, (ps, cols, w) in arms.items():
        r = out_of_fold(ps, cols, w)
        print(f"| {label} | " + " | ".join(f"{r[n]:.1f}" for n in names) + " |", flush=True)
    dialogue = [n for n in names if n.startswith("madial-")]
    rows = {n: guard_rows([p for p in pools[n] if p[1]], trees) for n in dialogue}
    every = [r for n in dialogue for r in rows[n]]
    for n in dialogue:
        lost = sum(r[2] < r[3] - 1e-9 for r in rows[n])
        won = sum(r[2] > r[3] + 1e-9 for r in rows[n])
        print(f"{n} tuning: the shipped trees lose to the semantic channel on {lost} questions, beat it on {won}")
    for fold in (0, 1):
        for n in dialogue:
            test = [r for r in rows[n] if fold_of(r[0]) == fold]
            got, switched = guarded([r for r in every if fold_of(r[0]) != fold], test)
            print(f"guard, fold {fold}, {n}: R@5 {100 * np.mean(got):.1f} (product "
                  f"{100 * np.mean([r[2] for r in test]):.1f}), switched {switched}")
    if args.heldout:
        print("| trees on every tuning half, held-out R@5 | " + " | ".join(names) + " |\n|---|" + "---:|" * len(names))
        for label, (ps, cols, w) in arms.items():
            model = fit_trees([p for pp in ps.values() for p in pp if p[1]], cols, w)
            cells = [100 * np.mean(hits([p for p in ps[n] if not p[1]], by_trees(model, cols))) for n in names]
            print(f"| {label} | " + " | ".join(f"{c:.1f}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
