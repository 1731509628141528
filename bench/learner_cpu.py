"""The learner's CPU an event on the caller's path (issue 28; docs/speed.md, "The learner's CPU, round twelve"):
``LearnerRuntime.observe`` (what ``perceive_many``'s listener runs) over batches of 5,000, its own records handed
back as the runner does, on two worlds: bench/api.py's events (no task succeeds: the number of record's) and
bench/learning.py's fleet (tasks fail then succeed, feedback, small talk: units accumulate). Thread CPU per batch.

    .venv/bin/python bench/learner_cpu.py                                  # 100k events a world, 3 rounds
    .venv/bin/python bench/learner_cpu.py --base /path/to/an/older/checkout  # that checkout's learner beside

``--base``: the learner (learning/learner.py and learning/runtime.py) of another checkout, loaded in this process
beside this one's (the rest of the package is this checkout's), the arms alternated round by round: an A/B on a
shared machine without two processes' noise. Prints per world and arm the median µs an event over the batches
(the first and last batch too: the work of a success grew with the units in older learners) and the medians'
ratio.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

from hindbrain.brain import _perception, perceived
from hindbrain.learning import runtime as this_runtime
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def base_runtime(checkout: Path):
    """The runtime module of ``checkout``'s learner, its ``Learner`` that checkout's too."""
    _module("base_learner", checkout / "learning" / "learner.py")
    source = (checkout / "learning" / "runtime.py").read_text()
    source = source.replace("from hindbrain.learning.learner import Learner", "from base_learner import Learner")
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("base_runtime", loader=None))
    exec(compile(source, str(checkout / "learning" / "runtime.py"), "exec"), module.__dict__)
    return module


class _Log:
    lock = threading.RLock()

    def commit(self, *args) -> None:
        pass


class _Runner:
    """Appends in memory and hands each append to its listeners, as the embedded runner does."""

    def __init__(self):
        self.listeners, self.end = [], 0

    def submit(self, records) -> None:
        batch = [Decoded(Position("x", 0, self.end + n), rt, r) for n, (rt, r) in enumerate(records)]
        self.end += len(batch)
        for listener in self.listeners:
            listener(batch)


def run(runtime_module, records: list[tuple[str, dict]], batch: int) -> list[float]:
    """µs of thread CPU an event of each batch's ``observe`` (its own records' append included)."""
    runner = _Runner()
    runtime = runtime_module.LearnerRuntime(_Log(), runner)
    runner.listeners.append(runtime.observe)
    observe = runtime.observe
    out = []
    for start in range(0, len(records), batch):
        part = records[start:start + batch]
        decoded = [Decoded(Position("x", 0, runner.end + n), rt, r) for n, (rt, r) in enumerate(part)]
        runner.end += len(decoded)
        t = time.thread_time()
        observe(decoded)
        out.append(1e6 * (time.thread_time() - t) / len(decoded))
    return out


def worlds(size: int) -> dict[str, list[tuple[str, dict]]]:
    here = Path(__file__).parent
    api, learning = _module("bench_api", here / "api.py"), _module("bench_learning", here / "learning.py")
    rng = random.Random(size)
    return {"api.py": [("perception", _perception(perceived(api.event(rng, n)))) for n in range(size)],
            "learning.py": [("perception", _perception(perceived(e))) for e in learning.events(size)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worlds", default="api.py,learning.py")
    ap.add_argument("--base", type=Path, default=None, help="another checkout whose learner runs beside")
    args = ap.parse_args()
    arms = {"this": this_runtime}
    if args.base is not None:
        arms = {"base": base_runtime(args.base), **arms}
    chosen = {name: records for name, records in worlds(args.size).items() if name in args.worlds.split(",")}
    for name, records in chosen.items():
        results: dict[str, list[list[float]]] = {arm: [] for arm in arms}
        for round_ in range(args.rounds):
            for arm in (list(arms) if round_ % 2 == 0 else list(arms)[::-1]):  # alternated
                results[arm].append(run(arms[arm], records, args.batch))
                laps = results[arm][-1]
                print(f"{name:<12} round {round_ + 1} {arm:<5} median {statistics.median(laps):7.2f} us/event "
                      f"(first batch {laps[0]:7.2f}, last {laps[-1]:7.2f})  load {os.getloadavg()[0]:.1f}", flush=True)
        medians = {arm: statistics.median(statistics.median(laps) for laps in runs) for arm, runs in results.items()}
        last = {arm: statistics.median(laps[-1] for laps in runs) for arm, runs in results.items()}
        line = "  ".join(f"{arm} {m:.2f} us/event (last batch {last[arm]:.2f})" for arm, m in medians.items())
        ratio = f"  this/base x{medians['this'] / medians['base']:.2f}" if "base" in medians else ""
        print(f"{name:<12} medians over {args.rounds} rounds, {args.size:,} events: {line}{ratio}", flush=True)


if __name__ == "__main__":
    main()
