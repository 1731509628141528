"""The trees refitted on more kinds of question, read out of fold by set family through the product's hedge
(design.md §issue-30; docs/recall-quality.md, "Never below the best single channel, round thirty-one").

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/fusion_rank.py --half tuning \\
        --checks hard2-en,hard2-zh,hard3-en,hard3-zh --pools P
    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/fusion_folds.py --pools P --lists L

Two training lists are compared: the shipped trees' sets (``BASE``) and the same with hard2's and hard3's
tuning halves (``MORE``). For each set read, the trees are fitted (``fusion_rank.fit_boosted``, the shipped
fit) on the tuning halves of the list's sets **minus the read set's whole family** (``fold``: hard-en's fold
holds no hard-zh question either, the two are one set written twice), so a set's own questions never
choose its trees. Each fold's trees then re-order the product's pool of every tuning question of the read
set, and that order is hedged with the question's semantic list as ``learned.hedge`` does
(``hedged_ids``): the R@5 the trees would give in the product, short of what comes after the hedge (the
expansion's slot among the top five, the gate). ``--lists`` caches the product's inputs (``collect``:
``Brain.recall`` with the harness's arguments, ``learned.rerank`` and ``learned.hedge`` observed).
The shipped trees' own read is printed beside them (in sample on the sets it was fitted on) with the
product's R@5, which shows what the offline read leaves out. Deterministic: the same pools and lists give
the same numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_rank  # noqa: E402
import quality  # noqa: E402

from hindbrain.recall import learned  # noqa: E402

BASE = ("madial-zh", "madial-en", "conv-en", "conv-zh", "hard-en", "hard-zh")  # the shipped trees' sets
MORE = (*BASE, "hard2-en", "hard2-zh", "hard3-en", "hard3-zh")
READ = ("conv-en", "conv-zh", "hard-en", "hard-zh", "hard2-en", "hard2-zh", "hard3-en", "hard3-zh")


def family(name: str) -> str:
    """A set's family: its two languages are one set of conversations written twice (``hard3-en``: ``hard3``)."""
    return name.rsplit("-", 1)[0]


def fold(read: str, training: tuple[str, ...]) -> tuple[str, ...]:
    """The sets whose tuning halves fit the trees that read ``read``: ``training`` without ``read``'s family."""
    return tuple(n for n in training if family(n) != family(read))


def hedged_ids(first: list[int], semantic: list[int], id_of: dict[int, str]) -> list[str]:
    """The event ids of the trees' order ``first`` (document numbers) hedged with the semantic list as
    ``learned.hedge`` does (its weight by ``learned.hedge_weight``, as many items as ``first``); ``first``
    alone where the question is not hedged (``semantic`` empty)."""
    if semantic:
        weight = learned.hedge_weight(first, semantic)
        first = [no for no, _ in learned.hedge_places(first, semantic, learned.HEDGE_K, weight,
                                                      reach=learned.hedge_reach(weight))][: len(first)]
    return list(dict.fromkeys(id_of[no] for no in first))


def trees_first(call: dict, margin) -> list[int]:
    """The document numbers of one observed pool in the order ``margin``'s probability gives it, times the
    track record and the information factor (``learned.rerank``)."""
    probability = 1.0 / (1.0 + np.exp(-margin(call["x"])))
    factor = np.array([1.0 + call["utility_weight"] * (2.0 * u - 1.0) for u in call["utility"]])
    prior = 1.0 if call["prior"] is None else call["prior"]
    return [call["nos"][i] for i in np.argsort(-(probability * factor * prior), kind="stable")]


def read(rows: list[dict], margin) -> list[dict[int, float]]:
    """R@k of each observed question with its pool re-ordered by ``margin`` and hedged."""
    out = []
    for row in rows:
        call = row["call"]
        id_of = dict(zip(call["nos"], call["ids"], strict=True)) | dict(zip(call["semantic_nos"],
                                                                           call["semantic_ids"], strict=True))
        out.append(quality.recall_at(row["gold"], hedged_ids(trees_first(call, margin), call["semantic_nos"], id_of)))
    return out


@contextlib.contextmanager
def observed():
    """``learned.rerank``'s input and ``learned.hedge``'s semantic list, per call, while the block runs."""
    calls, rerank, hedge = [], learned.rerank, learned.hedge

    def event_id(s) -> str:
        return s.doc.event_ids[0] if s.doc.event_ids else s.doc.id

    def watched_rerank(pool, query, utility_weight=0.0, embedder=learned.DEFAULT_EMBEDDER, prior=None):
        calls.append({"x": learned.features(pool, query), "ids": [event_id(s) for s in pool],
                      "nos": [s.no for s in pool], "prior": None if prior is None else np.asarray(prior, float),
                      "utility": [s.channel_scores.get("utility", 0.5) for s in pool],
                      "utility_weight": utility_weight, "semantic_nos": [], "semantic_ids": []})
        return rerank(pool, query, utility_weight, embedder, prior)

    def watched_hedge(pool, semantic_pool):
        calls[-1].update(semantic_nos=[s.no for s in semantic_pool], semantic_ids=[event_id(s) for s in semantic_pool])
        return hedge(pool, semantic_pool)

    learned.rerank, learned.hedge = watched_rerank, watched_hedge
    try:
        yield calls
    finally:
        learned.rerank, learned.hedge = rerank, hedge


@contextlib.contextmanager
def feeding(top: int):
    """The product with the semantic channel's first ``top`` fed into the trees' pool
    (``learned.POOL_FROM_SEMANTIC``) while the block runs."""
    shipped = learned.POOL_FROM_SEMANTIC
    learned.POOL_FROM_SEMANTIC = top
    try:
        yield
    finally:
        learned.POOL_FROM_SEMANTIC = shipped


def collect(name: str, feeds: tuple[int, ...] = (0,)) -> dict[int, list[dict]]:
    """Each tuning question of ``name``: its gold, category, the product's R@k and its one observed pool, for each
    K of ``feeds`` the semantic first K fed into that pool (``feeding``); one brain for all."""
    data = quality.load(name)
    out: dict[int, list[dict]] = {}
    with tempfile.TemporaryDirectory() as home, observed() as calls:
        brain = quality.build(data, Path(home))
        try:
            for feed in feeds:
                rows = out[feed] = []
                with feeding(feed):
                    for q in data.half("tuning"):
                        calls.clear()
                        pack = brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, layers=["episodic"],
                                            k=10, budget_tokens=100000)
                        ranked = list(dict.fromkeys(e for item in pack.items for e in (item.event_ids or [item.id])))
                        if len(calls) != 1:
                            raise SystemExit(f"{name} {q.qid}: {len(calls)} trees calls in one recall, the read "
                                             "expects one")
                        rows.append({"gold": set(q.gold), "category": q.category,
                                     "product": quality.recall_at(q.gold, ranked), "call": calls[0]})
        finally:
            brain.close()
    return out


def as_pools(rows: list[dict]) -> list[tuple]:
    """The observed pools of ``collect``'s rows as ``fusion_rank.collect``'s (all tuning), to fit trees on: what the
    product's trees rank, fed items included (``collect``'s ``feed``)."""
    return [(str(n), True, row["gold"], row["call"]["ids"], row["call"]["x"],
             np.ones(len(row["call"]["ids"])) if row["call"]["prior"] is None else row["call"]["prior"])
            for n, row in enumerate(rows)]


def list_key(name: str, feed: int) -> str:
    """A set's entry in the ``--lists`` cache: its name at no feed (the caches of round thirty-one), ``name@K``."""
    return name if feed == 0 else f"{name}@{feed}"


def won_lost(changed: list[dict[int, float]], base: list[dict[int, float]], k: int = 5) -> tuple[int, int]:
    """Questions whose R@k ``changed`` raises : lowers against ``base`` (the same questions, in order)."""
    return (sum(c[k] > b[k] for c, b in zip(changed, base, strict=True)),
            sum(c[k] < b[k] for c, b in zip(changed, base, strict=True)))


def cell(recalls: list[dict[int, float]]) -> str:
    return f"{100 * np.mean([r[1] for r in recalls]):.1f} / {100 * np.mean([r[5] for r in recalls]):.1f}"


def fitted_on(pools: list[tuple]) -> dict:
    """Trees fitted on ``pools`` by the shipped recipe (``fusion_rank.fit_boosted``, every feature) as a tree
    file holds them (``learned.Trees.from_json`` reads it as the product does)."""
    _, model = fusion_rank.fit_boosted(pools, list(range(len(learned.FEATURES))))
    return fusion_rank.export(model, fusion_rank.embedder_name())


def training(sets: tuple[str, ...], lists: dict, dialogues: dict, feed: int) -> list[tuple]:
    """The tuning pools of ``sets`` the trees are fitted on: a question set's as the product's trees saw it with
    the semantic first ``feed`` fed (``lists``), a dialogue set's from ``fusion_rank``'s cache (``dialogues``: a
    dialogue is not hedged, so nothing is fed into its pool)."""
    return [p for n in sets for p in (dialogues[n] if n in dialogues else as_pools(lists[list_key(n, feed)]))
            if p[1]]


def refit_fed(names: list[str], lists: dict, dialogues: dict, feed: int, out: Path | None) -> None:
    """The shipped trees with nothing fed against ``BASE`` refitted on pools fed the semantic first ``feed``, read
    with that feed, in sample (every ``BASE`` set) and out of fold by family; the same refit on unfed pools
    beside them (what a refit moves by itself). ``out``: the in-sample fed refit's file, for the product."""
    shipped = learned.trees().margin
    files = {f: fitted_on(training(BASE, lists, dialogues, f)) for f in (0, feed)}
    if out is not None:
        out.write_text(json.dumps(files[feed]) + "\n")
    whole = {f: learned.Trees.from_json(data) for f, data in files.items()}
    folds: dict[tuple, object] = {}

    def out_of_fold(name: str, f: int):
        sets = fold(name, BASE)
        if (sets, f) not in folds:
            folds[sets, f] = learned.Trees.from_json(fitted_on(training(sets, lists, dialogues, f))).margin
        return folds[sets, f]

    print(f"R@1 / R@5 of each set's tuning half (offline: the trees' order hedged); refit: BASE refitted on pools "
          f"fed 0 or {feed}, in sample (in) or out of fold by family (out); R@5 questions won : lost (net) of the fed "
          f"refit in sample against the shipped trees fed 0, and out of fold against the unfed refit out of fold")
    print(f"| set | the product | shipped, fed 0 | shipped, fed {feed} | refit fed 0, in | refit fed 0, out "
          f"| refit fed {feed}, in | refit fed {feed}, out | in − shipped | out − refit fed 0, out |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        rows, fed = lists[list_key(name, 0)], lists[list_key(name, feed)]
        base = read(rows, shipped)
        refit0 = read(rows, whole[0].margin), read(rows, out_of_fold(name, 0))
        inside, outside = read(fed, whole[feed].margin), read(fed, out_of_fold(name, feed))
        print(f"| {name} ({len(rows)}) | {cell([r['product'] for r in rows])} | {cell(base)} "
              f"| {cell(read(fed, shipped))} | {cell(refit0[0])} | {cell(refit0[1])} "
              f"| {cell(inside)} | {cell(outside)} "
              f"| {paired_cell(inside, base)} | {paired_cell(outside, refit0[1])} |", flush=True)


def paired_cell(changed: list[dict[int, float]], base: list[dict[int, float]], k: int = 5) -> str:
    """"won : lost (net)" of ``changed`` against ``base`` at R@k, in questions."""
    won, lost = won_lost(changed, base, k)
    return f"{won} : {lost} ({sum(c[k] - b[k] for c, b in zip(changed, base, strict=True)):+.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pools", type=Path, required=True, help="bench/fusion_rank.py's pools cache (every MORE set)")
    ap.add_argument("--lists", type=Path, help="cache of the product's observed pools (built when missing)")
    ap.add_argument("--sets", default=",".join(READ))
    ap.add_argument("--feed", type=int, default=0,
                    help="K > 0: BASE refitted on pools fed the semantic first K, against the shipped trees")
    ap.add_argument("--out", type=Path, help="with --feed: write the in-sample fed refit's trees here")
    args = ap.parse_args()
    names = args.sets.split(",")
    lists = pickle.loads(args.lists.read_bytes()) if args.lists and args.lists.exists() else {}
    feeds = tuple(dict.fromkeys((0, args.feed)))
    for name in dict.fromkeys([*names, *(b for b in BASE if args.feed and not b.startswith("madial"))]):
        missing = tuple(f for f in feeds if list_key(name, f) not in lists)
        if missing:
            lists |= {list_key(name, f): rows for f, rows in collect(name, missing).items()}
            print(f"{name}: collected at feed {missing}", flush=True)
            if args.lists:
                args.lists.write_bytes(pickle.dumps(lists))
    if args.feed:
        dialogues = fusion_rank.pools_of([n for n in BASE if n.startswith("madial")], quality.MADIAL, args.pools,
                                         fusion_rank.embedder_name())
        refit_fed(names, lists, dialogues, args.feed, args.out)
        return
    pools = fusion_rank.pools_of(list(MORE), quality.MADIAL, args.pools, fusion_rank.embedder_name())
    every = list(range(len(learned.FEATURES)))
    fitted: dict[tuple[str, ...], object] = {}

    def margin_for(sets: tuple[str, ...]):
        if sets not in fitted:
            _, model = fusion_rank.fit_boosted([p for n in sets for p in pools[n] if p[1]], every)
            fitted[sets] = learned.Trees.from_json(fusion_rank.export(model, fusion_rank.embedder_name())).margin
        return fitted[sets]

    shipped = learned.trees().margin
    print("R@1 / R@5 of each set's tuning half; BASE / MORE: out of fold by family; 'MORE − BASE': questions at R@5")
    print("| set | the product | shipped trees, offline | BASE | MORE | MORE − BASE |\n|---|---|---|---|---|---:|")
    for name in names:
        rows = lists[name]
        base, more = read(rows, margin_for(fold(name, BASE))), read(rows, margin_for(fold(name, MORE)))
        gained = sum(m[5] - b[5] for b, m in zip(base, more, strict=True))
        print(f"| {name} ({len(rows)}) | {cell([r['product'] for r in rows])} | {cell(read(rows, shipped))} "
              f"| {cell(base)} | {cell(more)} | {gained:+.2f} |", flush=True)


if __name__ == "__main__":
    main()
