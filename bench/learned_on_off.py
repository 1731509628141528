"""The learned trees on and off (``RecallEngine(learned=False)``), per set, through
``Brain.recall`` in whatever embedder mode the environment sets: both engines in one brain,
alternated per question. Prints R@5 of each and the questions where "off" is better / worse.
Round nine used it for the quality mode (docs/recall-quality.md):

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

from hindbrain.recall.engine import RecallEngine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--sets", default="madial-zh,madial-en,hard-en,hard-zh,conv-en,conv-zh")
    args = ap.parse_args()
    for name in args.sets.split(","):
        data = quality.madial(name.split("-")[1]) if name.startswith("madial-") else quality.SETS[name]()
        questions = data.half(args.half)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            try:
                engines = {"on": RecallEngine(brain.index), "off": RecallEngine(brain.index, learned=False)}
                if not engines["on"].learned:
                    raise SystemExit("the trees are off for this brain (HINDBRAIN_LEARNED_FUSION=0 or no model)")
                got: dict[str, list[float]] = {k: [] for k in engines}
                for q in questions:
                    for k, engine in engines.items():
                        brain.engine = engine
                        got[k].append(quality.through_recall(brain, data, [q])[0][0][5])
            finally:
                brain.close()
        pairs = list(zip(got["off"], got["on"], strict=True))
        print(f"{name} ({args.half}, {len(questions)} questions): "
              f"R@5 trees on {100 * statistics.fmean(got['on']):.1f}, "
              f"off {100 * statistics.fmean(got['off']):.1f}; off better / worse on "
              f"{sum(a > b for a, b in pairs)} / {sum(a < b for a, b in pairs)} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
