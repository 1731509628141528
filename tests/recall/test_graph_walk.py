"""The masked search's walk over a saved graph, filtering as it goes (``recall.graph_walk``).

What must hold: the C walk is its Python definition (``py_walk``: the same nodes, cosines and
expansions, rings included); under a mask the search that uses it finds at least what the
over-fetching usearch walk found against exact search; a node whose own key is hidden is still
found for an allowed key beside it; a reopened owner stops using it once its graph changes; and a
file whose links leave the graph raises instead of reading out of bounds."""

from __future__ import annotations

import numpy as np
import pytest

from hindbrain.recall import vectors
from hindbrain.recall.graph_walk import GraphWalk, py_walk
from hindbrain.recall.vectors import VectorIndex, quantize

DIM = 32
N = 12_000  # a mask must allow more than _WALK_COST x expansion_search keys for the walk to run


def _clustered(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((60, DIM))
    return (centres[rng.integers(60, size=n)] + 0.45 * rng.standard_normal((n, DIM))).astype(np.float32)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    vecs = _clustered(N, seed=1)
    vecs[N - 400 :] = vecs[:400]  # exact duplicates: keys beside a node, in its ring
    index = VectorIndex(DIM, exact_limit=100)
    index.add(np.arange(N), vecs)
    stem = tmp_path_factory.mktemp("walk") / "t0"
    meta = index.save(stem)
    assert index.check_saved(stem) == 0
    return stem, meta, vecs


def _q8(vector: np.ndarray) -> np.ndarray:
    return quantize(vector / np.linalg.norm(vector))[0]


def test_the_c_walk_is_its_python_definition(saved):
    stem, meta, vecs = saved
    replica = VectorIndex.mapped(stem, meta)
    assert isinstance(replica._walker, GraphWalk)
    graphed = replica._state >= vectors._GRAPHED
    assert (replica._state == vectors._BESIDE).sum() >= 300  # the duplicates sit in rings
    rng = np.random.default_rng(2)
    for case in range(24):
        q8 = _q8(vecs[rng.integers(N)] + 0.3 * rng.standard_normal(DIM).astype(np.float32))
        ok = graphed & (rng.random(len(graphed)) < [0.02, 0.3, 0.9][case % 3])
        ef, cap = [1, 10, 60][case % 3], [3, 40, 4096][case // 8]
        keys, sims, expanded = replica._walker.walk(q8, ok, replica._next, ef, cap)
        want_keys, want_sims, want_expanded = py_walk(stem.with_suffix(".usearch"), q8, ok, replica._next, ef, cap)
        assert keys.tolist() == want_keys.tolist()
        assert sims.tobytes() == want_sims.tobytes()
        assert expanded == want_expanded
        assert len(keys) <= ef and expanded <= cap + 1
        assert np.all(np.diff(sims) <= 0)


def test_a_node_is_found_for_an_allowed_key_beside_it(saved):
    stem, meta, vecs = saved
    replica = VectorIndex.mapped(stem, meta)
    beside = int(np.flatnonzero(replica._state == vectors._BESIDE)[0])
    ok = np.zeros(len(replica._state), dtype=bool)
    ok[beside] = True
    keys, _, _ = replica._walker.walk(_q8(vecs[beside]), ok, replica._next, 4, 4096)
    assert keys.tolist() == [int(replica._next[beside])]  # the node holding its code: hidden itself
    ok[int(replica._next[beside])] = False
    assert replica._walker.walk(_q8(vecs[beside]), ok, replica._next, 4, 4096)[0].tolist() == keys.tolist()


def _recall_at_k(index: VectorIndex, queries: np.ndarray, allowed: np.ndarray, k: int) -> float:
    keys = np.flatnonzero(vectors.allowed_mask(allowed, len(index._state)) & (index._state >= vectors._GRAPHED))
    hits = []
    for q in queries:
        want = set(vectors.top_k(*index._scan(keys, _q8(q), k), k)[0].tolist())
        got = index.search(q, k, allowed)[0]
        assert allowed[got].all()
        hits.append(len(want & set(got.tolist())) / k)
    print(f"recall@{k} {np.mean(hits):.3f}")
    return float(np.mean(hits))


@pytest.mark.parametrize("fraction", [0.45, 0.7])
def test_the_masked_search_finds_at_least_what_the_over_fetching_walk_found(saved, fraction):
    stem, meta, vecs = saved
    replica = VectorIndex.mapped(stem, meta)
    rng = np.random.default_rng(3)
    allowed = rng.random(N) < fraction
    queries = vecs[rng.integers(N, size=60)] + 0.3 * rng.standard_normal((60, DIM)).astype(np.float32)
    filtered = _recall_at_k(replica, queries, allowed, 40)
    walker, replica._walker = replica._walker, None
    over_fetched = _recall_at_k(replica, queries, allowed, 40)
    replica._walker = walker
    assert filtered >= 0.95
    assert filtered >= over_fetched - 0.01


def test_a_reopened_owner_walks_its_file_until_its_graph_changes(saved):
    stem, meta, vecs = saved
    owner = VectorIndex.mapped(stem, meta, writable=True)
    assert owner._walker is not None
    allowed = np.ones(N + 1, dtype=bool)
    allowed[1::2] = False  # N is even: allowed
    fresh = _clustered(1, seed=9)[0]
    owner.add(np.array([N]), fresh[None, :])
    assert owner.build_graph() == 0
    assert owner._walker is None  # the graph in memory is no longer the file's
    assert owner.search(fresh, 5, allowed)[0][0] == N


def test_links_outside_the_graph_raise(saved, tmp_path):
    stem, meta, _ = saved
    broken = tmp_path / "t0.usearch"
    data = bytearray(stem.with_suffix(".usearch").read_bytes())
    for start in GraphWalk(stem.with_suffix(".usearch"), DIM)._starts.tolist():  # every node's first link at level 0
        data[start + 14 : start + 18] = b"\xff\xff\xff\x7f"
    broken.write_bytes(bytes(data))
    walk = GraphWalk(broken, DIM)
    with pytest.raises(ValueError, match="outside the graph"):
        walk.walk(np.ones(DIM, dtype=np.int8), np.ones(N, dtype=bool), np.arange(N, dtype=np.int32), 10, 4096)


def test_an_owner_walks_the_file_it_saved_while_its_graph_is_unchanged(saved, tmp_path):
    stem, meta, vecs = saved
    owner = VectorIndex.mapped(stem, meta, writable=True)
    fresh = _clustered(2, seed=10)
    owner.add(np.array([N, N + 1]), fresh)
    assert owner._walker is None and owner.build_graph() == 0
    assert not owner.walk_saved()  # nothing saved since the change
    again = tmp_path / "t1"
    owner.save(again)
    assert owner.check_saved(again) == 0
    assert owner.walk_saved()
    allowed = np.ones(N + 2, dtype=bool)
    allowed[N - 1] = False
    walked = owner.search(fresh[1], 5, allowed)
    assert walked[0][0] == N + 1
    walker, owner._walker = owner._walker, None
    assert owner.search(fresh[1], 5, allowed)[0][0] == N + 1  # the usearch walk agrees on the best
    owner._walker = walker
    owner.add(np.array([N + 2]), _clustered(1, seed=11))
    assert owner.build_graph() == 0 and owner._walker is None
    owner.save(tmp_path / "t2")
    owner.add(np.array([N + 3]), _clustered(1, seed=12))
    assert owner.build_graph() == 0
    assert not owner.walk_saved()  # changed since that save: not its graph



def test_the_saved_file_is_walked_where_its_generation_was_renamed(saved, tmp_path):
    stem, meta, _ = saved
    owner = VectorIndex.mapped(stem, meta, writable=True)
    owner.add(np.array([N]), _clustered(1, seed=13))
    assert owner.build_graph() == 0 and owner._walker is None
    (tmp_path / "tmp-gen").mkdir()
    owner.save(tmp_path / "tmp-gen" / "t0")
    (tmp_path / "tmp-gen").rename(tmp_path / "gen-1")  # as a snapshot is sealed
    assert not owner.walk_saved()  # not there any more
    assert owner.walk_saved(tmp_path / "gen-1")
