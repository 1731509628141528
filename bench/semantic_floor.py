"""Never below the semantic channel on dialogues (design.md §issue-30): the fused order with the
semantic channel's first ``s`` candidates kept in the top 5, measured in the engine's own pools.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/fusion_rank.py --pools P --sets madial-zh,madial-en
    .venv/bin/python bench/semantic_floor.py --pools P [--half tuning]

R@5 reads only *which* candidates are in the first five, so a fusion that keeps the semantic
channel's first ``s`` there can lose against the channel alone only through the channel's
candidates ``s + 1 … 5``: with ``s = 5`` the two have the same R@5 on every question (provably;
the fusion then only orders the five), with ``s = 0`` it is the product's order. The pools are
``bench/fusion_rank.py``'s (the fused pool of 32 a question, ``--pools`` cache); the product's
order is the shipped trees' (``recall.learned``, for the embedder that scored the pools) over
them, as ``RecallEngine`` applies them. Dialogue-form queries only (the ``dialogue`` feature):
other queries keep the product's order.

The rule that picks ``s``, fixed before any run: the best *worst* margin over the sets
(R@5 − the semantic channel's R@5 in the same pools), ties by the mean R@5, on the tuning halves;
the held-out halves are printed for the record (``--half heldout``), never to choose.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall import learned  # noqa: E402

COL = {f: n for n, f in enumerate(learned.FEATURES)}
TOP = 5


def kept_top(product: list[int], semantic: list[int], s: int, top: int = TOP) -> list[int]:
    """``product`` (candidate numbers, best first) with ``semantic[:s]`` all inside its first
    ``top``: the product's own candidates fill the slots the semantic ones leave, each in the
    product's order; the rest follows in the product's order."""
    kept = set(semantic[:s])
    head: list[int] = []
    for c in product:  # a free slot goes to the product's next candidate only while one is left
        if len(head) == top:  # for every kept candidate still to come
            break
        if c in kept or top - len(head) > len(kept - set(head)):
            head.append(c)
    return head + [c for c in product if c not in head]


def order(x: np.ndarray, trees: learned.Trees, s: int) -> list[int]:
    product = np.argsort(-trees.margin(x), kind="stable").tolist()
    if s == 0 or not x[0, COL["dialogue"]]:
        return product
    return kept_top(product, np.argsort(-x[:, COL["semantic"]], kind="stable").tolist(), s)


def r_at_5(pools, order_of) -> tuple[float, list[float]]:
    hits = [quality.recall_at(gold, [ids[i] for i in order_of(x)])[5] for _, _, gold, ids, x in pools]
    return 100 * float(np.mean(hits)) if hits else 0.0, hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pools", type=Path, required=True, help="bench/fusion_rank.py's --pools cache")
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout"))
    args = ap.parse_args()
    cached = pickle.loads(args.pools.read_bytes())
    trees = learned.trees(cached["embedder"])
    pools = {name: [p for p in ps if p[1] == (args.half == "tuning")] for name, ps in cached["pools"].items()}
    print(f"pools scored by {cached['embedder']}, trees fitted on {trees.embedder}'s; {args.half} halves")
    semantic = {n: r_at_5(ps, lambda x: np.argsort(-x[:, COL["semantic"]], kind="stable").tolist())
                for n, ps in pools.items()}
    print("| order | " + " | ".join(f"{n} (better / worse than semantic)" for n in pools) + " | worst margin |")
    print("|---|" + "---:|" * (len(pools) + 1))
    print("| semantic channel alone | " + " | ".join(f"{semantic[n][0]:.1f}" for n in pools) + " | |")
    for s in range(TOP + 1):
        cells, margins = [], []
        for n, ps in pools.items():
            r, hits = r_at_5(ps, lambda x, s=s: order(x, trees, s))
            pairs = list(zip(hits, semantic[n][1], strict=True))
            cells.append(f"{r:.1f} ({sum(a > b for a, b in pairs)} / {sum(a < b for a, b in pairs)})")
            margins.append(r - semantic[n][0])
        label = "the product's order (trees)" if s == 0 else f"semantic's first {s} kept in the top 5"
        print(f"| {label} | " + " | ".join(cells) + f" | {min(margins):+.1f} |", flush=True)


if __name__ == "__main__":
    main()
