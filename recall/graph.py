"""The graph channel's links (design.md §seed-000-exp-4): fragments weak alone, strong together.

The strongest search hits (the *seeds*) lend support to every candidate that shares an
entity and/or an action cue with them; sharing both is a chain and counts double. Seeds
also pull in items the searches missed, but only through *distinctive* cues (held by at
most ``GRAPH_MAX_DF`` items): a cue shared by hundreds of items is not a link.

Computed for all candidates at once with small boolean matrices (candidates × link cues),
so a query's ~100 candidates × 8 seeds cost a few matrix products instead of ~1,000 Python
set intersections; the shared cue terms, which only explanations need, are found for the
pool alone (``Graph.links``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hindbrain.recall import channels
from hindbrain.recall.index import LINK_PREFIXES, TenantIndex

GRAPH_SEEDS = 8  # strongest candidates whose links the graph follows
GRAPH_MAX_DF = 200  # a cue term held by more items than this is not followed (not distinctive)
GRAPH_NEW = 64  # items the graph may add beyond the search hits
_STRENGTH = np.array([0.0] + [channels.chain_strength(k) for k in range(1, len(LINK_PREFIXES) + 1)])


@dataclass
class Graph:
    candidates: list[int]  # the search hits, then the items the graph added
    scores: dict[int, float]  # candidate → graph score (noisy-or of its links' supports)
    seeds: list[tuple[int, float]]  # (doc number, base score), strongest first
    chains: dict[int, float]  # candidate → its strongest chain link's support (entity *and* action shared)

    def links(self, tenant: TenantIndex, no: int) -> list[tuple[str, float, list[str]]]:
        """(seed id, seed base score, shared link cues) for ``channels.graph``'s explanation."""
        mine = set(tenant.docs[no].links)
        out = []
        for seed, base in self.seeds:
            if seed != no and (shared := mine.intersection(tenant.docs[seed].links)):
                out.append((tenant.docs[seed].id, base, sorted(shared)))
        return out


def graph(tenant: TenantIndex, base: dict[int, float], mask) -> Graph:
    """``base``: search candidate → its search relevance; ``mask``: the allowed documents."""
    seeds = sorted((no for no, b in base.items() if b > 0), key=lambda no: (-base[no], no))[:GRAPH_SEEDS]
    candidates = list(base)
    if not seeds:
        return Graph(candidates, {}, [], {})
    docs = tenant.docs
    candidates += _reached(tenant, seeds, set(base), mask)
    columns: dict[str, int] = {}
    rows, cols = [], []
    for row, no in enumerate(candidates):
        for term in docs[no].links:
            rows.append(row)
            cols.append(columns.setdefault(term, len(columns)))
    holds = np.zeros((len(candidates), len(columns)), dtype=np.float32)
    holds[rows, cols] = 1.0
    kind = np.array([_kind(term) for term in columns], dtype=np.int8)
    position = {no: row for row, no in enumerate(candidates)}
    seed_rows = [position[s] for s in seeds]
    kinds = np.zeros((len(seeds), len(candidates)), dtype=np.int8)
    for k in range(len(LINK_PREFIXES)):
        of_kind = holds[:, kind == k]
        kinds += (of_kind[seed_rows] @ of_kind.T > 0).astype(np.int8)
    support = np.array([base[s] for s in seeds], dtype=np.float64)[:, None] * _STRENGTH[kinds]
    support[np.arange(len(seeds)), seed_rows] = 0.0  # a seed does not support itself
    score = 1.0 - np.prod(1.0 - np.minimum(support, 1.0), axis=0)
    linked = np.flatnonzero(score > 0)
    chain = np.where(kinds == len(LINK_PREFIXES), support, 0.0).max(axis=0)
    return Graph(candidates, {candidates[r]: float(score[r]) for r in linked},
                 [(s, base[s]) for s in seeds], {candidates[r]: float(chain[r]) for r in np.flatnonzero(chain > 0)})


def _reached(tenant: TenantIndex, seeds: list[int], known: set[int], mask) -> list[int]:
    """Items outside the search hits holding a seed's distinctive cue, seed by seed, at most ``GRAPH_NEW``."""
    new: list[int] = []
    for seed in seeds:
        for term in tenant.docs[seed].links:
            held = tenant.bm25.docs_with(term, max_df=GRAPH_MAX_DF)
            for d in () if held is None else held.tolist():
                if d not in known and (mask is None or mask[d]):
                    known.add(d)
                    new.append(d)
                    if len(new) == GRAPH_NEW:
                        return new
    return new


def _kind(term: str) -> int:
    return next(n for n, prefix in enumerate(LINK_PREFIXES) if term.startswith(prefix))
