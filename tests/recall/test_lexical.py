"""BM25: bulk-added segments score exactly like one-by-one adds, and ranking is sane."""

import random

import numpy as np

from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import tokens


def test_bulk_segments_score_like_single_adds():
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(300)]
    docs = [[rng.choice(vocab) for _ in range(rng.randint(0, 15))] for _ in range(3000)]
    single, mixed = BM25Index(), BM25Index()
    for d in docs:
        single.add(d)
    i = 0
    while i < len(docs):  # interleave single adds and bulk batches of random sizes
        if rng.random() < 0.5:
            mixed.add(docs[i])
            i += 1
        else:
            n = rng.randint(1, 400)
            mixed.add_many(docs[i : i + n])
            i += n
    assert len(mixed) == len(single) == len(docs)
    for _ in range(200):
        query = [rng.choice(vocab) for _ in range(rng.randint(1, 5))]
        (a, idf_a), (b, idf_b) = single.scores(query), mixed.scores(query)
        assert np.allclose(a, b, rtol=1e-6), query
        assert idf_a == idf_b


def test_segments_merge_so_queries_see_few_of_them():
    index = BM25Index()
    for start in range(0, 20_000, 500):
        index.add_many([[f"t{(start + j) % 97}", "common"] for j in range(500)])
    assert len(index._segments) <= 6
    docs = [d for d, _ in index.top(["t5"], k=1000)]
    assert len(docs) == len([j for j in range(20_000) if j % 97 == 5])


def test_rarer_matching_terms_rank_higher_and_misses_score_nothing():
    index = BM25Index()
    texts = ["IAM submit does nothing", "billing export timeout", "IAM admin account", "页面一直转圈", "other"]
    index.add_many([tokens(t) for t in texts])
    ranked = [d for d, _ in index.top(tokens("IAM admin"), k=10)]
    assert ranked[0] == 2 and set(ranked) == {0, 2}
    assert [d for d, _ in index.top(tokens("转圈"), k=10)] == [3]
    assert index.top(tokens("quantum zebra"), k=10) == []


def test_an_add_renews_the_length_norms_so_scores_match_a_fresh_index():
    rng = random.Random(2)
    vocab = [f"w{i}" for i in range(50)]
    docs = [["ticket", *(rng.choice(vocab) for _ in range(rng.randint(1, 8)))] for _ in range(2000)]
    cached, fresh = BM25Index(), BM25Index()
    cached.add_many(docs)
    query = ["ticket", "w1", "w1", "w7"]
    first = cached.scores(query)
    again = cached.scores(query)  # the norms are kept ...
    assert np.array_equal(first[0], again[0]) and first[1] == again[1]
    cached.add(["ticket", "w1", "w42", "w42", "w42", "w42", "w42"])  # ... until an add changes avgdl
    fresh.add_many(docs)
    fresh.add(["ticket", "w1", "w42", "w42", "w42", "w42", "w42"])
    assert np.array_equal(cached.scores(query)[0], fresh.scores(query)[0])
