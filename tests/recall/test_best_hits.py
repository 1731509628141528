"""The lexical stage's selection of its best hits (``recall.lexical.best_hits``) equals the
scalar rule it implements, the ``k`` best positive scores, best first, equal scores newest first, on
arbitrary score arrays full of ties and on a brain's own scores."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall.lexical import SAMPLE_STRIDE, best_hits


def oracle(scores: np.ndarray, k: int) -> list[int]:
    """The rule, one document at a time."""
    positive = [no for no in range(len(scores)) if scores[no] > 0]
    return sorted(positive, key=lambda no: (-scores[no], -no))[:max(0, k)]


# few distinct values (0 among them), so the k-th best is usually shared by many documents
levels = st.sampled_from([0.0, 0.0, 0.5, 1.25, 1.25, 2.0, 3.5])
noisy = st.floats(0.0, 9.0, allow_nan=False, width=32)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(levels, noisy), max_size=3000), st.integers(0, 130))
def test_best_hits_equals_the_scalar_rule(values, k):
    scores = np.asarray(values, dtype=np.float32)
    assert best_hits(scores, k).tolist() == oracle(scores, k)


def test_a_tie_at_the_cut_keeps_the_newest_documents():
    # 2000 documents share the best score: the sampled floor is that score, every one of them is a candidate
    scores = np.zeros(5000, dtype=np.float32)
    scores[1000:3000] = 2.0
    scores[4000] = 3.0
    assert best_hits(scores, 64).tolist() == [4000, *range(2999, 2936, -1)]
    assert len(scores[::SAMPLE_STRIDE]) >= 64


def test_the_engine_takes_the_best_hits_of_its_masked_scores(lexical_brain):
    b = lexical_brain
    for n in range(300):  # templated events: many share a score exactly
        b.perceive(tenant="acme", text=f"deploy stalled on the schema lock, ticket {n % 7}")
        if n % 3 == 0:
            b.perceive(tenant="acme", text=f"the coffee machine on floor {n % 5} is empty again")
    engine, tenant = b.engine, b.index.tenants["acme"]
    visible = np.random.default_rng(7).random(len(tenant.docs)) < 0.4
    for text in ("deploy stalled on the schema lock", "the coffee machine", "ticket 3 schema", "the"):
        query = SimpleNamespace(terms=text.split())  # all the lexical stage reads of a query
        for mask in (None, visible):
            scores, _ = tenant.bm25.scores(query.terms)
            if mask is not None:
                scores = scores * mask
            for fetch in (1, 8, 64, 1000):
                hits = engine._lexical(tenant, query, mask, fetch)
                assert list(hits) == oracle(scores, fetch)
                assert all(hits[no][0] == float(scores[no]) for no in hits)
