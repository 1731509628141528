"""The fleet simulator's table (issue 7, first slice): the same world, seed and agent policy
through three arms — no memory, naive RAG, hindbrain.

    python bench/sim.py [--seed 7] [--rounds 6]

Prints per round the success and repeated-mistake rates, then the overall metrics. A
repeated mistake is the naive action on a system whose current rule the arm had already
solved once; preference consistency counts answers to users who stated a preference in an
earlier session; tokens per success is what was injected divided by successful tasks.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from hindbrain import Brain
from hindbrain.sim import compare, default_world, ticket_world
from hindbrain.sim.run import metrics_table


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as home, Brain.open(home, embedder="none") as brain:
        fleet = compare(default_world(args.seed, args.rounds), brain)
        tickets = compare(ticket_world(args.seed), brain)
    table(fleet, args.rounds)
    print("\nthe ticket desk (seed 002): upset customers are satisfied far more often when the reply first "
          "acknowledges the problem; only outcomes and hindsight's beliefs can tell the agents")
    for n, run in tickets.items():
        per_round = " ".join(f"{c.upset_solved}/{c.upset_tickets}" for c in run.rounds)
        print(f"{n:>12}: upset tickets solved per round {per_round}; overall "
              f"{pct(run.total.metrics()['upset-customer tickets solved'])}; replies guided by a belief "
              f"{run.total.belief_guided}")
    print(f"({time.perf_counter() - t0:.1f} s)")


def table(runs, rounds: int) -> None:
    names = list(runs)
    print("round | " + " | ".join(f"{n:>22}" for n in names) + "   (success / repeated mistakes)")
    for r in range(rounds):
        cells = []
        for n in names:
            c = runs[n].rounds[r]
            cells.append(f"{pct(c.rate(c.successes, c.tasks)):>10} / {pct(c.rate(c.repeated, c.known_tasks)):>9}")
        print(f"{r + 1:>5} | " + " | ".join(cells))
    print()
    print("\n".join(metrics_table(runs)))


if __name__ == "__main__":
    main()
