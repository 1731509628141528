"""The semantic stage's masked graph walk against exact search, by over-fetch factor.

    python bench/masked_walk.py --home DIR [--queries 200] [--agent agent-1] [--factors 2,1.5,1.2,1] [--passes 2]
        [--efs 64,96,128,160,192]

The brain in ``--home`` holds ``bench/api.py``'s events with a built vector graph (``bench/served.py``'s
``build``). For each of ``--queries`` distinct first-time queries (``served.distinct_queries``) the query
vector is searched under ``--agent``'s visible mask: exactly (every allowed key's int8 code scanned,
``VectorIndex._scan``) and by the graph walk (``VectorIndex._walk``) fetching
``factor × k × nodes / allowed + k`` nodes, k = the engine's ``FETCH``. Prints per factor the nodes
fetched, recall@k of the walk against the exact top k (by key), the share of the exact top 10 the
walk's top 10 reaches by cosine (ties count as found), and the walk's thread CPU p50. Factor 2 is
what ``VectorIndex._walk_masked`` did without a ``GraphWalk`` (docs/speed.md, round eleven).
``--efs``: the same for the walk that filters as it goes (``recall.graph_walk``, round twelve),
keeping ``ef`` allowed nodes, with the nodes it expanded (p50); ``MASKED_EF`` is what a search uses.
``--factors ''`` or ``--efs ''`` leaves a family out."""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import served  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--agent", default="agent-1")
    ap.add_argument("--factors", default="2,1.5,1.2,1")
    ap.add_argument("--efs", default="64,96,128,160,192")
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    from hindbrain import Brain
    from hindbrain.recall import vectors
    from hindbrain.recall.engine import FETCH
    from hindbrain.recall.vectors import _FETCH_CAP, MASKED_EF

    k = FETCH
    with Brain.open(Path(args.home)) as brain:
        semantic = brain.index.semantic
        index = semantic._tenants[served.api.TENANT].index
        if index.exact:
            sys.exit("the tenant's vectors are searched exactly here (no graph): nothing to measure")
        tenant = brain.index.tenants[served.api.TENANT]
        allowed = vectors._mask(tenant.visible_mask(None, args.agent), len(index._state))
        keys = np.flatnonzero(allowed & (index._state >= vectors._GRAPHED))
        bodies = served.distinct_queries(random.Random(7), args.queries)
        texts = [b["query"] if "query" in b else b["situation"]["actual"] for b in bodies]
        exact = []
        for vector in semantic.embed_queries(texts):
            q8 = vectors.quantize(vector / np.linalg.norm(vector))[0]
            found, sims = vectors.top_k(*index._scan(keys, q8, k), k)
            exact.append((q8, set(found.tolist()), float(sims[min(9, len(sims) - 1)])))
        print(f"{len(keys):,} of {index._nodes:,} graph nodes allowed for {args.agent}; k {k}; "
              f"{args.queries} queries; MASKED_EF {MASKED_EF}")
        ok = allowed & (index._state >= vectors._GRAPHED)
        for run in range(args.passes):
            for ef in (int(e) for e in args.efs.split(",") if e):
                if index._walker is None:
                    sys.exit("no GraphWalk over this index's graph (an owner whose graph changed since it opened)")
                recall, top10, cpu, expanded = [], [], [], []
                for q8, want, tenth in exact:
                    t = time.thread_time()
                    nodes, sims, walked = index._walker.walk(q8, ok, index._next, max(k, ef), _FETCH_CAP)
                    got, sims = vectors._expand(index._next, nodes, sims, k, ok)
                    cpu.append(time.thread_time() - t)
                    expanded.append(walked)
                    recall.append(len(want & set(got.tolist())) / k)
                    top10.append(float(np.mean(sims[:10] >= tenth - 1e-6)) if len(sims) else 0.0)
                print(f"pass {run + 1} filtered ef {ef}: {statistics.median(expanded):.0f} nodes expanded, "
                      f"recall@{k} {statistics.mean(recall):.3f} (min {min(recall):.3f}), top 10 found "
                      f"{statistics.mean(top10):.3f} (min {min(top10):.2f}), walk CPU p50 "
                      f"{statistics.median(cpu) * 1e3:.3f} ms (load {os.getloadavg()[0]:.1f})", flush=True)
            for factor in (float(f) for f in args.factors.split(",") if f):
                fetch = min(index._nodes, int(k * factor * index._nodes / len(keys)) + k)
                recall, top10, cpu = [], [], []
                for q8, want, tenth in exact:
                    t = time.thread_time()
                    got, sims = index._walk(q8, fetch, allowed, k)
                    cpu.append(time.thread_time() - t)
                    recall.append(len(want & set(got[:k].tolist())) / k)
                    top10.append(float(np.mean(sims[:10] >= tenth - 1e-6)) if len(sims) else 0.0)
                print(f"pass {run + 1} factor {factor}: {fetch} nodes, recall@{k} {statistics.mean(recall):.3f} "
                      f"(min {min(recall):.3f}), top 10 found {statistics.mean(top10):.3f} (min {min(top10):.2f}), "
                      f"walk CPU p50 {statistics.median(cpu) * 1e3:.3f} ms (load {os.getloadavg()[0]:.1f})",
                      flush=True)


if __name__ == "__main__":
    main()
