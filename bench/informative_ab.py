"""An inference question's information factor (``recall.informative``), weight against weight:
``Brain.recall`` with defaults in one process over the same brain, question by question
interleaved (``indirect_ab.interleaved``: which arm goes first rotates), R@5 and, in brackets, the
share of questions with every gold turn in the top 5, per question type, and each arm's latency.

    .venv/bin/python bench/informative_ab.py --sets hard-en,hard-zh --half tuning --weights 0,0.3,0.5,0.7,1

An arm is ``informative.WEIGHT`` (0: off, the code before round twenty-two), ``+named`` also for a
question that names a participant (``informative.NAMED``, round twenty-four; without it, inference
questions only):

    .venv/bin/python bench/informative_ab.py --sets hard-en,hard-zh,conv-en,conv-zh --weights 0.5,0.5+named
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from indirect_ab import gold_table, interleaved, latency  # noqa: E402

from hindbrain.recall import informative  # noqa: E402


def set_arm(arm: str) -> None:
    weight, _, named = arm.removeprefix("w=").partition("+")
    informative.WEIGHT = float(weight)
    informative.NAMED = named == "named"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="hard-en,hard-zh")
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout"))
    ap.add_argument("--weights", default="0,0.5")
    args = ap.parse_args()
    arms = [f"w={w}" for w in args.weights.split(",")]
    for name in args.sets.split(","):
        data = quality.load(name)
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            questions = data.half(args.half)
            got, took = interleaved(brain, data, questions, arms, set_arm)
            gold_table(f"{name}, {args.half} half", questions, arms, got)
            latency(took)
            brain.close()


if __name__ == "__main__":
    main()
