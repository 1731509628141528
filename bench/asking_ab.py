"""The cost of "a turn that asks does not answer" (``recall.asking``): ``Brain.recall`` latency with
the change and without it (asking penalty 0, the question end's lexical weight back at 0.7),
interleaved question by question in one process over the tuning half of a conversational set,
so the shared machine's drift hits both alike; and ``asking_share``'s cost per perceived text.

    .venv/bin/python bench/asking_ab.py --set conv-en --rounds 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall import asking  # noqa: E402
from hindbrain.recall.engine import RecallEngine  # noqa: E402
from hindbrain.recall.scoring import PRESETS, Fusion  # noqa: E402

BEFORE_LEXICAL = 0.70  # the question end's lexical weight before this change


def timed(brain, data, q) -> float:
    start = time.perf_counter()
    brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, layers=["episodic"])
    return (time.perf_counter() - start) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="conv-en", choices=[s for s in quality.SETS if not s.startswith("madial")])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    data = quality.SETS[args.set]()
    texts = [e["text"] for e in data.events]
    start = time.perf_counter()
    for text in texts:
        asking.asking_share(text)
    per_text_us = (time.perf_counter() - start) * 1e6 / len(texts)
    fused = PRESETS["fused"]
    with tempfile.TemporaryDirectory() as home:
        brain = quality.build(data, Path(home))
        without = Fusion("before", replace(fused.text, lexical=BEFORE_LEXICAL), fused.dialogue)
        arms = {"with": (RecallEngine(brain.index, fused), asking.ASKING_PENALTY),
                "without": (RecallEngine(brain.index, without), 0.0)}
        took = {arm: [] for arm in arms}
        questions = data.half("tuning")
        for _ in range(args.rounds):
            for n, q in enumerate(questions):
                # the second recall of a query finds its vectors cached: each arm goes first every other time
                for arm in (("with", "without") if n % 2 else ("without", "with")):
                    engine, penalty = arms[arm]
                    brain.engine, asking.ASKING_PENALTY = engine, penalty
                    took[arm].append(timed(brain, data, q))
        brain.close()
    p50 = {arm: statistics.median(t) for arm, t in took.items()}
    p99 = {arm: statistics.quantiles(t, n=100)[98] for arm, t in took.items()}
    print(f"{args.set}: {len(took['with'])} recalls an arm, interleaved")
    for arm in arms:
        print(f"  {arm:8} p50 {p50[arm]:.2f} ms  p99 {p99[arm]:.2f} ms")
    print(f"  p50 ratio with / without: x{p50['with'] / p50['without']:.2f}")
    print(f"  asking_share per perceived text: {per_text_us:.1f} us")


if __name__ == "__main__":
    main()
