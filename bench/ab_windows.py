"""A/B window benchmark (design.md §issue-6): with a true 20-point success-rate difference the window
is decided correctly in ≥ 95 % of 200 simulated windows; with no true difference a winner
is declared in ≤ 5 %.

    python bench/ab_windows.py [--windows 200] [--seed 3] [--agents 0,1,2,3,8]

Each simulated window assigns tasks to arms with ``recall.arms.arm_of`` (the hash the recalls
use), draws each task's outcome from its arm's true success rate, and runs until both arms
have ``min_per_arm`` outcomes; then ``jobs.ab.settle`` decides. Repeated over several base
rates so no one rate flatters the rule.

``--agents``: fleets whose tasks are reported by that many agents, each task's agent drawn at random (its own
generator, so every fleet sees the same outcomes), counted as hindsight counts them (``jobs.windows.arm_evidence``:
one reporter counts no more than the arm's others together); 0 counts every outcome, as before round thirty-one.
A window that has not closed after ``STOP_AFTER`` × ``min_per_arm`` tasks is ``open`` (it would end at
``max_days``: a one-agent fleet's windows all do). Each row also gives the median tasks a closed window took.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from hindbrain.jobs.ab import WindowRule, settle
from hindbrain.jobs.windows import arm_evidence
from hindbrain.recall.arms import arm_of

DAY_US = 86_400 * 1_000_000
STOP_AFTER = 6  # × min_per_arm tasks: a window still open then is reported open


def counted(reports: dict[str, list[int]], agents: int) -> tuple[int, int]:
    """An arm's (successes, total) as hindsight counts them for a fleet of ``agents`` (0: every outcome)."""
    if not agents:
        return sum(s for s, _ in reports.values()), sum(n for _, n in reports.values())
    successes, total, _ = arm_evidence({who: (s, n) for who, (s, n) in reports.items()})
    return successes, total


def window(n: int, p_a: float, p_b: float, seed: int, rule: WindowRule, agents: int) -> tuple[str, int]:
    """A window's verdict and the tasks it took."""
    outcomes, reporters = random.Random(seed), random.Random(seed + 1)
    reports: dict[str, dict[str, list[int]]] = {"A": {}, "B": {}}
    counts = {"A": (0, 0), "B": (0, 0)}
    task = 0
    while min(counts["A"][1], counts["B"][1]) < rule.min_per_arm:
        if task >= STOP_AFTER * rule.min_per_arm:
            return "open", task
        arm = arm_of(f"w{n}", f"task-{task}")
        task += 1
        agent = f"agent-{reporters.randrange(agents)}" if agents else ""
        tally = reports[arm].setdefault(agent, [0, 0])
        tally[1] += 1
        tally[0] += outcomes.random() < (p_a if arm == "A" else p_b)
        counts[arm] = counted(reports[arm], agents)
    return settle(*counts["A"], *counts["B"], opened_us=0, now_us=DAY_US, rule=rule).status, task


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--windows", type=int, default=200)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--agents", default="0", help="comma-separated fleet sizes (0: every outcome counts)")
    args = ap.parse_args()
    rule = WindowRule()
    print(f"rule: {rule.describe()}")
    t0 = time.perf_counter()
    for agents in (int(a) for a in args.agents.split(",")):
        for base in (0.3, 0.5, 0.7):
            seeds = random.Random(f"{args.seed}-{base}")  # the same windows for every fleet size
            better = [window(n, base, base + 0.2, seeds.randrange(2**32), rule, agents) for n in range(args.windows)]
            both = [window(n, base + 0.1, base + 0.1, seeds.randrange(2**32), rule, agents)
                    for n in range(args.windows)]
            right = [v for v, _ in better].count("B") / len(better)
            false = sum(v in ("A", "B") for v, _ in both) / len(both)
            wrong = [v for v, _ in better].count("A")
            still = sum(v == "open" for v, _ in better + both)
            took = [t for v, t in better + both if v != "open"]
            print(f"agents {agents}, base {base:.1f}: B truly +20 pts decided B in {right:.1%} of {args.windows} "
                  f"(A wins {wrong}) [target ≥ 95 %: {'PASS' if right >= 0.95 else 'MISS'}]; no true difference, "
                  f"a winner in {false:.1%} [target ≤ 5 %: {'PASS' if false <= 0.05 else 'MISS'}]; open {still}; "
                  f"median tasks to close {statistics.median(took) if took else '-'}")
    print(f"{6 * args.windows} windows per fleet size in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
