"""The fleet simulator's table (design.md §issue-7): the same world, seed and agent policy through
three arms — no memory, naive RAG, hindbrain — then the same metrics over several seeds.

    python bench/sim.py [--seed 7] [--rounds 6] [--seeds 7,8,9,10,11] [--second-seeds 1,2,3,4,5]
                        [--third-seeds 1,2,3] [--third-rounds 40] [--report FILE]

Prints per round the success and repeated-mistake rates, then the overall metrics, the
ticket desk, and per metric the median and the range over ``--seeds`` (each seed is another
schedule of the same world; ``--report FILE`` writes the learning report of those runs, each
curve the median per round with the band of the seeds). A repeated mistake is the naive action on a system whose
current rule the arm had already solved once; preference consistency counts answers to
users who stated a preference in an earlier session; tokens per success is what was
injected divided by successful tasks.

Then the second world (``hindbrain.sim.second``, design.md §issue-17: written from the public SDK only,
default calls, plain-text tickets, a rule change, a changed preference) over
``--second-seeds``, each metric with the issue's target; then the third world
(``hindbrain.sim.third``, design.md §issue-29: written blind, agents that read ``pack.render()`` as text, a
``Brain`` opened with default arguments) over ``--third-seeds``, ``--third-rounds`` rounds each.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hindbrain import Brain
from hindbrain.sim import compare, default_world, ticket_world
from hindbrain.sim.report import rounds as report_rounds
from hindbrain.sim.report import write_html
from hindbrain.sim.run import desk_table, format_metric, metrics_table, rounds_table
from hindbrain.sim.second import report as second_world
from hindbrain.sim.third import report as third_world


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seeds", default="7,8,9,10,11", help="comma-separated seeds for the spread ('' to skip)")
    ap.add_argument("--second-seeds", default="1,2,3,4,5", help="seeds of the second world ('' to skip)")
    ap.add_argument("--third-seeds", default="1,2,3", help="seeds of the third world ('' to skip)")
    ap.add_argument("--third-rounds", type=int, default=40)
    ap.add_argument("--report", type=Path, help="write the learning report (HTML) of the --seeds runs here")
    ap.add_argument("--rule-layers", action="store_true",
                    help="hindbrain's agents ask for the rule layers at task start (the earlier policy; default: "
                         "the default layers, as a new user would)")
    args = ap.parse_args()
    rules_only = args.rule_layers
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as home, Brain.open(home, embedder="none") as brain:
        fleet = compare(default_world(args.seed, args.rounds), brain, rule_layers_at_start=rules_only)
        tickets = compare(ticket_world(args.seed), brain)
    print("\n".join(rounds_table(fleet)) + "\n\n" + "\n".join(metrics_table(fleet)))
    print("\n" + "\n".join(desk_table(tickets)))
    print(f"({time.perf_counter() - t0:.1f} s)")
    if args.seeds:
        spread([int(s) for s in args.seeds.split(",")], args.rounds, rules_only, args.report)
    if args.second_seeds:
        t0 = time.perf_counter()
        print("\n" + "\n".join(second_world([int(s) for s in args.second_seeds.split(",")], progress=lambda _: None)))
        print(f"({time.perf_counter() - t0:.1f} s)")
    if args.third_seeds:
        t0 = time.perf_counter()
        print("\n" + "\n".join(third_world([int(s) for s in args.third_seeds.split(",")], args.third_rounds)))
        print(f"({time.perf_counter() - t0:.1f} s)")


def spread(seeds: list[int], rounds: int, rules_only: bool = True, report: Path | None = None) -> None:
    """Median [min–max] of each metric per arm over the seeds, and hindbrain's token share of naive RAG;
    with ``report``, the learning report of these runs (each seed in its own brain, as here)."""
    t0 = time.perf_counter()
    per_seed, rows = [], []
    for seed in seeds:
        with tempfile.TemporaryDirectory() as home, Brain.open(home, embedder="none") as brain:
            per_seed.append(compare(default_world(seed, rounds), brain, rule_layers_at_start=rules_only))
            rows += report_rounds(brain)
    names = list(per_seed[0])
    print(f"\nover seeds {', '.join(map(str, seeds))} ({rounds} rounds each): median [min-max]")
    print(f"{'':>24}  " + "  ".join(f"{n:>22}" for n in names))
    for metric in per_seed[0][names[0]].total.metrics():
        cells = []
        for n in names:
            values = [v for runs in per_seed if (v := runs[n].total.metrics()[metric]) is not None]
            cells.append("-" if not values else f"{format_metric(metric, statistics.median(values))} "
                         f"[{format_metric(metric, min(values))}-{format_metric(metric, max(values))}]")
        print(f"{metric:>24}  " + "  ".join(f"{c:>22}" for c in cells))
    shares = [runs["hindbrain"].total.metrics()["tokens per success"] /
              runs["naive RAG"].total.metrics()["tokens per success"] for runs in per_seed]
    dropped = [runs["hindbrain"].stale_until_dropped if runs["hindbrain"].total.stale_failures else "not exercised"
               for runs in per_seed]
    print(f"hindbrain tokens per success / naive RAG's: median {statistics.median(shares):.0%} "
          f"[{min(shares):.0%}-{max(shares):.0%}] (target <= 30%)")
    fleet = [runs["hindbrain"].total.metrics()["fleet repeated mistakes"] for runs in per_seed]
    print(f"hindbrain fleet-wide repeated mistakes: median {statistics.median(fleet):.0%} "
          f"[{min(fleet):.0%}-{max(fleet):.0%}] (target <= 5%, design.md §issue-17)")
    print(f"failures until hindbrain stops injecting the falsified rule, per seed: {dropped} "
          "(target <= 2, design.md §issue-17)")
    print(f"({time.perf_counter() - t0:.1f} s)")
    if report:
        print(f"learning report over seeds {', '.join(map(str, seeds))}: {write_html(report, rows)}")


if __name__ == "__main__":
    main()
