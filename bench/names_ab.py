"""A name that only opens sentences as an expansion bridge (``recall.expand``: a Latin-script word
capitalised wherever it is written, ``_always_capitalised``; a rare CJK term that opens a
sentence, ``OPENING_NAMES``, linked as a name rather than a weaker term): ``Brain.recall`` with
defaults with and without, in one process over the same brain,
question by question interleaved (which arm goes first rotates: a query's second recall finds
its vector cached). Prints R@5 and the share of questions with every gold turn in the top 5,
per half and question type, and each arm's latency (p50, p99, p50 ratio to the first arm).

    .venv/bin/python bench/names_ab.py --sets hard-en,hard-zh,conv-en,conv-zh --half both
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from indirect_ab import one  # noqa: E402

from hindbrain.recall import expand  # noqa: E402

ARMS = ("names inside a sentence only", "also names that open one")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="hard-en,hard-zh,conv-en,conv-zh")
    ap.add_argument("--half", default="both", choices=("tuning", "heldout", "both"))
    args = ap.parse_args()
    everywhere = expand._always_capitalised
    for name in args.sets.split(","):
        data = quality.SETS[name]()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            for half in (("tuning", "heldout") if args.half == "both" else (args.half,)):
                questions = data.half(half)
                got = {a: [] for a in ARMS}
                took = {a: [] for a in ARMS}
                for n, q in enumerate(questions):
                    for a in ARMS[n % 2:] + ARMS[: n % 2]:
                        expand._always_capitalised = everywhere if a == ARMS[1] else (lambda *_: False)
                        expand.OPENING_NAMES = a == ARMS[1]
                        r, t = one(brain, data, q)
                        got[a].append(r)
                        took[a].append(t)
                expand._always_capitalised, expand.OPENING_NAMES = everywhere, True
                cats = sorted({q.category for q in questions})
                print(f"\n### {name}, {half} half: {len(questions)} questions; R@5 (all gold in the top 5, %)")
                print("| arm | all | " + " | ".join(cats) + " |")
                for a in ARMS:
                    cells = []
                    for c in [None, *cats]:
                        rs = [r for q, r in zip(questions, got[a], strict=True) if c is None or q.category == c]
                        cells.append(f"{quality.mean_recalls(rs)[5]:.1f} ({quality.all_gold(rs):.0f})")
                    print(f"| {a} | " + " | ".join(cells) + " |", flush=True)
                base = statistics.median(took[ARMS[0]])
                for a in ARMS:
                    p50, p99 = statistics.median(took[a]), statistics.quantiles(took[a], n=100)[98]
                    print(f"  latency {a}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, p50 ratio x{p50 / base:.2f}", flush=True)
            brain.close()


if __name__ == "__main__":
    main()
