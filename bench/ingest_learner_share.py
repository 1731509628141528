"""The learner's share and the log's fsync in ``perceive_many`` (issue 28; docs/speed.md, round eleven): arms
in one process, alternated, each a fresh brain importing bench/api.py's distinct events in batches of 5,000.

    .venv/bin/python bench/ingest_learner_share.py                      # 100k, every arm twice
    .venv/bin/python bench/ingest_learner_share.py --size 50000 --rounds 3 --arms default,learner-thread

Arms:
* ``default``: the brain as it ships (the learner on the calling thread, each batch synced);
* ``no-learner``: the learner's listener removed: what any design moving the learner off the caller's thread
  could gain at most (a ceiling, not a brain to ship: nothing is learned);
* ``sync-normal``: ``log_sync="NORMAL"`` (no fsync at a COMMIT): what hiding the sync could gain at most;
* ``learner-thread``: a prototype of the learner off the caller's path in the same process: its listener
  queues each batch to a thread that runs it (no ordering guarantees beyond the queue's, nothing reads its
  state meanwhile: a measurement, not a design); "drained" is the rate once that thread caught up.

Per arm: the import's wall rate, the calling thread's CPU an event (what a change moves on a shared machine)
and the process's CPU an event (every thread). Read ratios within a round; the load is printed with each run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import queue
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from hindbrain import Brain

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)

ARMS = ("default", "no-learner", "sync-normal", "learner-thread")


def run(arm: str, events: list[dict], batch: int) -> tuple[float, float, float, float]:
    """(events/s, caller CPU µs an event, process CPU µs an event, events/s once the learner caught up) of
    one import in a fresh brain."""
    settings = {"log_sync": "NORMAL"} if arm == "sync-normal" else {}
    with tempfile.TemporaryDirectory(prefix="hindbrain-share-") as home, Brain.open(home, **settings) as brain:
        listeners, observe = brain.runner.listeners, brain.learning.observe
        at, learner = listeners.index(observe), None
        if arm == "no-learner":
            listeners[at] = lambda batch: None
        elif arm == "learner-thread":
            learner = _LearnerThread(observe)
            listeners[at] = learner.queue.put
        brain.perceive(tenant=api.TENANT, agent="agent-0", text="warm-up")
        brain.recall(tenant=api.TENANT, agent="agent-0", query="warm-up")
        t0, cpu, process = time.perf_counter(), time.thread_time(), time.process_time()
        for start in range(0, len(events), batch):
            brain.perceive_many(events[start:start + batch])
        wall, cpu, process = time.perf_counter() - t0, time.thread_time() - cpu, time.process_time() - process
        drained = wall
        if learner is not None:
            learner.stop()
            drained = time.perf_counter() - t0
        listeners[at] = observe  # closing commits the learner as usual
    return len(events) / wall, 1e6 * cpu / len(events), 1e6 * process / len(events), len(events) / drained


class _LearnerThread:
    """The prototype's thread: runs the learner's listener on each queued batch, in order."""

    def __init__(self, observe):
        self.queue: queue.Queue = queue.Queue()
        self.observe = observe
        self.thread = threading.Thread(target=self._run, name="bench-learner", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (batch := self.queue.get()) is not None:
            self.observe(batch)

    def stop(self) -> None:
        self.queue.put(None)
        self.thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--arms", default=",".join(ARMS))
    args = ap.parse_args()
    arms = args.arms.split(",")
    if unknown := set(arms) - set(ARMS):
        ap.error(f"unknown arms {sorted(unknown)}: choose from {', '.join(ARMS)}")
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    results: dict[str, list[tuple[float, float, float, float]]] = {arm: [] for arm in arms}
    for round_ in range(args.rounds):
        for arm in arms if round_ % 2 == 0 else arms[::-1]:  # alternated: no arm always runs first
            results[arm].append(run(arm, events, args.batch))
            rate, cpu, process, drained = results[arm][-1]
            print(f"round {round_ + 1} {arm:<14} {rate:>8,.0f} ev/s  caller CPU {cpu:6.1f} us/event  "
                  f"process CPU {process:6.1f} us/event  drained {drained:>8,.0f} ev/s  "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"\nmedians over {args.rounds} rounds, {args.size:,} events in batches of {args.batch:,}")
    base = results[arms[0]]
    for arm, runs in results.items():
        rate, cpu, process, drained = (statistics.median(r[k] for r in runs) for k in range(4))
        ratio = statistics.median(r[1] for r in runs) / statistics.median(b[1] for b in base)
        print(f"  {arm:<14} {rate:>8,.0f} ev/s  caller CPU {cpu:6.1f} us/event (x{ratio:.2f} of {arms[0]})  "
              f"process CPU {process:6.1f} us/event  drained {drained:>8,.0f} ev/s")


if __name__ == "__main__":
    main()
