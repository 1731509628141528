"""A/B window benchmark (design.md §issue-6): with a true 20-point success-rate difference the window
is decided correctly in ≥ 95 % of 200 simulated windows; with no true difference a winner
is declared in ≤ 5 %.

    python bench/ab_windows.py [--windows 200] [--seed 3]

Each simulated window assigns tasks to arms with ``recall.arms.arm_of`` (the hash the recalls
use), draws each task's outcome from its arm's true success rate, and runs until both arms
have ``min_per_arm`` outcomes; then ``jobs.ab.settle`` decides. Repeated over several base
rates so no one rate flatters the rule.
"""

from __future__ import annotations

import argparse
import random
import time

from hindbrain.jobs.ab import WindowRule, settle
from hindbrain.recall.arms import arm_of

DAY_US = 86_400 * 1_000_000


def window(n: int, p_a: float, p_b: float, rng: random.Random, rule: WindowRule) -> str:
    counts = {"A": [0, 0], "B": [0, 0]}
    task = 0
    while min(counts["A"][1], counts["B"][1]) < rule.min_per_arm:
        arm = arm_of(f"w{n}", f"task-{task}")
        task += 1
        counts[arm][1] += 1
        counts[arm][0] += rng.random() < (p_a if arm == "A" else p_b)
    return settle(*counts["A"], *counts["B"], opened_us=0, now_us=DAY_US, rule=rule).status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=200)
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args()
    rng, rule = random.Random(args.seed), WindowRule()
    print(f"rule: {rule.describe()}")
    t0 = time.perf_counter()
    for base in (0.3, 0.5, 0.7):
        better = [window(n, base, base + 0.2, rng, rule) for n in range(args.windows)]
        both = [window(n, base + 0.1, base + 0.1, rng, rule) for n in range(args.windows)]
        right = better.count("B") / len(better)
        false = sum(v in ("A", "B") for v in both) / len(both)
        wrong = better.count("A")
        print(f"base {base:.1f}: B truly +20 pts decided B in {right:.1%} of {args.windows} (A wins {wrong}) "
              f"[target ≥ 95 %: {'PASS' if right >= 0.95 else 'MISS'}]; no true difference, a winner in {false:.1%} "
              f"[target ≤ 5 %: {'PASS' if false <= 0.05 else 'MISS'}]")
    print(f"{6 * args.windows} windows in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
