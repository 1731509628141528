"""Fusion learned, not hand-set (design.md §issue-30.3): a logistic-regression ranker over the channel
features of each recall's candidates, fitted on the tuning halves of every set together,
compared with the default (per-form weights) on the held-out halves.

    .venv/bin/python bench/fusion_fit.py --madial <shared>/eval-data/madial-bench/derived
    .venv/bin/python bench/fusion_fit.py --sets conv-en,conv-zh --out /tmp/fusion.json

One brain holds every set (MADial's tenants are prefixed by language: zh and en share user
ids). For each question the default engine's pool (``POOL`` best candidates, the expansion
included) is taken with its features; the model re-orders that pool. Both rankings are
scored on the same pool, so the comparison is the fusion alone (the gate, which cuts
near-duplicates afterwards, is left out of both). Features (``features``): each channel's
normalised score, the default's fused score and its share of the best, the query's
associative share, the item's kind, its age relative to the candidates, and the expansion
(its kind and score). Deterministic (liblinear, fixed data order): the same run prints the
same numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall.engine import RecallEngine  # noqa: E402
from hindbrain.recall.expand import VIA_KINDS  # noqa: E402
from hindbrain.recall.query import build_query  # noqa: E402
from hindbrain.recall.scoring import PRESETS  # noqa: E402
from hindbrain.schemas.api import RecallInput  # noqa: E402
from hindbrain.schemas.records import now_us  # noqa: E402

POOL = 40
FEATURES = ("lexical", "semantic", "graph", "scenario", "freshness", "fused", "fused_share", "associative",
            "message", "age_rank", *(f"via_{k}" for k in VIA_KINDS), "expansion_score")


def features(ranked, associative: float) -> np.ndarray:
    """One row per candidate (``FEATURES``), from the engine's scored pool."""
    best = max((s.score for s in ranked), default=0.0) or 1.0
    ts = np.array([s.doc.ts_us for s in ranked], dtype=np.float64)
    age_rank = (np.argsort(np.argsort(-ts, kind="stable"), kind="stable") / max(1, len(ranked) - 1)
                if len(ranked) else ts)
    rows = []
    for n, s in enumerate(ranked):
        e = s.why.get("expansion") or {}
        kind = e.get("via", "").split(":", 1)[0]
        rows.append([*(s.channel_scores[ch] for ch in ("lexical", "semantic", "graph", "scenario", "freshness")),
                     s.score, s.score / best, associative, float(s.doc.event_kind == "message"), age_rank[n],
                     *(float(kind == k) for k in VIA_KINDS), e.get("score", 0.0)])
    return np.array(rows, dtype=np.float64).reshape(len(ranked), len(FEATURES))


def collect(brain, data: quality.DataSet) -> list[tuple[quality.Question, list[str], np.ndarray]]:
    engine = RecallEngine(brain.index, PRESETS["fused"], pool=POOL)
    out = []
    for q in data.questions:
        query = build_query(RecallInput(tenant=q.tenant, agent=data.agent, query=q.query, k=10,
                                        budget_tokens=100000, layers=["episodic"]), now_us())
        ranked = engine.recall(query).ranked
        ids = [s.doc.event_ids[0] if s.doc.event_ids else s.doc.id for s in ranked]
        out.append((q, ids, features(ranked, query.associative)))
    return out


def r_at_5(pools, order_of) -> float:
    return 100 * float(np.mean([quality.recall_at(q.gold, [ids[i] for i in order_of(x)])[5] for q, ids, x in pools]))


def prefixed(data: quality.DataSet, prefix: str) -> quality.DataSet:
    """The set with its tenants renamed ``prefix-tenant`` (one brain holds every set)."""
    events = [{**e, "tenant": f"{prefix}-{e['tenant']}"} for e in data.events]
    questions = [quality.Question(q.qid, f"{prefix}-{q.tenant}", q.query, q.gold, q.tuning, q.category)
                 for q in data.questions]
    return quality.DataSet(data.name, events, questions, data.texts, data.agent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="madial-zh,madial-en,conv-en,conv-zh")
    ap.add_argument("--madial", type=Path, default=quality.MADIAL)
    ap.add_argument("--out", type=Path, help="write the fitted coefficients (JSON) here")
    args = ap.parse_args()
    sets = [prefixed(quality.madial(n.split("-")[1], args.madial) if n.startswith("madial-") else quality.SETS[n](),
                     n) for n in args.sets.split(",")]
    everything = quality.DataSet("all", [e for d in sets for e in d.events], [])
    with tempfile.TemporaryDirectory() as home:
        brain = quality.build(everything, Path(home))
        try:
            pools = {d.name: collect(brain, d) for d in sets}
        finally:
            brain.close()
    tuning = [p for d in pools.values() for p in d if p[0].tuning]
    x = np.vstack([p[2] for p in tuning])
    y = np.concatenate([[float(i in p[0].gold) for i in p[1]] for p in tuning])
    scale = np.maximum(x.std(axis=0), 1e-6)
    mean = x.mean(axis=0)
    model = LogisticRegression(C=1.0, solver="liblinear", max_iter=1000).fit((x - mean) / scale, y)
    coef = model.coef_[0]
    print("| set (held-out) | default R@5 | learned R@5 | default R@5 (tuning) | learned R@5 (tuning) |")
    print("|---|---:|---:|---:|---:|")
    fused = FEATURES.index("fused")

    def default_order(f):
        return np.argsort(-f[:, fused], kind="stable")

    def learned_order(f):
        return np.argsort(-(((f - mean) / scale) @ coef), kind="stable")

    for name, p in pools.items():
        held, tune = [t for t in p if not t[0].tuning], [t for t in p if t[0].tuning]
        print(f"| {name} | {r_at_5(held, default_order):.1f} | {r_at_5(held, learned_order):.1f} | "
              f"{r_at_5(tune, default_order):.1f} | {r_at_5(tune, learned_order):.1f} |", flush=True)
    print("coefficients (standardised):", ", ".join(f"{f} {c:+.2f}" for f, c in zip(FEATURES, coef, strict=True)))
    if args.out:
        args.out.write_text(json.dumps({"features": FEATURES, "mean": mean.round(6).tolist(),
                                        "scale": scale.round(6).tolist(), "coef": coef.round(6).tolist(),
                                        "intercept": float(model.intercept_[0])}, indent=1) + "\n")


if __name__ == "__main__":
    main()
