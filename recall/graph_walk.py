"""The masked search's walk over a saved usearch graph, filtering by the mask as it goes.

usearch's Python API has no predicate, so a masked search over-fetched nodes (twice the expected
need: 439 for k 64 under agent-1's 34 % mask at 100k) and dropped the hidden ones; the allowed
hits sat in the beam's tail, so it found 91.8 % of the exact top 10 (docs/speed.md, round eleven).
``GraphWalk`` walks the same graph in C (``_scan.graph_walk``) over the file ``Index.save`` wrote,
memory-mapped in the layout ``recall.graph_check.GraphFile`` reads and checks: every node routes,
only a node whose ring holds an allowed key enters the results, and the walk stops when it holds
``ef`` of them and no candidate is nearer than the farthest (hnswlib's filtered search). The
distances are the int8 codes' cosines from the file's vectors (the rows a usearch view reads).

Filtering alone bought nothing on api.py's 100k events (the same recall for the same CPU as the
over-fetch: the allowed hits sit in the beam's tail either way); what pays is that a walk in a
recall is bound by fetching cold rows and links, so the C walk prefetches each expanded node's
unseen neighbours' rows and the next candidate's links: at ``MASKED_EF`` 160 it finds 0.897 of the
exact top 64 (0.893 before) for ×0.53-0.68 of the walk's CPU (docs/speed.md, round twelve).

It is valid while the graph in memory is the file's: a replica's (a view) always, a reopened
owner's until its graph changes (``VectorIndex`` drops it then). ``py_walk`` is its oracle.
"""

from __future__ import annotations

import heapq
import math
from pathlib import Path

import numpy as np

from hindbrain.recall import _scan
from hindbrain.recall.graph_check import GraphFile, GraphLayoutError


class GraphWalk:
    """The filtered walk over the usearch dense index file at ``path`` (``dim`` int8 codes a row)."""

    def __init__(self, path: Path, dim: int):
        graph = GraphFile(Path(path))
        if graph.vector_bytes != dim:
            raise GraphLayoutError(f"{path}: {graph.vector_bytes} bytes a vector, expected {dim} int8 codes")
        self.dim, self.size, self.entry, self.top_level = dim, graph.size, graph.entry, graph.max_level
        self.connectivity, self.base = graph.connectivity, graph.connectivity_base
        self._file, self._starts, self._vectors_at = np.asarray(graph._m), graph.starts, graph.vectors_at

    @property
    def nbytes(self) -> int:
        """Bytes held in this process (the file's pages are the page cache's)."""
        return self._starts.nbytes

    def walk(self, q8: np.ndarray, ok: np.ndarray, ring: np.ndarray, ef: int, cap: int
             ) -> tuple[np.ndarray, np.ndarray, int]:
        """The ``ef`` nodes nearest ``q8`` (int8 codes) whose ring (``ring``: the next key beside
        a key, a key alone pointing at itself) holds a key ``ok`` allows (bool by key), best
        first: their keys, cosines, and how many nodes the walk expanded (at most ``cap``: fewer
        than ``ef`` nodes come back when it stopped there)."""
        keys = np.empty(ef, dtype=np.int64)
        sims = np.empty(ef, dtype=np.float32)
        n, expanded = _scan.graph_walk(self._file, self._starts, self._vectors_at, self.dim, self.connectivity,
                                       self.base, self.entry, self.top_level,
                                       np.ascontiguousarray(q8, dtype=np.int8), np.ascontiguousarray(ok, dtype=bool),
                                       np.ascontiguousarray(ring, dtype=np.int32), ef, cap, keys, sims)
        return keys[:n], sims[:n], expanded


def py_walk(path: Path, q8: np.ndarray, ok: np.ndarray, ring: np.ndarray, ef: int, cap: int
            ) -> tuple[np.ndarray, np.ndarray, int]:
    """``GraphWalk.walk`` in Python: the definition (float64 distances, ties to the lower slot)."""
    graph = GraphFile(Path(path))
    m, dim = np.asarray(graph._m), graph.vector_bytes
    keys = graph.keys().astype(np.int64)  # a removed node's free key wraps negative: never allowed
    q = q8.astype(np.int64)
    qq = int(q @ q)

    def distance(slot: int) -> float:
        x = m[graph.vectors_at + slot * dim : graph.vectors_at + (slot + 1) * dim].view(np.int8).astype(np.int64)
        xx = int(x @ x)
        return 1.0 if not xx or not qq else 1.0 - int(x @ q) / math.sqrt(qq * xx)

    def links(slot: int, level: int) -> list[int]:
        at = int(graph.starts[slot]) + 10 + (4 * (1 + graph.connectivity_base) + (level - 1) * 4 *
                                             (1 + graph.connectivity) if level else 0)
        count = int(m[at : at + 4].view("<u4")[0])
        return m[at + 4 : at + 4 + 4 * count].view("<u4").astype(np.int64).tolist()

    def allowed(slot: int) -> bool:
        key = int(keys[slot])
        if not 0 <= key < min(len(ok), len(ring)):
            return False
        k = key
        while True:
            if ok[k]:
                return True
            k = int(ring[k])
            if k == key:
                return False

    cur = graph.entry
    cur_dist = distance(cur)
    for level in range(graph.max_level, 0, -1):
        moved = True
        while moved:
            moved, best = False, cur
            for slot in links(cur, level):
                d = distance(slot)
                if d < cur_dist:
                    cur_dist, best, moved = d, slot, True
            cur = best
    seen = {cur}
    nearest = [(cur_dist, cur)]
    found = [(-cur_dist, -cur)] if allowed(cur) else []  # farthest first
    expanded = 0
    while nearest:
        c_dist, c = heapq.heappop(nearest)
        if len(found) >= ef and c_dist > -found[0][0]:
            break
        expanded += 1
        if expanded > cap:
            break
        for slot in links(c, 0):
            if slot in seen:
                continue
            seen.add(slot)
            d = distance(slot)
            if len(found) < ef or (d, slot) < (-found[0][0], -found[0][1]):
                heapq.heappush(nearest, (d, slot))
                if allowed(slot):
                    heapq.heappush(found, (-d, -slot))
                    if len(found) > ef:
                        heapq.heappop(found)
    best = sorted((-d, -s) for d, s in found)
    return (np.array([keys[s] for _, s in best], dtype=np.int64),
            np.array([1.0 - d for d, _ in best], dtype=np.float32), expanded)
