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
``--factors ''`` or ``--efs ''`` leaves a family out. ``--rebuild 32,30``: the filtered walk also over
graphs rebuilt from the home's own codes at each of those connectivities (same keys, one thread, saved and
walked as a snapshot's graph is), each against the same exact top k: what a connectivity costs in recall
(docs/speed.md, resident bytes, round thirteen)."""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
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
    ap.add_argument("--rebuild", default="", help="connectivities to rebuild the graph at from the home's codes")
    args = ap.parse_args()
    from hindbrain import Brain
    from hindbrain.recall import vectors
    from hindbrain.recall.engine import FETCH
    from hindbrain.recall.vectors import MASKED_EF

    k = FETCH
    with Brain.open(Path(args.home)) as brain:
        semantic = brain.index.semantic
        index = semantic._tenants[served.api.TENANT].index
        if index.exact:
            sys.exit("the tenant's vectors are searched exactly here (no graph): nothing to measure")
        tenant = brain.index.tenants[served.api.TENANT]
        allowed = vectors.allowed_mask(tenant.visible_mask(None, args.agent), len(index._state))
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
        for connectivity in (int(c) for c in args.rebuild.split(",") if c):
            with tempfile.TemporaryDirectory() as folder:
                fresh, seconds = rebuilt(index, connectivity, Path(folder))
                for ef in (int(e) for e in args.efs.split(",") if e):
                    recall, top10, cpu, expanded = filtered_walks(fresh, exact, ok, k, ef)
                    print(f"rebuilt M{connectivity} ({seconds:.0f} s CPU) filtered ef {ef}: "
                          f"{statistics.median(expanded):.0f} nodes expanded, recall@{k} {statistics.mean(recall):.3f} "
                          f"(min {min(recall):.3f}), top 10 found {statistics.mean(top10):.3f} (min {min(top10):.2f}), "
                          f"walk CPU p50 {statistics.median(cpu) * 1e3:.3f} ms (load {os.getloadavg()[0]:.1f})",
                          flush=True)
        for run in range(args.passes):
            for ef in (int(e) for e in args.efs.split(",") if e):
                if index._walker is None:
                    sys.exit("no GraphWalk over this index's graph (an owner whose graph changed since it opened)")
                recall, top10, cpu, expanded = filtered_walks(index, exact, ok, k, ef)
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


def filtered_walks(index, exact: list, ok: np.ndarray, k: int, ef: int) -> tuple[list, list, list, list]:
    """The walk that filters as it goes over ``index``'s saved graph, once a query of ``exact``: recall@k
    against the exact top k, the share of the exact top 10 reached by cosine, thread CPU, nodes expanded."""
    from hindbrain.recall import vectors
    from hindbrain.recall.vectors import _FETCH_CAP

    recall, top10, cpu, expanded = [], [], [], []
    for q8, want, tenth in exact:
        t = time.thread_time()
        nodes, sims, walked = index._walker.walk(q8, ok, index._next, max(k, ef), _FETCH_CAP)
        got, sims = vectors._expand(index._next, nodes, sims, k, ok)
        cpu.append(time.thread_time() - t)
        expanded.append(walked)
        recall.append(len(want & set(got.tolist())) / k)
        top10.append(float(np.mean(sims[:10] >= tenth - 1e-6)) if len(sims) else 0.0)
    return recall, top10, cpu, expanded


def rebuilt(index, connectivity: int, folder: Path):
    """A new graph index over ``index``'s graphed keys and their int8 codes at ``connectivity``, built on
    one thread, saved in ``folder`` and walked from that file; and its build's CPU seconds."""
    from hindbrain.recall import vectors

    keys = np.flatnonzero(index._state >= vectors._GRAPHED)
    fresh = vectors.VectorIndex(index.dim, exact_limit=0, connectivity=connectivity)
    for start in range(0, len(keys), 8192):
        part = keys[start : start + 8192]
        fresh.add(part, index._codes(part).astype(np.float32), defer_graph=True)  # absmax codes quantise to themselves
    cpu = time.process_time()
    fresh.build_graph()
    cpu = time.process_time() - cpu
    fresh.save(folder / "t0")
    if not fresh.walk_saved(folder):
        sys.exit(f"no GraphWalk over the graph rebuilt at connectivity {connectivity}")
    return fresh, cpu


if __name__ == "__main__":
    main()
