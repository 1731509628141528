"""A turn that says little (``recall.brevity``): ``Brain.recall`` with defaults under each
(penalty, tokens) arm of ``--arms`` (``0:16`` is the weights of before), in one process over the
same brain, question by question interleaved (which arm goes first rotates: a query's second
recall finds its vector cached), so the shared machine's drift hits every arm alike. Prints R@5
per half and question type, the semantic channel alone beside it, and each arm's latency.

    .venv/bin/python bench/brevity_ab.py --sets hard-en,hard-zh,conv-en,conv-zh --half tuning \\
        --arms 0:16,0.4:16,0.6:16,0.4:20,0.6:20
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from indirect_ab import interleaved, latency, one, row  # noqa: E402

from hindbrain.recall import brevity  # noqa: E402
from hindbrain.recall.engine import RecallEngine  # noqa: E402


def set_brevity(arm: tuple[float, int]) -> None:
    brevity.BREVITY_PENALTY, brevity.BREVITY_TOKENS = arm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="hard-en,hard-zh,conv-en,conv-zh")
    ap.add_argument("--arms", default=f"0:16,{brevity.BREVITY_PENALTY}:{brevity.BREVITY_TOKENS}",
                    help="penalty:tokens, comma-separated; the first is the baseline")
    ap.add_argument("--half", default="both", choices=("tuning", "heldout", "both"))
    args = ap.parse_args()
    arms = [(float(a.split(":")[0]), int(a.split(":")[1])) for a in args.arms.split(",")]
    for name in args.sets.split(","):
        data = quality.SETS[name]()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            semantic = RecallEngine(brain.index, quality.alone("semantic"))
            default = brain.engine
            for half in (("tuning", "heldout") if args.half == "both" else (args.half,)):
                questions = data.half(half)
                got, took = interleaved(brain, data, questions, arms, set_brevity)
                brevity.BREVITY_PENALTY, brevity.BREVITY_TOKENS = arms[0]
                brain.engine = semantic
                alone = [one(brain, data, q)[0] for q in questions]
                brain.engine = default
                cats = sorted({q.category for q in questions})
                print(f"\n### {name}, {half} half: {len(questions)} questions")
                print("| arm (penalty, tokens) | R@5 | " + " | ".join(cats) + " |")
                for a in arms:
                    row(f"{a[0]}, {a[1]}", got[a], questions, cats)
                row("semantic channel alone", alone, questions, cats)
                latency(took)
            brain.close()


if __name__ == "__main__":
    main()
