"""The learned trees on and off (``RecallEngine(learned=False)``), per set, through
``Brain.recall`` in whatever embedder mode the environment sets: both engines in one brain,
alternated per question. Prints R@5 of each and the questions where "off" is better / worse.
Round nine used it for the quality mode (docs/recall-quality.md). ``--use-trees`` adds a third
arm, the trees fitted on USE's pools whatever the embedder (what every embedder had before
round ten gave each its own, ``recall.learned.MODEL_FILES``), and the questions where it is
better / worse than the embedder's own trees:

    HINDBRAIN_EMBEDDER=use+e5 OMP_NUM_THREADS=1 HINDBRAIN_EVAL_DATA=../shared/eval-data \\
        .venv/bin/python bench/learned_on_off.py --half tuning --sets hard-en,hard-zh,conv-en,conv-zh
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall import learned  # noqa: E402
from hindbrain.recall.engine import RecallEngine  # noqa: E402

OWN_TREES = learned.trees


def use_trees(embedder: str = learned.DEFAULT_EMBEDDER) -> learned.Trees:
    """The ``use trees`` arm: USE's trees for every embedder."""
    return OWN_TREES(learned.DEFAULT_EMBEDDER)


def through(brain, data, q, engine: RecallEngine, trees) -> float:
    """R@5 of one question through ``Brain.recall`` with ``engine`` and ``trees`` in place."""
    brain.engine, learned.trees = engine, trees
    try:
        return quality.through_recall(brain, data, [q])[0][0][5]
    finally:
        learned.trees = OWN_TREES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--sets", default="madial-zh,madial-en,hard-en,hard-zh,conv-en,conv-zh")
    ap.add_argument("--use-trees", action="store_true", help="a third arm: USE's trees whatever the embedder")
    args = ap.parse_args()
    for name in args.sets.split(","):
        data = quality.madial(name.split("-")[1]) if name.startswith("madial-") else quality.SETS[name]()
        questions = data.half(args.half)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            try:
                on = RecallEngine(brain.index)
                arms = {"on": (on, OWN_TREES), "off": (RecallEngine(brain.index, learned=False), OWN_TREES)}
                if args.use_trees:
                    arms["use trees"] = (on, use_trees)
                if not on.learned:
                    raise SystemExit("the trees are off for this brain (HINDBRAIN_LEARNED_FUSION=0 or no model)")
                got: dict[str, list[float]] = {k: [] for k in arms}
                for q in questions:
                    for k, (engine, trees) in arms.items():
                        got[k].append(through(brain, data, q, engine, trees))
            finally:
                brain.close()
        pairs = list(zip(got["off"], got["on"], strict=True))
        print(f"{name} ({args.half}, {len(questions)} questions): "
              f"R@5 trees on {100 * statistics.fmean(got['on']):.1f}, "
              f"off {100 * statistics.fmean(got['off']):.1f}; off better / worse on "
              f"{sum(a > b for a, b in pairs)} / {sum(a < b for a, b in pairs)}" + use_trees_cells(got) +
              f" ({time.perf_counter() - started:.0f} s)", flush=True)


def use_trees_cells(got: dict[str, list[float]]) -> str:
    if "use trees" not in got:
        return ""
    pairs = list(zip(got["use trees"], got["on"], strict=True))
    return (f"; USE's trees {100 * statistics.fmean(got['use trees']):.1f}, better / worse than the own trees on "
            f"{sum(a > b for a, b in pairs)} / {sum(a < b for a, b in pairs)}")


if __name__ == "__main__":
    main()
