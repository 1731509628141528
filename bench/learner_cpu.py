"""The learner's CPU an event on the caller's path (issue 28; docs/speed.md, "The learner's CPU, round twelve"):
``LearnerRuntime.observe`` (what ``perceive_many``'s listener runs) over batches of 5,000, its own records handed
back as the runner does, on two worlds: bench/api.py's events (no task succeeds: the number of record's) and
bench/learning.py's fleet (tasks fail then succeed, feedback, small talk: units accumulate). Thread CPU per batch.

    .venv/bin/python bench/learner_cpu.py                    # 100k events a world, 3 rounds
    .venv/bin/python bench/learner_cpu.py --size 20000 --rounds 1
    .venv/bin/python bench/learner_cpu.py --worlds api.py --snapshot    # also the snapshot's pickle, timed

Prints per world and round the median µs an event over the batches, the first and the last batch's (the work of
a success grew with the tenant's units before round twelve), and the median over the rounds. An A/B runs this
file in two checkouts, alternated (the file needs nothing of this round's code).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pickle
import random
import statistics
import sys
import threading
import time
from pathlib import Path

from hindbrain.brain import _perception, perceived
from hindbrain.learning.lifecycle import RULE_VERSION
from hindbrain.learning.runtime import SNAPSHOT_EVERY, SNAPSHOT_VERSION, LearnerRuntime
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _Log:
    lock = threading.RLock()

    def commit(self, *args) -> None:
        pass

    commit_later = commit


class _Runner:
    """Appends in memory and hands each append to its listeners, as the embedded runner does."""

    def __init__(self):
        self.listeners, self.end = [], 0

    def submit(self, records) -> None:
        batch = [Decoded(Position("x", 0, self.end + n), rt, r) for n, (rt, r) in enumerate(records)]
        self.end += len(batch)
        for listener in self.listeners:
            listener(batch)


def run(records: list[tuple[str, dict]], batch: int) -> tuple[list[float], LearnerRuntime]:
    """µs of thread CPU an event of each batch's ``observe`` (its own records' append included), and the
    runtime after the last."""
    runner = _Runner()
    runtime = LearnerRuntime(_Log(), runner)
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
    return out, runtime


def snapshot_ms(runtime: LearnerRuntime, times: int = 3) -> tuple[float, int]:
    """The median thread CPU ms of pickling what ``LearnerRuntime._write_snapshot`` pickles (the learner's
    state: on the caller, every ``SNAPSHOT_EVERY`` records) and its size in bytes."""
    state = {"version": SNAPSHOT_VERSION, "rules": RULE_VERSION, "offset": runtime._next,
             "tenants": runtime.learner.tenants, "counts": runtime.learner.counts}
    spent = []
    for _ in range(times):
        t = time.thread_time()
        data = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        spent.append(1e3 * (time.thread_time() - t))
    return statistics.median(spent), len(data)


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
    ap.add_argument("--snapshot", action="store_true", help="also time the snapshot's pickle after each round")
    args = ap.parse_args()
    chosen = {name: records for name, records in worlds(args.size).items() if name in args.worlds.split(",")}
    for name, records in chosen.items():
        medians = []
        for round_ in range(args.rounds):
            laps, runtime = run(records, args.batch)
            medians.append(statistics.median(laps))
            print(f"{name:<12} round {round_ + 1} median {medians[-1]:7.2f} us/event (first batch {laps[0]:7.2f}, "
                  f"last {laps[-1]:7.2f})  load {os.getloadavg()[0]:.1f}", flush=True)
            if args.snapshot:
                ms, size = snapshot_ms(runtime)
                print(f"{'':<12} snapshot pickle {ms:.0f} ms ({size / 1e6:.1f} MB): {1e3 * ms / SNAPSHOT_EVERY:.2f} us "
                      f"an event at one every {SNAPSHOT_EVERY:,} records", flush=True)
        print(f"{name:<12} median over {args.rounds} rounds, {args.size:,} events in batches of {args.batch:,}: "
              f"{statistics.median(medians):.2f} us/event", flush=True)


if __name__ == "__main__":
    main()
