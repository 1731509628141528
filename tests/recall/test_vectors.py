"""VectorIndex: the HNSW (int8) mode agrees with the exact mode; masks, replacement, growth."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall.vectors import VectorIndex, quantize, top_k

DIM = 32


def clustered(n: int, dim: int = DIM, centres: int = 300, seed: int = 0) -> np.ndarray:
    """Unit vectors around random centres (cosine to the centre ~0.7), like embeddings of
    related texts; uniform noise would make every neighbour equally far."""
    rng = np.random.default_rng(seed)
    c = np.random.default_rng(99).standard_normal((centres, dim)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    x = c[rng.integers(0, centres, n)] + rng.standard_normal((n, dim)).astype(np.float32) / np.sqrt(dim)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return clustered(30_000)


@pytest.fixture(scope="module")
def pair(data) -> tuple[VectorIndex, VectorIndex]:
    """The same 30k vectors in an exact index and in a graph index."""
    exact = VectorIndex(DIM, exact_limit=10**9)
    exact.add(np.arange(len(data)), data)
    graph = VectorIndex(DIM, exact_limit=1000)
    graph.add(np.arange(len(data)), data)
    assert exact.exact and not graph.exact and graph.unbuilt == 0
    return exact, graph


def test_exact_and_hnsw_agree_on_top1(pair, data):
    exact, graph = pair
    rng = np.random.default_rng(1)
    picks = rng.choice(len(data), 200, replace=False)
    queries = data[picks] + 0.05 * rng.standard_normal((200, DIM)).astype(np.float32)
    agree = 0
    for i, q in zip(picks, queries, strict=True):
        (ek, es), (gk, gs) = exact.search(q, 10), graph.search(q, 10)
        assert ek[0] == i
        agree += gk[0] == ek[0]
        assert abs(gs[0] - es[0]) < 0.02  # int8 cosine vs float cosine
    assert agree >= 198


def test_hnsw_recall_on_held_out_queries(pair):
    exact, graph = pair
    hits = 0
    for q in clustered(100, seed=7):
        hits += len(set(exact.search(q, 10)[0]) & set(graph.search(q, 10)[0]))
    assert hits / 1000 >= 0.9


@pytest.mark.parametrize("fraction", [0.3, 0.002])  # over-fetch + filter, and the exact scan
def test_allowed_mask_is_respected(pair, data, fraction):
    exact, graph = pair
    rng = np.random.default_rng(2)
    allowed = rng.random(len(data)) < fraction
    for q in clustered(30, seed=3):
        ek, _ = exact.search(q, 10, allowed)
        gk, _ = graph.search(q, 10, allowed)
        assert allowed[ek].all() and allowed[gk].all()
        assert len(gk) == len(ek) == min(10, allowed.sum())
        assert gk[0] == ek[0] or fraction > 0.1  # the scan is exact (up to int8); the walk is approximate


def test_mask_shorter_than_the_keys_allows_nothing_beyond_it(pair, data):
    for index in pair:
        keys, _ = index.search(data[25_000], 5, np.ones(100, dtype=bool))
        assert len(keys) == 5 and (keys < 100).all()
        assert len(index.search(data[0], 5, np.zeros(len(data), dtype=bool))[0]) == 0


def test_empty_index_and_degenerate_queries():
    index = VectorIndex(DIM)
    keys, sims = index.search(np.ones(DIM), 5)
    assert keys.dtype == np.int64 and sims.dtype == np.float32 and len(keys) == 0
    index.add(np.array([3]), np.ones((1, DIM)))
    assert index.search(np.zeros(DIM), 5)[0].size == 0  # a zero query has no neighbours
    assert index.search(np.ones(DIM), 0)[0].size == 0
    keys, sims = index.search(np.ones(DIM), 5)
    assert keys.tolist() == [3] and np.isclose(sims[0], 1.0) and len(index) == 1
    with pytest.raises(ValueError):
        index.add(np.array([-1]), np.ones((1, DIM)))


@pytest.mark.parametrize("exact_limit", [10**9, 10])
def test_readding_a_key_replaces_its_vector(exact_limit):
    vecs = clustered(50, seed=4)
    index = VectorIndex(DIM, exact_limit=exact_limit)
    index.add(np.arange(50), vecs)
    index.add(np.array([7, 7]), np.stack([vecs[1], vecs[9]]))  # within one add, the last wins
    assert len(index) == 50
    keys, _ = index.search(vecs[9], 2)
    assert set(keys.tolist()) == {7, 9}
    keys, _ = index.search(vecs[7], 50)
    assert 7 not in keys[:1].tolist() and len(keys) == 50


def test_deferred_graph_vectors_are_searchable_before_the_build(data):
    index = VectorIndex(DIM, exact_limit=100)
    index.add(np.arange(3000), data[:3000], defer_graph=True)
    assert index.unbuilt == 3000
    assert index.search(data[2999], 1)[0].tolist() == [2999]
    assert index.build_graph(1000) == 2000
    assert index.search(data[10], 1)[0].tolist() == [10]
    assert index.build_graph() == 0
    assert index.search(data[2999], 1)[0].tolist() == [2999]
    assert index.memory_bytes() > 3000 * DIM


def test_concurrent_adds_and_searches(data):
    index = VectorIndex(DIM, exact_limit=500)
    errors = []

    def writer():
        for start in range(0, 4000, 250):
            index.add(np.arange(start, start + 250), data[start : start + 250])

    def reader():
        try:
            for i in range(300):
                keys, sims = index.search(data[i], 5)
                assert len(keys) == len(sims) <= 5 and (np.diff(sims) <= 1e-6).all()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(index) == 4000
    assert index.search(data[3999], 1)[0].tolist() == [3999]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(1, 70), seed=st.integers(0, 2**16), masked=st.booleans())
def test_exact_mode_matches_brute_force(n, k, seed, masked):
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    allowed = rng.random(n) < 0.5 if masked else None
    index = VectorIndex(8)
    index.add(np.arange(n), vecs)
    keys, sims = index.search(query, k, allowed)
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    cos = unit @ (query / np.linalg.norm(query))
    # the rows are stored as float16 (and the query searched as float16): exactly their cosines,
    # within ~1e-3 of the float32 ones
    rows, q16 = unit.astype(np.float16).astype(np.float64), (query / np.linalg.norm(query)).astype(np.float16)
    cos16 = rows @ q16.astype(np.float64) / np.linalg.norm(rows, axis=1) / np.linalg.norm(q16.astype(np.float64))
    cand = np.arange(n) if allowed is None else np.flatnonzero(allowed)
    _, want_sims = top_k(cand, cos16[cand], k)
    assert len(keys) == len(want_sims) and set(keys.tolist()) <= set(cand.tolist())
    # the top k, up to ties
    assert np.allclose(sims, cos16[keys], atol=1e-5) and np.allclose(sims, want_sims, atol=1e-5)
    assert np.allclose(sims, cos[keys], atol=2e-3)


def test_quantize_uses_the_whole_int8_range():
    codes = quantize(np.array([[0.1, -0.2, 0.05], [0.0, 0.0, 0.0]]))
    assert codes.tolist() == [[64, -127, 32], [0, 0, 0]]


@pytest.mark.parametrize("exact_limit", [10**9, 10])
def test_cosines_of_chosen_keys_to_several_queries(data, exact_limit):
    """Late interaction scores candidates against every query view with ``cosines``: the same
    cosines a search returns (int8 codes in graph mode: within 0.02), NaN for a key with no vector."""
    vectors = data[:40]
    index = VectorIndex(DIM, exact_limit=exact_limit)
    index.add(np.arange(40), vectors)
    queries = data[100:103]
    keys = np.array([3, 17, 39, 55])  # 55 was never added
    got = index.cosines(keys, queries)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    want = unit[[3, 17, 39]] @ (queries / np.linalg.norm(queries, axis=1, keepdims=True)).T
    assert got.shape == (4, 3) and np.isnan(got[3]).all()
    np.testing.assert_allclose(got[:3], want, atol=0.02 if exact_limit == 10 else 2e-3)  # int8 / float16 rows
    top, sims = index.search(queries[0], 40)
    found = dict(zip(top.tolist(), sims.tolist(), strict=True))
    assert abs(found[17] - got[1, 0]) < 0.02


def test_a_graph_node_takes_four_allocator_units(tmp_path):
    """The default connectivity is the largest whose level-0 node fits 256 bytes of usearch's
    64-byte units: at 32 a node was 270 bytes, so it took 320 (5 units), 64 B a vector more
    resident for the same graph size. The saved graph shows the node's unrounded layout."""
    from hindbrain.recall.graph_check import _NODE_HEAD, GraphFile
    from hindbrain.recall.vectors import CONNECTIVITY, NODE_UNIT, graph_node_bytes

    index = VectorIndex(DIM, exact_limit=0)
    index.add(np.arange(500), clustered(500))
    index.save(tmp_path / "t0")
    graph = GraphFile(tmp_path / "t0.usearch")
    assert (graph.connectivity, graph.connectivity_base) == (CONNECTIVITY, 2 * CONNECTIVITY)
    level0 = _NODE_HEAD + 4 * (1 + graph.connectivity_base)
    assert graph_node_bytes(graph.connectivity) == -(-level0 // NODE_UNIT) * NODE_UNIT == 4 * NODE_UNIT
    assert graph_node_bytes(CONNECTIVITY + 1) > 4 * NODE_UNIT
