"""What a ``Brain.open`` costs, paired: this checkout against another interpreter's (the base), alternated.

    .venv/bin/python bench/brain_open.py --base-python <base checkout>/.venv/bin/python --rounds 6 --opens 5

Each round runs one child process per side, the order alternating (base first in even rounds): the child
opens a brain once to warm up (imports, the chDB engine's start), then ``--opens`` brains in new folders and
the same folders again (an existing, migrated folder), embedder none, each closed before the next. It prints
each open's CPU (``time.process_time``: every thread of the process, chDB's included) and wall. The parent
prints, per side and kind of folder, the median over all opens, and the median of the rounds' paired
differences (branch − base). Run ``uptime`` beside it: a loaded machine slows walls more than CPU.
A child's code is its interpreter's ``hindbrain`` (an editable install: its checkout); no bytecode is written.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("new", "existing")
SIDES = ("base", "branch")


def child(opens: int) -> dict[str, list[tuple[float, float]]]:
    """(CPU, wall) seconds of each open, by kind of folder."""
    from hindbrain import Brain

    with tempfile.TemporaryDirectory() as root:
        Brain.open(Path(root) / "warm", embedder="none").close()
        costs: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
        for kind in KINDS:
            for n in range(opens):
                cpu, wall = time.process_time(), time.perf_counter()
                brain = Brain.open(Path(root) / f"b{n}", embedder="none")
                costs[kind].append((time.process_time() - cpu, time.perf_counter() - wall))
                brain.close()
    return costs


def run_child(python: str, opens: int) -> dict[str, list[tuple[float, float]]]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([python, __file__, "--child", str(opens)], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.splitlines()[-1])


def paired(rounds: list[dict[str, dict]], kind: str, at: int) -> float:
    """The median over rounds of (branch's median − base's median) of measure ``at`` (0 CPU, 1 wall)."""
    return statistics.median(
        statistics.median(c[at] for c in r["branch"][kind]) - statistics.median(c[at] for c in r["base"][kind])
        for r in rounds)


def report(rounds: list[dict[str, dict]]) -> None:
    for kind in KINDS:
        for at, measure in ((0, "CPU"), (1, "wall")):
            base, branch = (statistics.median(c[at] for r in rounds for c in r[side][kind]) for side in SIDES)
            count = sum(len(r["base"][kind]) for r in rounds)
            print(f"{kind:8} {measure:4} base {base * 1000:6.1f} ms  branch {branch * 1000:6.1f} ms"
                  f"  paired Δ {paired(rounds, kind, at) * 1000:+6.1f} ms  ({count} opens a side)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-python", help="the base checkout's interpreter (its hindbrain is the base)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--opens", type=int, default=5, help="opens of each kind of folder a child")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child)))
        return
    if not args.base_python:
        parser.error("--base-python: field 'base_python' is required (the base checkout's interpreter)")
    rounds = []
    for n in range(args.rounds):
        sides = [("base", args.base_python), ("branch", sys.executable)]
        row = {side: run_child(python, args.opens) for side, python in (sides if n % 2 == 0 else sides[::-1])}
        rounds.append(row)
        print(f"round {n + 1}: " + "  ".join(f"{side} " + " / ".join(
            f"{kind} {statistics.median(c[0] for c in row[side][kind]) * 1000:.0f}" for kind in KINDS) + " ms CPU"
            for side in SIDES), flush=True)
    report(rounds)


if __name__ == "__main__":
    main()
