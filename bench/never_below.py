"""Never below the best single channel (design.md §issue-30): orders that hedge the default's
ranking with the semantic channel's own, measured on the tuning halves from two collected lists
a question — the default's and "semantic alone"'s (``quality.alone("semantic")``: the fused preset
with only the semantic weight, expansion and information factor kept, no trees).

    .venv/bin/python bench/never_below.py --sets conv-en,hard-en --half tuning --lists /tmp/lists.pkl

The lists are cached with ``--lists`` so every hedge is re-scored in seconds. Printed per set:
R@1 / R@5 / R@10 of the default, semantic alone and each hedge (``hedges``), and the questions
won and lost at R@5 against the default. Deterministic: the same lists give the same numbers.

    .venv/bin/python bench/never_below.py --sets conv-en,hard2-en --cpu 3

``--cpu R``: the thread CPU of ``Brain.recall`` (the harness's arguments) on the tuning questions with
the hedge off (``HINDBRAIN_HEDGE=0``, the base's order) and on, alternated question by question (the
order flipping each question and round), R rounds after one warm pass; prints each arm's median and p99.

    .venv/bin/python bench/never_below.py --sets hard3-zh,conv-en --unpooled alone,top3,top5,whole

``--placed off,on``: the product with the expansion's pair or chain kept in its slots after the trees and the
hedge (``learned.KEEP_PLACED``) off and on, paired against the first; with ``--cpu R``, off against on, alternated.

``--unpooled RULES``: the product under each rule for an item the trees never pooled (``UNPOOLED_RULES``),
paired against the first: R@k, R@5 won : lost, multi-hop all gold; with ``--cpu R`` the thread CPU of
the base rule against ``learned.HEDGE_UNPOOLED_WHOLE``, alternated as above.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall import learned  # noqa: E402
from hindbrain.recall.engine import RecallEngine  # noqa: E402

DEPTH = 20  # items kept of each list: more than any hedge reads


def ranked(brain, data, q) -> list[str]:
    pack = brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, layers=["episodic"], k=DEPTH,
                        budget_tokens=100000)
    return list(dict.fromkeys(e for item in pack.items for e in (item.event_ids or [item.id])))


@contextlib.contextmanager
def built(name: str, half: str):
    """(data, the questions of ``half``, a brain holding the set's turns), closed on leaving."""
    data = quality.load(name)
    questions = data.half(half)
    with tempfile.TemporaryDirectory() as home:
        brain = quality.build(data, Path(home))
        try:
            yield data, questions, brain
        finally:
            brain.close()


def collect(names: list[str], half: str) -> dict[str, list[tuple]]:
    """Per set: (question, default's list, semantic alone's list) per question of ``half``."""
    out = {}
    for name in names:
        with built(name, half) as (data, questions, brain):
            default_engine, alone = brain.engine, RecallEngine(brain.index, quality.alone("semantic"))
            rows = []
            for q in questions:
                brain.engine = default_engine
                first = ranked(brain, data, q)
                brain.engine = alone
                rows.append((q, first, ranked(brain, data, q)))
            brain.engine = default_engine
        out[name] = rows
        print(f"{name}: {len(rows)} questions collected", flush=True)
    return out


def hedge_switch(arm: str) -> None:
    """Arm "0" the base, "1" the change: the hedge off / on (``HINDBRAIN_HEDGE``)."""
    os.environ["HINDBRAIN_HEDGE"] = arm


def unpooled_switch(arm: str) -> None:
    """Arm "0" the base, "1" the change: a never-pooled item at the semantic weight alone / with the trees' too
    (at the shipped ``HEDGE_UNPOOLED_TOP``)."""
    learned.HEDGE_UNPOOLED_WHOLE = arm == "1"


def cpu(names: list[str], half: str, rounds: int, switch=hedge_switch) -> None:
    """Thread CPU (ms) a recall, ``switch``'s base against its change, alternated question by question."""
    whole, fed = learned.HEDGE_UNPOOLED_WHOLE, learned.POOL_FROM_SEMANTIC
    for name in names:
        with built(name, half) as (data, questions, brain):
            try:
                for q in questions:  # the query vectors, cached before anything is timed
                    ranked(brain, data, q)
                took: dict[str, list[float]] = {"0": [], "1": []}
                for r in range(rounds):
                    for n, q in enumerate(questions):
                        for arm in ("0", "1") if (n + r) % 2 else ("1", "0"):
                            switch(arm)
                            start = time.thread_time()
                            ranked(brain, data, q)
                            took[arm].append((time.thread_time() - start) * 1000)
            finally:
                os.environ.pop("HINDBRAIN_HEDGE", None)
                learned.HEDGE_UNPOOLED_WHOLE, learned.POOL_FROM_SEMANTIC = whole, fed
                learned.HEDGE_REACH = SHIPPED_REACH
                learned.KEEP_PLACED = SHIPPED_PLACED
                use_trees(None)
        med = {a: statistics.median(v) for a, v in took.items()}
        p99 = {a: statistics.quantiles(v, n=100)[98] for a, v in took.items()}
        print(f"{name}: thread CPU ms a recall, median (p99): base {med['0']:.3f} ({p99['0']:.2f}), changed "
              f"{med['1']:.3f} ({p99['1']:.2f}); x{med['1'] / med['0']:.3f}", flush=True)


# how a never-pooled item's semantic place counts, (``learned.HEDGE_UNPOOLED_WHOLE``, ``HEDGE_UNPOOLED_TOP``):
# the semantic weight alone (the base); the trees' too at every place, or only at the semantic first 5 or 3
UNPOOLED_RULES = {"alone": (False, 0), "whole": (True, 1 << 30), "top5": (True, 5), "top3": (True, 3)}


MULTI_HOP = ("multi-hop", "multi-hop-3", "chain3")  # categories whose answer needs every gold turn


def arms_table(names: list[str], half: str, label: str, arms: list, switch) -> None:
    """The product (``Brain.recall``, the harness's arguments) under each arm of ``arms`` in one brain a set
    (``switch(arm)`` sets it; ``switch(None)`` puts the shipped setting back): R@1 / R@5 / R@10, R@5 won : lost and
    the change in questions against the first arm, and the multi-hop questions with all gold in the top 5."""
    for name in names:
        with built(name, half) as (data, questions, brain):
            print(f"\n### {name} ({len(questions)} questions)\n\n| {label} | R@1 | R@5 | R@10 | R@5 won : lost "
                  "(questions) | multi-hop all gold |\n|---|---:|---:|---:|---|---|")
            hops = [i for i, q in enumerate(questions) if q.category in MULTI_HOP]
            first = None
            try:
                for arm in arms:
                    switch(arm)
                    each = quality.through_recall(brain, data, questions)[0]
                    first = first or each
                    r = quality.mean_recalls(each)
                    won = sum(a[5] > b[5] for a, b in zip(each, first, strict=True))
                    lost = sum(a[5] < b[5] for a, b in zip(each, first, strict=True))
                    moved = sum(a[5] - b[5] for a, b in zip(each, first, strict=True))
                    whole = sum(each[i][5] == 1.0 for i in hops)
                    print(f"| {arm} | {r[1]:.1f} | {r[5]:.1f} | {r[10]:.1f} | {won} : {lost} ({moved:+.2f}) | "
                          f"{whole} of {len(hops)} |", flush=True)
            finally:
                switch(None)


def unpooled(names: list[str], half: str, rules: list[str]) -> None:
    """``arms_table`` under each never-pooled rule of ``rules`` (``UNPOOLED_RULES``)."""
    shipped = learned.HEDGE_UNPOOLED_WHOLE, learned.HEDGE_UNPOOLED_TOP

    def switch(rule):
        learned.HEDGE_UNPOOLED_WHOLE, learned.HEDGE_UNPOOLED_TOP = shipped if rule is None else UNPOOLED_RULES[rule]

    arms_table(names, half, "rule", rules, switch)


SHIPPED_TREES = learned.trees
SHIPPED_REACH = learned.HEDGE_REACH


def use_trees(model) -> None:
    """The question trees the product orders with: ``model`` (a ``learned.Trees``, e.g. a refit read from a file
    ``bench/fusion_folds.py --out`` wrote), or the shipped file's when None; a dialogue keeps its own."""
    learned.trees = SHIPPED_TREES if model is None else (
        lambda embedder=learned.DEFAULT_EMBEDDER: model if embedder == learned.DEFAULT_EMBEDDER
        else SHIPPED_TREES(embedder))


def feed_arm(arm: str) -> tuple[int, bool]:
    """An arm of ``--feed``: "K" the semantic first K fed to the shipped trees, "Kr" to the ``--refit`` trees."""
    return int(arm.removesuffix("r")), arm.endswith("r")


def feed(names: list[str], half: str, arms: list[str], refit=None) -> None:
    """``arms_table`` with the semantic channel's first K items fed into the trees' pool
    (``learned.POOL_FROM_SEMANTIC``) for each arm of ``arms`` (``feed_arm``), ``refit`` the trees of an "r" arm."""
    shipped = learned.POOL_FROM_SEMANTIC

    def switch(arm):
        top, refitted = (shipped, False) if arm is None else feed_arm(arm)
        learned.POOL_FROM_SEMANTIC = top
        use_trees(refit if refitted else None)

    arms_table(names, half, "fed K (r: the refit trees)", arms, switch)


def reach(names: list[str], half: str, arms: list[str]) -> None:
    """``arms_table`` at each ``learned.HEDGE_REACH`` of ``arms`` ("none": every place of the trees' counts)."""
    shipped = learned.HEDGE_REACH

    def switch(arm):
        learned.HEDGE_REACH = shipped if arm is None else None if arm == "none" else int(arm)

    arms_table(names, half, "reach", arms, switch)


SHIPPED_PLACED = learned.KEEP_PLACED


def placed(names: list[str], half: str, arms: list[str]) -> None:
    """``arms_table`` with the expansion's pair or chain kept in its slots (``learned.KEEP_PLACED``) "off" / "on"."""
    def switch(arm):
        learned.KEEP_PLACED = SHIPPED_PLACED if arm is None else arm == "on"

    arms_table(names, half, "placed kept", arms, switch)


def placed_switch(arm: str) -> None:
    """Arm "0" the base (the trees' and the hedge's order alone), "1" the change: ``learned.KEEP_PLACED``."""
    learned.KEEP_PLACED = arm == "1"


def reach_switch(arm: str, top: int | None) -> None:
    """Arm "0" the base (every place of the trees' counts), "1" the change: ``learned.HEDGE_REACH`` at ``top``;
    ``None`` puts the shipped value back."""
    learned.HEDGE_REACH = top if arm == "1" else None if arm == "0" else SHIPPED_REACH


def feed_switch(arm: str, top: int, refit=None) -> None:
    """Arm "0" the base (no feed, the shipped trees), "1" the change: the semantic first ``top`` fed into the
    trees' pool, ordered by ``refit`` when given; ``None`` puts the shipped setting back."""
    learned.POOL_FROM_SEMANTIC = top if arm == "1" else 0
    use_trees(refit if arm == "1" else None)


def grid(names: list[str], half: str, arms: list[tuple[float, float]]) -> None:
    """The product's hedge, off and at each (k, weight) of ``arms``, beside "semantic alone"; the weight is
    that of orders agreeing on their top 5 (``learned.HEDGE_WEIGHT``; ``HEDGE_WEIGHT_APART`` stays)."""
    chosen = (learned.HEDGE_K, learned.HEDGE_WEIGHT)
    for name in names:
        with built(name, half) as (data, questions, brain):
            print(f"\n### {name} ({len(questions)} questions)\n\n| order | R@1 | R@5 | R@10 |\n|---|---:|---:|---:|")
            try:
                os.environ["HINDBRAIN_HEDGE"] = "0"
                print(quality.fmt("default, no hedge (the base)",
                                  quality.mean_recalls(quality.through_recall(brain, data, questions)[0])))
                os.environ["HINDBRAIN_HEDGE"] = "1"
                for k, w in arms:
                    learned.HEDGE_K, learned.HEDGE_WEIGHT = k, w
                    print(quality.fmt(f"hedged, k {k:g}, weight {w:g}",
                                      quality.mean_recalls(quality.through_recall(brain, data, questions)[0])),
                          flush=True)
                engine = brain.engine
                for channel in ("semantic", "lexical"):  # never hedged: their preset is not the default
                    brain.engine = RecallEngine(brain.index, quality.alone(channel))
                    print(quality.fmt(f"{channel} alone",
                                      quality.mean_recalls(quality.through_recall(brain, data, questions)[0])),
                          flush=True)
                brain.engine = engine
            finally:
                learned.HEDGE_K, learned.HEDGE_WEIGHT = chosen
                os.environ.pop("HINDBRAIN_HEDGE", None)


def lead_then_fill(first: list[str], second: list[str], lead: int) -> list[str]:
    """The first ``lead`` places by ``first``, then ``second``'s best not taken, then ``first``'s rest."""
    head = first[:lead]
    return list(dict.fromkeys([*head, *second, *first]))[: max(len(first), len(second))]


def rrf(first: list[str], second: list[str], weight: float, k: float = 60.0) -> list[str]:
    """Reciprocal-rank fusion of the two lists, ``weight`` on ``second`` (ties: ``first``'s order)."""
    score: dict[str, float] = {}
    for place, e in enumerate(first):
        score[e] = score.get(e, 0.0) + 1.0 / (k + place + 1)
    for place, e in enumerate(second):
        score[e] = score.get(e, 0.0) + weight / (k + place + 1)
    at = {e: i for i, e in enumerate(dict.fromkeys([*first, *second]))}
    return sorted(score, key=lambda e: (-score[e], at[e]))


def interleave(first: list[str], second: list[str], lead: int) -> list[str]:
    """``first``'s ``lead`` places, then alternately the next untaken of each list, ``second`` first."""
    out = list(dict.fromkeys(first[:lead]))
    a, b = iter(first), iter(second)
    turn = 1
    while len(out) < max(len(first), len(second)):
        source = b if turn else a
        for e in source:
            if e not in out:
                out.append(e)
                break
        else:
            if all(e in out for e in [*first, *second]):
                break
        turn ^= 1
    return out


def hedges() -> dict[str, callable]:
    arms = {"default": lambda f, s: f, "semantic alone": lambda f, s: s}
    for m in (1, 2, 3, 4):
        arms[f"lead {m}, fill semantic"] = lambda f, s, m=m: lead_then_fill(f, s, m)
        arms[f"lead {m}, interleave"] = lambda f, s, m=m: interleave(f, s, m)
    for k in (1.0, 5.0, 20.0, 60.0):
        for w in (0.5, 0.8, 1.0):
            arms[f"rrf k={k:g} w={w}"] = lambda f, s, w=w, k=k: rrf(f, s, w, k)
    return arms


def table(lists: dict[str, list[tuple]], arms: dict) -> None:
    for name, rows in lists.items():
        print(f"\n### {name} ({len(rows)} questions)\n\n| order | R@1 | R@5 | R@10 | R@5 won : lost vs default |")
        print("|---|---:|---:|---:|---|")
        base = [quality.recall_at(q.gold, f) for q, f, _ in rows]
        for label, arm in arms.items():
            each = [quality.recall_at(q.gold, arm(f, s)) for q, f, s in rows]
            r = quality.mean_recalls(each)
            won = sum(a[5] > b[5] for a, b in zip(each, base, strict=True))
            lost = sum(a[5] < b[5] for a, b in zip(each, base, strict=True))
            print(f"| {label} | {r[1]:.1f} | {r[5]:.1f} | {r[10]:.1f} | {won} : {lost} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(quality.DEFAULT_SETS))
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--lists", type=Path, help="cache of the collected lists (read if present, else written)")
    ap.add_argument("--cpu", type=int, metavar="ROUNDS", help="measure the hedge's CPU instead (see above)")
    ap.add_argument("--grid", help="K:W,… the product's hedge at each pair (see above)")
    ap.add_argument("--unpooled", help=f"rules of {sorted(UNPOOLED_RULES)}, comma-separated: the product under "
                                       "each (the first paired against); with --cpu, the base against the change")
    ap.add_argument("--feed", help="K,… the semantic first K fed into the trees' pool (``feed``, the first "
                                   "paired against; Kr: with the --refit trees); with --cpu, K=0 against the last K")
    ap.add_argument("--refit", type=Path, help="a tree file (bench/fusion_folds.py --out) for --feed's r arms")
    ap.add_argument("--reach", help="none,N,… the product at each learned.HEDGE_REACH (the first paired against); "
                                    "with --cpu, none against the last N")
    ap.add_argument("--placed", help="off,on: the product with learned.KEEP_PLACED off and on (the first paired "
                                     "against); with --cpu, off against on")
    args = ap.parse_args()
    if args.placed:
        if args.cpu:
            cpu(args.sets.split(","), args.half, args.cpu, placed_switch)
        else:
            placed(args.sets.split(","), args.half, args.placed.split(","))
        return
    if args.reach and args.cpu:
        top = int(args.reach.split(",")[-1])
        cpu(args.sets.split(","), args.half, args.cpu, lambda arm: reach_switch(arm, top))
        return
    if args.reach:
        reach(args.sets.split(","), args.half, args.reach.split(","))
        return
    refit = learned.model_from_json(json.loads(args.refit.read_text("utf-8"))) if args.refit else None
    if args.feed and args.cpu:
        top, refitted = feed_arm(args.feed.split(",")[-1])
        cpu(args.sets.split(","), args.half, args.cpu, lambda arm: feed_switch(arm, top, refit if refitted else None))
        return
    if args.feed:
        feed(args.sets.split(","), args.half, args.feed.split(","), refit)
        return
    if args.unpooled and args.cpu:
        cpu(args.sets.split(","), args.half, args.cpu, unpooled_switch)
        return
    if args.unpooled:
        unpooled(args.sets.split(","), args.half, args.unpooled.split(","))
        return
    if args.grid:
        grid(args.sets.split(","), args.half, [tuple(map(float, a.split(":"))) for a in args.grid.split(",")])
        return
    if args.cpu:
        cpu(args.sets.split(","), args.half, args.cpu)
        return
    if args.lists and args.lists.exists():
        lists = pickle.loads(args.lists.read_bytes())
    else:
        lists = collect(args.sets.split(","), args.half)
        if args.lists:
            args.lists.write_bytes(pickle.dumps(lists))
    table(lists, hedges())


if __name__ == "__main__":
    main()
