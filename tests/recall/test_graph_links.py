"""The graph channel's supports in one C pass (``_scan.graph_links``, ``recall.graph.graph``).

What must hold: on drawn tenants and candidate sets (ties, zero and negative relevance, seeds
above 1, masks, items only the graph reaches) ``graph`` returns exactly what the boolean
matrices it replaced returned (``matrix_graph``, kept here as the oracle, with the cue look-ups
of every seed, ``seed_by_seed``): the same candidates, seeds, scores and chain supports, float for
float and in the same order, and the candidates' documents beside them; and a malformed call
(a link term of no known kind, a seed outside the candidates) raises instead of guessing."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hindbrain.recall import _scan, channels
from hindbrain.recall.documents import LINK_PREFIXES
from hindbrain.recall.event_documents import event_doc
from hindbrain.recall.graph import _STRENGTH, GRAPH_MAX_DF, GRAPH_NEW, GRAPH_SEEDS, Graph, graph
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.tenant_index import TenantIndex

SYSTEMS = ["iam", "vpn", "billing", "crm", "okta", "mail", "wiki", "jira"]
ACTIONS = ["restart", "submit change", "request approval", "rotate key", "clear cache", "escalate"]


def seed_by_seed(tenant: TenantIndex, seeds: list[int], known: set[int], mask) -> list[int]:
    """What the graph reaches beyond the candidates as it was found before: every cue of every seed looked up."""
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


def matrix_graph(tenant: TenantIndex, base: dict[int, float], mask) -> Graph:
    """The graph channel as it was before the C pass: boolean matrices (candidates × link cues)."""
    strength = np.array([0.0] + [channels.chain_strength(k) for k in range(1, len(LINK_PREFIXES) + 1)])
    seeds = sorted((no for no, b in base.items() if b > 0), key=lambda no: (-base[no], no))[:GRAPH_SEEDS]
    candidates = list(base)
    if not seeds:
        return Graph(candidates, {}, [], {})
    docs = tenant.docs
    candidates += seed_by_seed(tenant, seeds, set(base), mask)
    columns: dict[str, int] = {}
    rows, cols = [], []
    for row, no in enumerate(candidates):
        for term in docs[no].links:
            rows.append(row)
            cols.append(columns.setdefault(term, len(columns)))
    holds = np.zeros((len(candidates), len(columns)), dtype=np.float32)
    holds[rows, cols] = 1.0
    kind = np.array([next(n for n, p in enumerate(LINK_PREFIXES) if t.startswith(p)) for t in columns], dtype=np.int8)
    position = {no: row for row, no in enumerate(candidates)}
    seed_rows = [position[s] for s in seeds]
    kinds = np.zeros((len(seeds), len(candidates)), dtype=np.int8)
    for k in range(len(LINK_PREFIXES)):
        of_kind = holds[:, kind == k]
        kinds += (of_kind[seed_rows] @ of_kind.T > 0).astype(np.int8)
    support = np.array([base[s] for s in seeds], dtype=np.float64)[:, None] * strength[kinds]
    support[np.arange(len(seeds)), seed_rows] = 0.0  # a seed does not support itself
    score = 1.0 - np.prod(1.0 - np.minimum(support, 1.0), axis=0)
    linked = np.flatnonzero(score > 0)
    chain = np.where(kinds == len(LINK_PREFIXES), support, 0.0).max(axis=0)
    return Graph(candidates, {candidates[r]: float(score[r]) for r in linked},
                 [(s, base[s]) for s in seeds], {candidates[r]: float(chain[r]) for r in np.flatnonzero(chain > 0)})


def _tenant(n: int, seed: int) -> TenantIndex:
    """``n`` events, each naming 0-3 systems and 0-1 action from small pools: cues held by a few dozen
    documents each (under ``GRAPH_MAX_DF``, so seeds reach beyond the candidates too)."""
    rng = random.Random(seed)
    index = RecallIndex()
    items = []
    for k in range(n):
        fields = {"text": f"event {k}", "scope": {}, "entities": rng.sample(SYSTEMS, rng.randint(0, 3))}
        if rng.random() < 0.7:
            fields["action"] = rng.choice(ACTIONS)
        items.append(("t", *event_doc(f"e{k}", fields, k, "a1")))
    index.add(items)
    return index.tenants["t"]


def _base(rng: random.Random, n: int) -> dict[int, float]:
    """A search's candidates: up to 120 distinct numbers, relevance from below 0 to under or above 1, ties often."""
    nos = rng.sample(range(n), rng.randint(0, 120))
    coarse = rng.random() < 0.5  # two decimals: many equal relevances, the seeds' tie rule decides
    top = rng.choice([0.9, 1.8])  # half the cases have seeds whose supports reach 1 (capped)
    values = [rng.uniform(-0.2, top) for _ in nos]
    return {no: round(v, 2) if coarse else v for no, v in zip(nos, values, strict=True)}


def _same(got: Graph, want: Graph) -> None:
    assert got.candidates == want.candidates
    assert got.seeds == want.seeds
    assert list(got.scores.items()) == list(want.scores.items())  # equal floats, in the same order
    assert list(got.chains.items()) == list(want.chains.items())


def test_the_c_pass_is_the_matrices_on_drawn_cases():
    tenant = _tenant(600, seed=1)
    rng = random.Random(2)
    scored = chained = capped = reached = 0
    for _ in range(400):
        base = _base(rng, len(tenant.docs))
        mask = None if rng.random() < 0.4 else np.array([rng.random() < 0.6 for _ in range(len(tenant.docs))])
        got, want = graph(tenant, base, mask), matrix_graph(tenant, base, mask)
        _same(got, want)
        assert [d.id for d in got.docs] == [tenant.docs[no].id for no in got.candidates]
        scored += bool(want.scores)
        chained += bool(want.chains)
        capped += any(b > 1 for _, b in want.seeds) and bool(want.scores)
        reached += len(want.candidates) > len(base)
    # the draws reach every branch: scores, chains, supports capped at 1, items only the graph found
    assert min(scored, chained, capped, reached) >= 40, (scored, chained, capped, reached)


def test_a_doc_without_links_and_no_seed_at_all():
    tenant = _tenant(50, seed=3)
    _same(graph(tenant, {}, None), matrix_graph(tenant, {}, None))
    only_weak = {no: -0.1 for no in range(20)}  # no positive relevance: no seed
    _same(graph(tenant, only_weak, None), matrix_graph(tenant, only_weak, None))


def test_a_link_term_of_no_known_kind_is_refused():
    with pytest.raises(ValueError, match="starts with none of the prefixes"):
        _scan.graph_links([1, 2], [("@entity:iam", "iam"), ("@entity:iam",)], [0], [0.5], LINK_PREFIXES, _STRENGTH)


def test_a_seed_outside_the_candidates_is_refused():
    with pytest.raises(IndexError):
        _scan.graph_links([1, 2], [("@entity:iam",), ("@entity:iam",)], [2], [0.5], LINK_PREFIXES, _STRENGTH)
    with pytest.raises(ValueError, match="one links tuple a candidate"):
        _scan.graph_links([1, 2], [("@entity:iam",)], [0], [0.5], LINK_PREFIXES, _STRENGTH)


def test_shared_kinds_make_the_support():
    """One seed (relevance 0.8) and three candidates: sharing an entity only (0.8 × 0.5), an entity
    and an action (0.8 × 1.0, a chain), nothing."""
    links = [("@entity:iam", "@action:restart"), ("@entity:iam",), ("@entity:iam", "@action:restart"), ("@entity:x",)]
    scores, chains = _scan.graph_links([10, 11, 12, 13], links, [0], [0.8], LINK_PREFIXES, _STRENGTH)
    assert scores == {11: 0.8 * 0.5, 12: 0.8} and chains == {12: 0.8}
