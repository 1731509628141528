"""The graph build's pause between chunks: always (before) vs only when a search waited (now).

    python bench/graph_yield.py --codes HOME/cache/vectors/gen-*/t0 [--size 30000] [--rounds 3]

Builds the same ``--size`` vectors' graph (``bench/graph_build.py``'s codes, one thread, no
search running) alternately with the pause after every chunk (a lock that always reports a
waiter: the old behaviour) and with ``VectorIndex``'s own lock, in one process, the order
alternating by round; prints each build and the median wall times' ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
from graph_build import load_codes

from hindbrain.recall import vectors


class _AlwaysWaited(vectors._NotedLock):
    """The old build: it paused after every chunk whether or not a search was waiting."""

    waited = property(lambda self: True, lambda self, value: None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--codes", type=Path)
    ap.add_argument("--size", type=int, default=30_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    codes = load_codes(args.codes, args.size).astype(np.float32)
    spent: dict[str, list[float]] = {"always": [], "noted": []}
    for r in range(args.rounds):
        for arm in ("always", "noted") if r % 2 == 0 else ("noted", "always"):
            index = vectors.VectorIndex(codes.shape[1], exact_limit=0)
            if arm == "always":
                index._lock = _AlwaysWaited()
            index.add(np.arange(len(codes)), codes, defer_graph=True)
            wall, cpu = time.perf_counter(), time.process_time()
            index.build_graph()
            spent[arm].append(time.perf_counter() - wall)
            print(f"round {r + 1} {arm}: {spent[arm][-1]:.2f} s wall, {time.process_time() - cpu:.2f} s CPU "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    med = {k: statistics.median(v) for k, v in spent.items()}
    print(f"{args.size:,} vectors, median wall: pause always {med['always']:.2f} s, only when a search waited "
          f"{med['noted']:.2f} s (x{med['noted'] / med['always']:.2f})")


if __name__ == "__main__":
    main()
