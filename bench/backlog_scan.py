"""The exact scan of vectors not yet in the graph, the old way and the new, in one process.

    python bench/backlog_scan.py [--size 100000] [--searches 60] [--visible 0.34]

Right after a bulk import every vector waits for the graph, so every recall's semantic search
scans the whole tail exactly, once per query view, under the agent's visibility mask (in
``bench/api.py``'s world agent-1 sees 34 % of the events: the others' private ones are hidden).
Builds a 512-d ``VectorIndex`` whose ``--size`` vectors all wait for the graph and times
``search`` (k 32) with the old scan (usearch's exact search over each block's rows, the masked
rows gathered into a copy first) and the new one (``recall.vectors._code_sims``: numkong's
batched kernel over the rows where they lie), arms alternated query by query, masked and not.
Prints each arm's median wall and CPU (the calling thread's) and the new/old ratio, and checks
the two arms return the same keys.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from usearch.index import MetricKind
from usearch.index import search as usearch_scan

from hindbrain.recall import vectors
from hindbrain.recall.vectors import _BLOCK, _NO_KEYS, _NO_SIMS, VectorIndex


def old_scan(self, keys: np.ndarray, q8: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The scan before this change (main 340c532), kept as the baseline."""
    if len(keys) == 0:
        return _NO_KEYS, _NO_SIMS
    keys = np.sort(keys)
    found_keys, found_sims = [], []
    for base, part in self._by_block(keys):
        block = self._blocks[base // _BLOCK]
        contiguous = part[-1] - part[0] + 1 == len(part)
        rows = block[part[0] - base : part[-1] - base + 1] if contiguous else block[part - base]
        found = usearch_scan(rows, q8, min(k, len(rows)), MetricKind.Cos, exact=True, threads=1)
        sims = np.nan_to_num((1.0 - found.distances).astype(np.float32), nan=0.0)
        found_keys.append(part[found.keys.astype(np.int64)])
        found_sims.append(sims)
    return np.concatenate(found_keys), np.concatenate(found_sims)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--searches", type=int, default=60)
    ap.add_argument("--visible", type=float, default=0.34)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    data = rng.standard_normal((args.size, 512)).astype(np.float32)
    index = VectorIndex(512, exact_limit=10)
    index.add(np.arange(args.size), data, defer_graph=True)
    queries = rng.standard_normal((args.searches, 512)).astype(np.float32)
    new_scan = VectorIndex._scan
    arms = {"old": old_scan, "new": new_scan}
    for label, allowed in (("no mask", None), (f"{args.visible:.0%} visible", rng.random(args.size) < args.visible)):
        spent: dict[str, list[tuple[float, float]]] = {a: [] for a in arms}
        same = 0
        for i, q in enumerate(queries):
            got = {}
            for name in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
                VectorIndex._scan = arms[name]
                t, c = time.perf_counter(), time.thread_time()
                got[name] = index.search(q, 32, allowed)[0].tolist()
                spent[name].append((time.perf_counter() - t, time.thread_time() - c))
            same += got["old"] == got["new"]
        VectorIndex._scan = new_scan
        wall = {a: statistics.median(w for w, _ in s) * 1e3 for a, s in spent.items()}
        cpu = {a: statistics.median(c for _, c in s) * 1e3 for a, s in spent.items()}
        print(f"{args.size:,} unbuilt, {label}: old wall p50 {wall['old']:.2f} ms (CPU {cpu['old']:.2f}), "
              f"new {wall['new']:.2f} ms (CPU {cpu['new']:.2f}); new/old wall {wall['new'] / wall['old']:.2f}x, "
              f"CPU {cpu['new'] / cpu['old']:.2f}x; same keys {same}/{len(queries)} "
              f"(load {os.getloadavg()[0]:.1f})")
    assert vectors.VectorIndex._scan is new_scan


if __name__ == "__main__":
    main()
