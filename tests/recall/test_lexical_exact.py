"""The fused BM25 pass (``_scan.bm25_add``) gives the bits the exhaustive numpy scoring gave:
the same scores, idfs and top-k (ids and scores), with common and rare terms, repeated query
terms, masks and ties, over a mapped base, bulk segments and single adds."""

import math
import random
from collections import Counter

import numpy as np
import pytest

from hindbrain.recall import _scan
from hindbrain.recall.lexical import K1, B, BM25Index


def exhaustive(index: BM25Index, terms: list[str]) -> tuple[np.ndarray, dict[str, float]]:
    """``BM25Index.scores`` as it was before the fused pass (its dense rows held these same values)."""
    n = index._n
    scores, idfs = np.zeros(n, dtype=np.float32), {}
    avgdl = index._total_length / n or 1.0
    lengths = index._lengths[:n]
    for term, qtf in Counter(terms).items():
        t, b = index._lookup(term)
        if t is None and b < 0:
            continue
        docs, tfs = index._postings(t, b)
        df = len(docs)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        idfs[term] = idf
        norm = K1 * (1.0 - B + B * lengths[docs] / avgdl)
        scores[docs] += (idf * qtf) * tfs * (K1 + 1.0) / (tfs + norm)
    return scores, idfs


def engine_top(scores: np.ndarray, mask: np.ndarray | None, k: int) -> list[tuple[int, float]]:
    """``RecallEngine._lexical``'s cut (mask, positives, the ``k`` best) with ties at the k-th score
    broken by document number, applied alike to both score arrays compared: the scores are what is
    under test here (``lexical.best_hits``'s own tie rule has tests/recall/test_best_hits.py)."""
    if mask is not None:
        scores = scores * mask[: len(scores)]
    hits = np.flatnonzero(scores > 0)
    order = hits[np.lexsort((hits, -scores[hits]))][:k]
    return [(int(d), float(scores[d])) for d in order]


def corpus(rng: random.Random, n: int) -> list[list[str]]:
    """Every document holds "the"; "ticket" is in ~half, each w<i> in ~1/(i + 2); rare r<j> once or
    twice; every 7th document is a copy of an earlier one (ties)."""
    docs = []
    for d in range(n):
        if d % 7 == 6:
            docs.append(list(docs[rng.randrange(d)]))
            continue
        doc = ["the"] * rng.randint(1, 3) + (["ticket"] if rng.random() < 0.5 else [])
        doc += [f"w{i}" for i in range(40) if rng.random() < 1 / (i + 2)]
        doc += [f"r{rng.randrange(n)}" for _ in range(rng.randint(0, 3))]
        docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> BM25Index:
    """A base of 3,000 documents saved and mapped, then bulk segments and single adds."""
    rng = random.Random(28)
    docs = corpus(rng, 6000)
    first = BM25Index()
    first.add_many(docs[:3000])
    stem = tmp_path_factory.mktemp("bm25") / "x"
    mapped = BM25Index.mapped(stem, first.save(stem))
    for start in range(3000, 5500, 500):
        mapped.add_many(docs[start : start + 500])
    for doc in docs[5500:]:
        mapped.add(doc)
    return mapped


QUERIES = [["the"], ["the", "ticket", "w0", "w1"], ["ticket", "ticket", "w3", "r17"], ["w5", "w5", "w5", "the"],
           ["r1", "r2", "r3", "unknown"], ["unknown"], [], ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "the"]]


@pytest.mark.parametrize("query", QUERIES)
def test_fused_scores_are_the_exhaustive_scores_bit_for_bit(index, query):
    (new, idf_new), (old, idf_old) = index.scores(query), exhaustive(index, query)
    assert new.dtype == old.dtype and np.array_equal(new, old)
    assert idf_new == idf_old


@pytest.mark.parametrize("query", QUERIES)
def test_top_k_under_masks_and_ties_is_the_exhaustive_top_k(index, query):
    rng = np.random.default_rng(9)
    new, old = index.scores(query)[0], exhaustive(index, query)[0]
    for mask in (None, rng.random(len(index)) < 0.5, rng.random(len(index)) < 0.01,
                 (rng.random(len(index)) < 0.3).astype(np.float32)):
        for k in (1, 10, 64, 500):
            assert engine_top(new, mask, k) == engine_top(old, mask, k)
    if "the" in query:  # the copies tie with their originals
        assert any(c > 1 for s, c in Counter(old.tolist()).items() if s > 0)


def test_random_queries_over_a_growing_index_score_as_before():
    rng = random.Random(5)
    docs = corpus(rng, 3000)
    index = BM25Index()
    vocab = ["the", "ticket", *(f"w{i}" for i in range(40)), *(f"r{i}" for i in range(3000))]
    for start in range(0, 3000, 300):
        index.add_many(docs[start : start + 250])
        for doc in docs[start + 250 : start + 300]:
            index.add(doc)
        for _ in range(10):
            query = [rng.choice(vocab) for _ in range(rng.randint(1, 8))]
            (new, idf_new), (old, idf_old) = index.scores(query), exhaustive(index, query)
            assert np.array_equal(new, old) and idf_new == idf_old, query
            assert [s for _, s in index.top(query, 20)] == [s for _, s in engine_top(old, None, 20)], query


def test_bm25_add_refuses_a_posting_outside_the_scores_and_leaves_them_untouched():
    scores = np.zeros(4, dtype=np.float32)
    norms = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError, match="names document 4"):
        _scan.bm25_add(scores, np.array([1, 4], dtype=np.int32), np.ones(2, dtype=np.float32), norms, 1.0, 2.2)
    with pytest.raises(ValueError, match="one length"):
        _scan.bm25_add(scores, np.array([1], dtype=np.int32), np.ones(2, dtype=np.float32), norms, 1.0, 2.2)
    assert not scores.any()


def test_a_mapped_base_is_held_as_plain_arrays_over_the_mapping(index):
    """np.memmap's indexing runs a Python ``__getitem__`` on every vocabulary probe of a recall; the
    base's columns are plain ndarray views of the mapping (read-only, the file's pages), scoring as before."""
    for column in index._base:
        assert type(column) is np.ndarray and not column.flags.writeable
    assert index._base.find("the") >= 0 and index._base.find("no-such-term") == -1
