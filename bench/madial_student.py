"""A query student distilled from e5 (issue 30, round thirteen), measured offline on MADial.

The student maps what the default recall already computes for a dialogue's joined turns (USE's
query vector, the static tier's vector, or the static tier's token bag) to e5's query vector;
the memories keep e5's own vectors (the neural tier's, off the recall path). Fitted on
``bench/madial_student_corpus.py``'s teacher vectors (no held-out question among them), both
languages in one student. Scored as the quality mode scores e5: USE's late interaction plus
w × the student's cosine, each standardised per query, w chosen on the tuning halves.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/madial_student.py \
        --corpus /tmp/student --cache /tmp/offline [--heldout]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from madial_offline import Lang, build, late, minmax, relative, std  # noqa: E402


def unit(x: np.ndarray) -> np.ndarray:
    return x / (np.linalg.norm(x, axis=-1, keepdims=True) + 1e-9)


def ridge(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """W minimising |xW - y|² + lam |W|², with a bias column."""
    x1 = np.hstack([x, np.ones((len(x), 1), np.float32)])
    return np.linalg.solve(x1.T @ x1 + lam * np.eye(x1.shape[1]), x1.T @ y).astype(np.float32)


def apply_ridge(w: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    head = lambda x: unit(x @ w[:-1] + w[-1])  # noqa: E731
    head.weights = w
    return head


def mlp(x: np.ndarray, y: np.ndarray, hidden: int, seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    from sklearn.neural_network import MLPRegressor

    net = MLPRegressor(hidden_layer_sizes=(hidden,), alpha=1e-4, max_iter=200, early_stopping=True,
                       random_state=seed, learning_rate_init=1e-3, batch_size=128)
    net.fit(x, y)
    return lambda q: unit(net.predict(q).astype(np.float32))


def e5_bag(texts) -> np.ndarray:
    """The mean of e5's input embeddings of a text's pieces (no layer run: a table look-up)."""
    from hindbrain.recall.e5_query import E5Int8, dequantize

    if not hasattr(e5_bag, "model"):
        e5_bag.model = E5Int8(layers=1)
    m = e5_bag.model
    out = np.zeros((len(texts), m.H), dtype=np.float32)
    for n, text in enumerate(texts):
        ids = m.ids(str(text))[1 + len(m._prefix):-1]
        if ids:
            out[n] = dequantize(m._word[np.asarray(ids)], len(ids), m.H).mean(0)
    return out


_SHALLOW: dict[int, object] = {}


def e5_shallow(texts, layers: int, tokens: int) -> np.ndarray:
    """e5's first ``layers`` layers over a text's last ``tokens`` tokens, mean-pooled (unit rows):
    an early exit whose head the student learns."""
    from hindbrain.recall.e5_query import E5Int8

    if layers not in _SHALLOW:
        _SHALLOW[layers] = E5Int8(layers=layers)
    return _SHALLOW[layers].embed([str(t) for t in texts], max_tokens=tokens)


def shallow_key(feat: str) -> tuple[int, int] | None:
    """"e5L4t32" → (4, 32)."""
    if not feat.startswith("e5L"):
        return None
    layers, tokens = feat[3:].split("t")
    return int(layers), int(tokens)


FEATURES: dict[str, Callable[[dict], np.ndarray]] = {
    "use": lambda d: d["use"],
    "use+static": lambda d: np.hstack([d["use"], d["static"]]),
    "e5bag": lambda d: d["e5bag"],
    "use+static+e5bag": lambda d: np.hstack([d["use"], d["static"], d["e5bag"]]),
}


def query_cpu(texts: list[str], layers: int, tokens: int, head: Callable) -> tuple[float, float]:
    """Thread CPU (ms, p50 / p99) of the student's whole query pass over each text alone: the
    shallow e5 layers over its last ``tokens`` tokens, then the fitted head."""
    e5_shallow(texts[:2], layers, tokens)  # loaded
    took = []
    for text in texts:
        t0 = time.thread_time_ns()
        head(e5_shallow([text], layers, tokens))
        took.append((time.thread_time_ns() - t0) / 1e6)
    return float(np.percentile(took, 50)), float(np.percentile(took, 99))


def query_texts(lang: str) -> list[str]:
    """The texts of ``madial_offline.build``'s query rows, in its order (views, then turns)."""
    import json

    from madial_offline import MADIAL

    from hindbrain.recall.dialogue import parse_turns, views

    rows = [json.loads(line) for line in (MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    return [t for r in rows if r.get("gold")
            for t in views(r["query"]).texts + [x.text for x in parse_turns(r["query"])]]


def load_corpus(root: Path) -> dict[str, np.ndarray]:
    parts = [dict(np.load(root / f"student_{lang}.npz", allow_pickle=True)) for lang in ("zh", "en")]
    return {k: np.concatenate([p[k] for p in parts]) for k in ("texts", "e5", "use", "static")}


def fold_of(query_id: int) -> int:
    """Two folds of the tuning half (even ids): 0, 4, 8, … and 2, 6, 10, …"""
    return (query_id // 2) % 2


def fold_tags(texts: np.ndarray) -> np.ndarray:
    """(texts, 2) bool: the text holds a user turn of a tuning dialogue of that fold (it was cut
    from it), so a student scored on that fold must not have seen it."""
    import json

    from madial_student_corpus import MADIAL, user_turns

    turns: dict[str, set[int]] = {}
    for lang in ("zh", "en"):
        for line in (MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines():
            r = json.loads(line)
            if r.get("gold") and r["id"] % 2 == 0:
                for t in user_turns(r["query"]):
                    turns.setdefault(t, set()).add(fold_of(r["id"]))
    tags = np.zeros((len(texts), 2), dtype=bool)
    for n, text in enumerate(texts):
        for line in str(text).split("\n"):
            for f in turns.get(line, ()):
                tags[n, f] = True
    return tags


def hits(data: Lang, half: str, score: Callable, fold: int | None = None) -> list[float]:
    """Each question's share of gold in the top 5, on one half (one fold of it)."""
    got = []
    for q in data.queries:
        if (half == "tuning") == bool(q.id % 2) or (fold is not None and fold_of(q.id) != fold):
            continue
        order = np.argsort(-score(q), kind="stable")[:5]
        got.append(len(set(data.ids[q.cand][order].tolist()) & set(q.gold)) / len(q.gold))
    return got


def r_at_5(data: Lang, half: str, score: Callable) -> float:
    return 100 * float(np.mean(hits(data, half, score)))


def out_of_fold(data: Lang, scores: list[Callable]) -> float:
    """Tuning R@5, each fold's questions scored by the student fitted without that fold's texts."""
    return 100 * float(np.mean([h for f in (0, 1) for h in hits(data, "tuning", scores[f], f)]))


def blend(data: Lang, student_q: np.ndarray, w: float, memories: np.ndarray | None = None) -> Callable:
    """USE's late interaction + w × cosine of the student's joined-turns vector to the memories'
    vectors: e5's own (the neural tier's), or ``memories`` (the student's of the memories)."""
    mem = data.vec["me"] if memories is None else memories

    def score(q):
        s = late(data.vec["mu"][q.cand], data.vec["qu"], q.views)
        return s if w == 0 else std(s) + w * std(mem[q.cand] @ student_q[q.views[0]])
    return score


def fused(data: Lang, semantic: Callable, lexical: float = 0.1) -> Callable:
    """The engine's dialogue end over a semantic score: min-max semantic + lexical / 1.2 × BM25
    relative to its best (``madial_offline.lexical_weight``; no trees)."""
    return lambda q: minmax(semantic(q)) + lexical / 1.2 * relative(q.bm25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--cache", type=Path, required=True, help="bench/madial_offline.py's vector cache")
    ap.add_argument("--heldout", action="store_true", help="also the held-out halves, at the tuning pick")
    ap.add_argument("--save-head", type=Path, help="a folder: each ridge student's head (W with its bias row)")
    ap.add_argument("--weights", default="0.25,0.5,1", help="w of the student's standardised cosine")
    ap.add_argument("--students", default="ridge-use,ridge-use+static,mlp-use+static")
    args = ap.parse_args()
    corpus = load_corpus(args.corpus)
    langs = {lang: build(lang, args.cache) for lang in ("zh", "en")}
    n = len(corpus["e5"])
    rng = np.random.default_rng(0)
    val = rng.random(n) < 0.1
    weights = tuple(float(w) for w in args.weights.split(","))
    print(f"corpus: {n} texts ({val.sum()} aside for fidelity)")
    print("| student | cos to e5, aside (p50) | cos to e5, MADial tuning joined, out of fold (p50) | alone zh / en | "
          + " | ".join(f"w {w} zh / en" for w in weights) + " | pick | "
          + " | ".join(f"student memories, w {w}" for w in weights)
          + " | pick | held-out, e5 memories | held-out, student memories |")
    print("|---|---|---|---|" + "---|" * (2 * len(weights)) + "---|---|---|---|")
    base = {(lang, half, f): r_at_5(d, half, fused(d, blend(d, d.vec["qe"], 0)) if f else blend(d, d.vec["qe"], 0))
            for lang, d in langs.items() for half in ("tuning", "heldout") for f in (False, True)}
    print("| USE alone (tuning; held-out; fused tuning; fused held-out) | | | "
          + "; ".join(f"{base['zh', h, f]:.1f} / {base['en', h, f]:.1f}" for f in (False, True)
                      for h in ("tuning", "heldout")) + " |")
    tags = fold_tags(corpus["texts"])
    if "e5bag" in args.students:
        corpus["e5bag"] = e5_bag(corpus["texts"])
        for lang, d in langs.items():
            d.vec["qb"] = e5_bag(query_texts(lang))
            d.vec["mb"] = e5_bag(d.texts)
            assert len(d.vec["qb"]) == len(d.vec["qu"])
    for name in args.students.split(","):
        kind, feat = name.split("-", 1)
        base_feat = feat.removeprefix("use+static+")
        key = shallow_key(base_feat)
        if key and base_feat not in corpus:
            cached = args.corpus / f"shallow_{base_feat}.npz"
            if not cached.exists():
                t0 = time.process_time()
                got = {"corpus": e5_shallow(corpus["texts"], *key)}
                print(f"{base_feat}: {1000 * (time.process_time() - t0) / len(corpus['texts']):.2f} ms CPU a text")
                for lang, d in langs.items():
                    got["q" + lang], got["m" + lang] = e5_shallow(query_texts(lang), *key), e5_shallow(d.texts, *key)
                np.savez(cached, **got)
            got = dict(np.load(cached))
            corpus[base_feat] = got["corpus"]
            for lang, d in langs.items():
                d.vec["q" + base_feat], d.vec["m" + base_feat] = got["q" + lang], got["m" + lang]
        if key:
            FEATURES[feat] = (lambda d, f=base_feat: d[f]) if feat == base_feat else (
                lambda d, f=base_feat: np.hstack([d["use"], d["static"], d[f]]))
            feat_key = base_feat
        x, y = FEATURES[feat](corpus), corpus["e5"]

        def fit(keep: np.ndarray, kind=kind, x=x, y=y) -> Callable:
            return apply_ridge(ridge(x[keep], y[keep], 1.0)) if kind == "ridge" else mlp(x[keep], y[keep], 1024)

        t0 = time.process_time()
        full = fit(~val)
        if args.save_head and kind == "ridge":  # the head for bench/e5_cheap_sdk.py --head
            np.save(args.save_head / f"head_{feat}.npy", full.weights)
        fit_s = time.process_time() - t0
        folds = [fit(~tags[:, f]) for f in (0, 1)]
        cos_val = float(np.median((full(x[val]) * unit(y[val])).sum(1)))
        cells, cos_q, rows, mems = [], [], {}, {}
        for lang, d in langs.items():
            feats = FEATURES[feat]({"use": d.vec["qu"], "static": d.vec["qs"], "e5bag": d.vec.get("qb"),
                                    (feat_key if key else feat): d.vec.get("q" + (feat_key if key else feat))})
            rows[lang] = [full(feats)] + [s(feats) for s in folds]
            mfeats = FEATURES[feat]({"use": d.vec["mu"], "static": d.vec["ms"], "e5bag": d.vec.get("mb"),
                                     (feat_key if key else feat): d.vec.get("m" + (feat_key if key else feat))})
            mems[lang] = [full(mfeats)] + [s(mfeats) for s in folds]
            joined = [q.views[0] for q in d.queries if q.id % 2 == 0]
            oof = np.where(np.array([fold_of(q.id) for q in d.queries if q.id % 2 == 0])[:, None] == 0,
                           rows[lang][1][joined], rows[lang][2][joined])
            cos_q.append(float(np.median((oof * d.vec["qe"][joined]).sum(1))))
        alone = [out_of_fold(d, [lambda q, d=d, s=rows[lang][1 + f]: d.vec["me"][q.cand] @ s[q.views[0]]
                                 for f in (0, 1)]) for lang, d in langs.items()]
        for w in weights:
            cells.append([out_of_fold(d, [blend(d, rows[lang][1 + f], w) for f in (0, 1)])
                          for lang, d in langs.items()])
        pick = int(np.argmax([c[0] + c[1] for c in cells]))
        sym = [[out_of_fold(d, [blend(d, rows[lang][1 + f], w, mems[lang][1 + f]) for f in (0, 1)])
                for lang, d in langs.items()] for w in weights]
        spick = int(np.argmax([c[0] + c[1] for c in sym]))
        # the dialogue end's order on the tuning half, out of fold: read without the held-out half
        fz = [[out_of_fold(d, [fused(d, blend(d, rows[lang][1 + f], weights[spick], mems[lang][1 + f]))
                               for f in (0, 1)]) for lang, d in langs.items()]]
        held = f"fused tuning, out of fold: {fz[0][0]:.1f} / {fz[0][1]:.1f}"
        if args.heldout:
            h = [r_at_5(d, "heldout", blend(d, rows[lang][0], weights[pick])) for lang, d in langs.items()]
            hs = [r_at_5(d, "heldout", blend(d, rows[lang][0], weights[spick], mems[lang][0]))
                  for lang, d in langs.items()]
            fz += [[r_at_5(d, "heldout", fused(d, blend(d, rows[lang][0], weights[spick],
                                                        mems[lang][0] if sm else None)))
                    for lang, d in langs.items()] for sm in (False, True)]
            held = (f"{h[0]:.1f} / {h[1]:.1f} | {hs[0]:.1f} / {hs[1]:.1f} | fused: "
                    + " — ".join(f"{a:.1f} / {b:.1f}" for a, b in fz))
        if key:
            joined = [str(t) for lang in langs for t in np.array(query_texts(lang), dtype=object)[
                [q.views[0] for q in langs[lang].queries]]]
            # a combined student's USE and static parts are the default's own: the shallow pass is the cost
            p50, p99 = query_cpu(joined, *key, full if feat == base_feat else (lambda v: v))
            name += f", query CPU p50 {p50:.2f} / p99 {p99:.2f} ms"
        print(f"| {name} (fit {fit_s:.0f} s) | {cos_val:.3f} | {cos_q[0]:.3f} / {cos_q[1]:.3f} | "
              f"{alone[0]:.1f} / {alone[1]:.1f} | " + " | ".join(f"{a:.1f} / {b:.1f}" for a, b in cells)
              + f" | w {weights[pick]} | " + " | ".join(f"{a:.1f} / {b:.1f}" for a, b in sym)
              + f" | w {weights[spick]} | {held} |", flush=True)


if __name__ == "__main__":
    main()
