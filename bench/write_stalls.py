"""The writer's stalls: what one served brain thread's calls wait for the views' micro-batches.

    python bench/write_stalls.py                          # both arms, alternated, 2 rounds each
    python bench/write_stalls.py --loops 600 --rounds 1   # a quick run

In ``hindbrain serve`` every call runs on one brain thread. Every ``batch_size`` (2,000) records
appended, the views' micro-batch falls due (``streams.runner``): projected inline, the call that
appended its last record paid 70-105 ms of CPU for it and every call queued behind waited as long
(the soak's p99 stalls, docs/speed.md "Soak stalls, round ten"). This runs the soak's mix of calls
through ``Brain`` in one thread, back to back — per loop a task's perceive, a recall, a batch of
tool output, the anomaly's perceive, an outcome naming the recall — and reports per call type the
latency p50 / p99 / p99.9 / max and the calls over 50 ms, with the views' batch projected
``inline`` (as before) or in the ``background`` (the default now), each arm on a fresh brain, the
arms alternated (``--rounds``). Also the caller's thread CPU a loop: the work the projector
takes off it, and the whole process's CPU a loop: what the move costs in all.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import tempfile
import time
from collections import defaultdict

from hindbrain import Brain

KINDS = ("perceive", "recall", "perceive/batch", "outcome")
SYSTEMS = ("billing", "iam", "portal", "export", "ledger")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_arm(background: bool, loops: int, embedder: str, batch: int, seed: int) -> dict:
    """One fresh brain, ``loops`` tasks; latencies (s) by call type and the CPU seconds spent."""
    rng = random.Random(seed)
    times: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="hindbrain-stalls-") as home, Brain.open(home, embedder=embedder) as brain:
        brain.runner.background = background

        def timed(label: str, call, **fields):
            t = time.perf_counter()
            out = call(**fields)
            times[label].append(time.perf_counter() - t)
            return out

        thread0, process0 = time.thread_time(), _process_cpu()
        for n in range(loops):
            system, agent = rng.choice(SYSTEMS), f"agent-{n % 50}"
            common = {"tenant": f"tenant-{n % 5}", "agent": agent, "task": f"{agent}-t{n}"}
            timed("perceive", brain.perceive, text=f"task: export the {system} report (ticket {rng.randrange(10**6)})",
                  system=system, **common)
            pack = timed("recall", brain.recall, query=f"export the {system} report", **common)
            timed("perceive/batch", brain.perceive_many, events=[
                {**common, "text": f"{system} step {i}: {rng.randrange(10**9)} rows, "
                                                          f"status {rng.choice(['ok', 'slow', 'retry'])}"}
                for i in range(batch)])
            timed("perceive", brain.perceive, kind="anomaly", text=f"the {system} export hangs at 99%",
                  system=system, **common)
            timed("outcome", brain.outcome, tenant=common["tenant"], agent=agent, recall_id=pack.recall_id,
                  applied=[i.id for i in pack.items[:1]], success=rng.random() < 0.5)
        thread_cpu, process_cpu = time.thread_time() - thread0, _process_cpu() - process0
    return {"times": times, "thread_cpu": thread_cpu, "process_cpu": process_cpu}


def _process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loops", type=int, default=1500, help="tasks per arm and round (~13 records each)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--arms", default="inline,background")
    ap.add_argument("--embedder", default="static", help="the views' batches do not depend on it; the neural "
                                                         "model's workers would only add noise")
    ap.add_argument("--batch", type=int, default=8, help="events in a batch of tool output")
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()
    arms = args.arms.split(",")
    pooled: dict[str, dict] = {arm: {"times": defaultdict(list), "thread_cpu": 0.0, "process_cpu": 0.0} for arm in arms}
    for r in range(args.rounds):
        for arm in arms if r % 2 == 0 else arms[::-1]:
            got = run_arm(arm == "background", args.loops, args.embedder, args.batch, args.seed + r)
            for kind, values in got["times"].items():
                pooled[arm]["times"][kind] += values
            pooled[arm]["thread_cpu"] += got["thread_cpu"]
            pooled[arm]["process_cpu"] += got["process_cpu"]
            slowest = max(v for values in got["times"].values() for v in values)
            print(f"round {r + 1} {arm:10s}: slowest call {slowest * 1000:.0f} ms, caller CPU "
                  f"{got['thread_cpu'] / args.loops * 1000:.2f} ms a loop, process "
                  f"{got['process_cpu'] / args.loops * 1000:.2f} ms a loop", flush=True)
    loops = args.loops * args.rounds
    print(f"\n{loops} loops an arm ({args.rounds} round(s)), embedder {args.embedder}; ms: p50 / p99 / p99.9 / max, "
          "calls over 50 ms")
    for kind in KINDS:
        cells = []
        for arm in arms:
            v = [x * 1000 for x in pooled[arm]["times"][kind]]
            cells.append(f"{arm} {statistics.median(v):5.1f} / {pct(v, 0.99):6.1f} / {pct(v, 0.999):6.1f} / "
                         f"{max(v):6.1f}, {sum(1 for x in v if x > 50):3d}")
        print(f"  {kind:15s} " + "   |   ".join(cells))
    for arm in arms:
        print(f"  {arm:10s} CPU a loop: caller {pooled[arm]['thread_cpu'] / loops * 1000:.2f} ms, "
              f"process {pooled[arm]['process_cpu'] / loops * 1000:.2f} ms")


if __name__ == "__main__":
    main()
