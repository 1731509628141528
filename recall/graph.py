"""The graph channel's links (design.md §seed-000-exp-4): fragments weak alone, strong together.

The strongest search hits (the *seeds*) lend support to every candidate that shares an
entity and/or an action cue with them; sharing both is a chain and counts double. Seeds
also pull in items the searches missed, but only through *distinctive* cues (held by at
most ``GRAPH_MAX_DF`` items): a cue shared by hundreds of items is not a link.

Computed for all candidates in one C pass (``_scan.graph_links``): each candidate's link terms
are looked up among the seeds' (~16 terms), and its supports combined in the float64 operations
the boolean matrices (candidates × link cues) this replaced did, so the scores are bit for bit
theirs (tests/recall/test_graph_links.py keeps the matrices as the oracle). The matrices, their
column map and the result dicts cost ~0.2 ms of Python a recall at 100k for ~100 candidates.
The shared cue terms, which only explanations need, are found for the pool alone (``Graph.links``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindbrain.recall import _scan, channels
from hindbrain.recall.documents import LINK_PREFIXES
from hindbrain.recall.tenant_index import TenantIndex

GRAPH_SEEDS = 8  # strongest candidates whose links the graph follows
GRAPH_MAX_DF = 200  # a cue term held by more items than this is not followed (not distinctive)
GRAPH_NEW = 64  # items the graph may add beyond the search hits
# a seed's support to a candidate is its base × this, by the number of link kinds they share
_STRENGTH = (0.0, *(channels.chain_strength(k) for k in range(1, len(LINK_PREFIXES) + 1)))


@dataclass
class Graph:
    candidates: list[int]  # the search hits, then the items the graph added
    scores: dict[int, float]  # candidate → graph score (noisy-or of its links' supports)
    seeds: list[tuple[int, float]]  # (doc number, base score), strongest first
    chains: dict[int, float]  # candidate → its strongest chain link's support (entity *and* action shared)
    docs: list | None = None  # the candidates' documents, in their order (read once for the stages after)
    # (seed, base score, id, link cues) of each seed, read once for all the explanations of a recall
    _seed_links: list[tuple[int, float, str, frozenset[str]]] | None = field(default=None, init=False, repr=False,
                                                                              compare=False)

    def links(self, tenant: TenantIndex, no: int) -> list[tuple[str, float, list[str]]]:
        """(seed id, seed base score, shared link cues) for ``channels.graph``'s explanation."""
        if self._seed_links is None:
            docs = tenant.docs
            self._seed_links = [(seed, base, docs[seed].id, frozenset(docs[seed].links)) for seed, base in self.seeds]
        mine = tenant.docs[no].links
        return [(seed_id, base, sorted(shared)) for seed, base, seed_id, links in self._seed_links
                if seed != no and (shared := links.intersection(mine))]


def graph(tenant: TenantIndex, base: dict[int, float], mask, docs: list | None = None) -> Graph:
    """``base``: search candidate → its search relevance; ``mask``: the allowed documents; ``docs``:
    the candidates' documents in ``base``'s order when the caller read them already."""
    seeds = strongest(base)
    candidates = list(base)
    docs = tenant.docs.take(candidates) if docs is None else list(docs)
    if not seeds:
        return Graph(candidates, {}, [], {}, docs)
    reached = _reached(tenant, [no for no, _ in seeds], set(base), mask)
    candidates += reached
    docs += tenant.docs.take(reached)
    scores, chains = _scan.graph_links(candidates, [doc.links for doc in docs], [row for _, row in seeds],
                                       [base[no] for no, _ in seeds], LINK_PREFIXES, _STRENGTH)
    return Graph(candidates, scores, [(no, base[no]) for no, _ in seeds], chains, docs)


def strongest(base: dict[int, float]) -> list[tuple[int, int]]:
    """The seeds: the ``GRAPH_SEEDS`` candidates of positive base relevance, strongest first (the lower
    number first on a tie), each as (doc number, its place in ``base``)."""
    ranked = sorted((-b, no, row) for row, (no, b) in enumerate(base.items()) if b > 0)
    return [(no, row) for _, no, row in ranked[:GRAPH_SEEDS]]


def _reached(tenant: TenantIndex, seeds: list[int], known: set[int], mask) -> list[int]:
    """Items outside the search hits holding a seed's distinctive cue, seed by seed, at most ``GRAPH_NEW``.
    A cue another seed followed before adds nothing (its documents are known or hidden by then), so it is
    looked up once: the seeds of a recall mostly share theirs (~16 cues, a few distinct)."""
    new: list[int] = []
    followed: set[str] = set()
    for seed in seeds:
        for term in tenant.docs[seed].links:
            if term in followed:
                continue
            followed.add(term)
            held = tenant.bm25.docs_with(term, max_df=GRAPH_MAX_DF)
            for d in () if held is None else held.tolist():
                if d not in known and (mask is None or mask[d]):
                    known.add(d)
                    new.append(d)
                    if len(new) == GRAPH_NEW:
                        return new
    return new

