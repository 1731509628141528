"""Where MADial's misses are (design.md §issue-30, direction 1): for each question of a half, the
place of every gold memory in each channel's own order and in the fused and learned orders, over
one pool large enough to hold a user's every memory.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/madial_misses.py --half tuning \
        [--pools /tmp/madial_pools.pkl]

One brain holds both languages, tenants prefixed (``bench/quality.py``'s ``build``: every neural
vector in). Each
question is recalled once through ``RecallEngine`` with the ``fused`` preset and a pool of 400
(every memory of the user is a candidate; the learned ranker off), keeping every candidate's
channel scores, cosine and penalty, and once with the default engine (pool 32, learned on) for
the order a user gets. ``--pools`` caches them, so the offline orders below cost nothing to
recompute:

* ``semantic``: the late-interaction cosine alone (the harness's "semantic alone");
* ``lexical``: the relative BM25 alone;
* ``fused``: the preset's score (the default's order without the trees);
* ``learned``: the default engine's order (pool 32, trees).

Printed: R@5 of each order; how many gold memories each order has in the top 5 that the
semantic order has not, and the reverse (what the fusion gains and loses against the channel);
where the lost ones came from (lexical rank, cosine gap); whether the default's pool of 32
held every gold memory; the questions the fused order loses against semantic alone.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_fit  # noqa: E402
import quality  # noqa: E402

from hindbrain.recall.engine import RecallEngine  # noqa: E402
from hindbrain.recall.query import build_query  # noqa: E402
from hindbrain.recall.scoring import PRESETS  # noqa: E402
from hindbrain.schemas.api import RecallInput  # noqa: E402
from hindbrain.schemas.records import now_us  # noqa: E402


def _query(q: quality.Question, agent: str):
    return build_query(RecallInput(tenant=q.tenant, agent=agent, query=q.query, k=10, budget_tokens=100000,
                                   layers=["episodic"]), now_us())


def collect(brain, data: quality.DataSet, questions: list[quality.Question]) -> list[dict]:
    """Per question: the whole pool's channel scores (fused preset, no trees) and the default's order."""
    wide = RecallEngine(brain.index, PRESETS["fused"], pool=400, learned=False)
    default = RecallEngine(brain.index)
    out = []
    for q in questions:
        query = _query(q, data.agent)
        ranked = wide.recall(query).ranked
        ids = [s.doc.event_ids[0] if s.doc.event_ids else s.doc.id for s in ranked]
        out.append({
            "qid": q.qid, "gold": set(q.gold), "ids": ids, "query": q.query,
            "fused": np.array([s.score for s in ranked]),
            "cosine": np.array([np.nan if s.cosine is None else s.cosine for s in ranked]),
            "lexical": np.array([s.channel_scores.get("lexical", 0.0) for s in ranked]),
            "semantic": np.array([s.channel_scores.get("semantic", 0.0) for s in ranked]),
            "penalty": np.array([s.penalty for s in ranked]),
            "texts": {i: data.texts.get(i, "") for i in ids},
            "learned": [s.doc.event_ids[0] if s.doc.event_ids else s.doc.id for s in default.recall(query).ranked],
        })
    return out


def order(pool: dict, by: str) -> list[str]:
    if by == "learned":
        return pool["learned"]
    key = np.nan_to_num(pool[by], nan=-1.0) if by != "cosine" else np.nan_to_num(pool["cosine"], nan=-2.0)
    return [pool["ids"][i] for i in np.argsort(-key, kind="stable")]


def places(pool: dict, by: str) -> dict[str, int]:
    ranked = order(pool, by)
    return {g: (ranked.index(g) if g in ranked else 999) for g in pool["gold"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--pools", type=Path, help="cache of the collected pools (pickle)")
    ap.add_argument("--show", type=int, default=6, help="questions lost against semantic alone to print")
    args = ap.parse_args()
    if args.pools and args.pools.exists():
        pools = pickle.loads(args.pools.read_bytes())
    else:
        sets = [fusion_fit.prefixed(quality.madial(lang), lang) for lang in ("zh", "en")]
        everything = quality.DataSet("all", [e for d in sets for e in d.events], [])
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(everything, Path(home))
            try:
                pools = {d.name: collect(brain, d, d.questions) for d in sets}
            finally:
                brain.close()
        if args.pools:
            args.pools.write_bytes(pickle.dumps(pools))
    for name, every in pools.items():
        half = [p for p in every if args.half == "all" or
                (int(p["qid"].split("-")[1]) % 2 == 0) == (args.half == "tuning")]
        print(f"\n### {name}, {args.half} half: {len(half)} questions, pool sizes "
              f"{min(len(p['ids']) for p in half)}–{max(len(p['ids']) for p in half)}\n")
        for by in ("cosine", "lexical", "fused", "learned"):
            r5 = 100 * np.mean([quality.recall_at(p["gold"], order(p, by))[5] for p in half])
            print(f"R@5 {by:8s} {r5:5.1f}")
        in_pool = np.mean([len(p["gold"] & set(p["learned"])) / len(p["gold"]) for p in half])
        print(f"gold in the default's pool of {len(half[0]['learned'])}: {100 * in_pool:.1f} %")
        for by in ("fused", "learned"):
            gained = lost = 0
            q_better = q_worse = 0
            lost_lex, lost_gap = [], []
            for p in half:
                sem, other = places(p, "cosine"), places(p, by)
                g = sum(1 for x in p["gold"] if other[x] < 5 <= sem[x])
                lo = [x for x in p["gold"] if sem[x] < 5 <= other[x]]
                gained, lost = gained + g, lost + len(lo)
                q_better += g > len(lo)
                q_worse += len(lo) > g
                for x in lo:
                    i = p["ids"].index(x)
                    lost_lex.append(p["lexical"][i])
                    lost_gap.append(np.nanmax(p["cosine"]) - p["cosine"][i])
            print(f"{by} vs semantic alone: gold memories into the top 5 {gained}, out of it {lost}; "
                  f"questions better {q_better}, worse {q_worse}; lost ones' lexical score median "
                  f"{np.median(lost_lex) if lost_lex else float('nan'):.2f}, cosine gap to the best median "
                  f"{np.median(lost_gap) if lost_gap else float('nan'):.3f}")
        # where the semantic order's misses are: gold places beyond 5
        beyond = [places(p, "cosine")[g] for p in half for g in p["gold"]]
        print("gold places in the semantic order: "
              + ", ".join(f"{lo}-{hi}: {sum(lo <= b <= hi for b in beyond)}"
                          for lo, hi in ((0, 4), (5, 9), (10, 19), (20, 39), (40, 999))))
        shown = 0
        for p in half:
            sem, fus = places(p, "cosine"), places(p, "learned")
            if sum(v < 5 for v in fus.values()) < sum(v < 5 for v in sem.values()) and shown < args.show:
                shown += 1
                last = p["query"].strip().splitlines()[-1][:110]
                print(f"\n  {p['qid']} … {last}")
                top = order(p, "learned")[:5]
                for g in sorted(p["gold"]):
                    i = p["ids"].index(g)
                    print(f"    gold {g}: semantic place {sem[g]}, default place {fus[g]}, lexical "
                          f"{p['lexical'][i]:.2f}, cosine {p['cosine'][i]:.3f} — {p['texts'][g][:70]}")
                for t in top:
                    if t not in p["gold"]:
                        i = p["ids"].index(t)
                        print(f"    top {t}: lexical {p['lexical'][i]:.2f}, cosine {p['cosine'][i]:.3f} — "
                              f"{p['texts'][t][:70]}")


if __name__ == "__main__":
    main()
