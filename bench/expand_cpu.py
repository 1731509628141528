"""CPU time of a recall under two ``bench/expand_ab.py`` arms: ``Brain.recall`` (the harness's
arguments) on the held-out questions, the query vectors warmed first, three rounds, arms
interleaved with the order alternating, timed with ``time.process_time`` (the process's CPU,
all its threads) or, ``--clock thread``, ``time.thread_time`` (the calling thread's: what a recall costs
the thread that asks, none of the embedder's background threads): on a shared machine the wall clock
measures the neighbours, CPU time much less. ``--half``: whose questions (timing reads no answers).
Prints each arm's median and p90 (ms), the median ratio, and the median of the per-question paired
ratios (each question's median over the rounds, other arm / base).

    .venv/bin/python bench/expand_cpu.py --sets hard-en,hard-zh --arms inside,opening
    .venv/bin/python bench/expand_cpu.py --sets hard3-en,hard3-zh --arms base33,default --clock thread --half tuning
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import expand_ab  # noqa: E402
import quality  # noqa: E402


def recall(brain, data, q) -> None:
    brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, k=10, budget_tokens=100000, layers=["episodic"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="hard-en,hard-zh")
    ap.add_argument("--arms", default="inside,opening", help=f"two of {list(expand_ab.ARMS)}; the first is the base")
    ap.add_argument("--questions", type=int, default=300, help="held-out questions a set, at most")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clock", default="process", choices=("process", "thread"))
    ap.add_argument("--half", default="heldout", choices=("tuning", "heldout", "all"))
    args = ap.parse_args()
    base, other = args.arms.split(",")
    clock = time.thread_time if args.clock == "thread" else time.process_time
    for name in args.sets.split(","):
        data = quality.SETS[name]()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            questions = data.half(args.half)[: args.questions]

            for q in questions:  # the query vectors, cached before anything is timed
                recall(brain, data, q)
            cpu = {base: [], other: []}
            each = {base: [[] for _ in questions], other: [[] for _ in questions]}
            for r in range(args.rounds):
                for n, q in enumerate(questions):
                    for arm in ((base, other) if (n + r) % 2 else (other, base)):
                        expand_ab.set_arm(arm)
                        start = clock()
                        recall(brain, data, q)
                        took = (clock() - start) * 1000
                        cpu[arm].append(took)
                        each[arm][n].append(took)
            expand_ab.set_arm("default")
            med = {a: statistics.median(v) for a, v in cpu.items()}
            p90 = {a: statistics.quantiles(v, n=10)[8] for a, v in cpu.items()}
            paired = statistics.median(statistics.median(o) / max(statistics.median(b), 1e-9)
                                       for b, o in zip(each[base], each[other], strict=True))
            print(f"{name}: {args.clock} CPU ms a recall, median (p90): {base} {med[base]:.3f} ({p90[base]:.3f}), "
                  f"{other} {med[other]:.3f} ({p90[other]:.3f}); ratio x{med[other] / med[base]:.3f}, "
                  f"paired x{paired:.3f}", flush=True)
            brain.close()


if __name__ == "__main__":
    main()
