"""VectorIndex with many exact-duplicate codes (issue 28): one graph node per distinct code, the
keys holding it beside that node, every one of them found (masks respected), through
replacement, an unreachable node's requeue, and a snapshot mapped or reopened."""

import numpy as np
import pytest

from hindbrain.recall import vectors
from hindbrain.recall.vectors import VectorIndex

DIM = 32
DISTINCT = 40


def codes_of(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors drawn from only ``DISTINCT`` distinct ones, and which one each is."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((DISTINCT, DIM)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    which = rng.integers(0, DISTINCT, n)
    return base[which], which


def built(n: int, seed: int = 0) -> tuple[VectorIndex, np.ndarray, np.ndarray]:
    vecs, which = codes_of(n, seed)
    index = VectorIndex(DIM, exact_limit=100)
    index.add(np.arange(n), vecs, defer_graph=True)
    assert index.build_graph() == 0
    return index, vecs, which


def graph_nodes(index: VectorIndex) -> int:
    """What usearch itself holds (removed nodes excluded)."""
    return index._graph.size


def test_duplicates_are_one_node_each_and_all_found():
    index, vecs, which = built(20_000)
    # 20k keys, 40 distinct codes: the graph holds 40 nodes, not 20k (the old build walked
    # thousands of distance-0 ties at every insert)
    assert graph_nodes(index) == DISTINCT
    assert len(index) == 20_000
    group = np.flatnonzero(which == which[123])
    keys, sims = index.search(vecs[123], len(group))
    assert sorted(keys.tolist()) == group.tolist()
    assert np.allclose(sims, 1.0, atol=0.02)
    # the next-best code's keys come after the whole group
    keys, _ = index.search(vecs[123], len(group) + 5)
    assert set(keys[: len(group)].tolist()) == set(group.tolist())
    assert not set(keys[len(group):].tolist()) & set(group.tolist())


@pytest.mark.parametrize("fraction", [0.5, 0.05])
def test_a_mask_over_duplicates_gives_exactly_the_allowed_keys_of_the_code(fraction):
    index, vecs, which = built(20_000, seed=1)
    allowed = np.random.default_rng(2).random(20_000) < fraction  # e.g. one agent's private events
    group = np.flatnonzero(which == which[7])
    mine = group[allowed[group]]
    keys, _ = index.search(vecs[7], len(mine), allowed=allowed)
    assert sorted(keys.tolist()) == mine.tolist()
    assert allowed[keys].all()
    # a mask hiding the whole group: none of its keys, however deep the search
    hidden = allowed.copy()
    hidden[group] = False
    keys, _ = index.search(vecs[7], 200, allowed=hidden)
    assert len(keys) == 200 and not set(keys.tolist()) & set(group.tolist())


def test_replacing_keys_of_a_group_keeps_the_others_found():
    index, vecs, which = built(5_000, seed=3)
    group = np.flatnonzero(which == which[0])
    node, rest = group[0], group[1:]  # the first key of a code is its node
    other = vecs[np.flatnonzero(which != which[0])[0]]
    index.add(np.array([node, rest[0]]), np.stack([other, other]))  # the node and one beside it
    keys, _ = index.search(vecs[0], len(group))
    assert sorted(keys[: len(rest) - 1].tolist()) == rest[1:].tolist()
    assert node not in keys[: len(rest) - 1] and rest[0] not in keys[: len(rest) - 1]
    assert graph_nodes(index) == DISTINCT  # a key beside the node took its place
    keys, _ = index.search(other, 3 * len(group))
    assert {int(node), int(rest[0])} <= set(keys.tolist())
    # every key of the code replaced: its node leaves the graph
    index.add(rest[1:], np.repeat(other[None, :], len(rest) - 1, axis=0))
    assert graph_nodes(index) == DISTINCT - 1
    keys, sims = index.search(vecs[0], 5)
    assert not set(keys.tolist()) & set(group.tolist())


def test_an_unreachable_node_goes_back_to_the_tail_with_the_keys_beside_it():
    index, vecs, which = built(5_000, seed=4)
    group = np.flatnonzero(which == which[0])
    index._requeue(group[:1])  # as check_saved does for a node no search reaches
    assert index.unbuilt == len(group)
    keys, _ = index.search(vecs[0], len(group))
    assert sorted(keys.tolist()) == group.tolist()  # scanned exactly meanwhile
    assert index.build_graph() == 0 and graph_nodes(index) == DISTINCT
    keys, _ = index.search(vecs[0], len(group))
    assert sorted(keys.tolist()) == group.tolist()


@pytest.mark.parametrize("writable", [False, True])
def test_a_saved_index_finds_every_duplicate_and_a_reopened_owner_keeps_one_node_a_code(tmp_path, writable):
    index, vecs, which = built(8_000, seed=5)
    stem = tmp_path / "t0"
    meta = index.save(stem)
    assert meta["ring"] and index.check_saved(stem) == 0
    again = VectorIndex.mapped(stem, meta, writable=writable)
    group = np.flatnonzero(which == which[3])
    allowed = np.zeros(8_000, dtype=bool)
    allowed[::3] = True
    mine = group[allowed[group]]
    keys, _ = again.search(vecs[3], len(mine), allowed=allowed)
    assert sorted(keys.tolist()) == mine.tolist()
    if writable:  # more keys of known codes go beside the loaded nodes
        more, more_which = codes_of(2_000, seed=5)
        again.add(np.arange(8_000, 10_000), more)
        assert again.build_graph() == 0 and graph_nodes(again) == DISTINCT
        group = np.concatenate([group, 8_000 + np.flatnonzero(more_which == which[3])])
        keys, _ = again.search(vecs[3], len(group))
        assert sorted(keys.tolist()) == sorted(group.tolist())


def test_a_snapshot_from_before_the_rings_loads_every_graphed_key_as_its_own_node(tmp_path):
    rng = np.random.default_rng(6)
    vecs = rng.standard_normal((3_000, DIM)).astype(np.float32)
    index = VectorIndex(DIM, exact_limit=100)
    index.add(np.arange(3_000), vecs)
    stem = tmp_path / "t0"
    meta = index.save(stem)
    stem.with_suffix(".ring").unlink()
    old = {k: v for k, v in meta.items() if k != "ring"}
    again = VectorIndex.mapped(stem, old, writable=True)
    assert again.search(vecs[42], 1)[0].tolist() == [42]
    again.add(np.array([3_000]), vecs[42:43])  # a duplicate of a loaded node joins it
    assert again.build_graph() == 0 and graph_nodes(again) == 3_000
    assert sorted(again.search(vecs[42], 2)[0].tolist()) == [42, 3_000]


@pytest.mark.parametrize("seed", range(5))
def test_the_ring_walk_in_c_matches_its_python_definition(seed):
    rng = np.random.default_rng(seed)
    n = 2_000
    ring = np.arange(n, dtype=np.int32)
    keys = rng.permutation(n)
    groups = np.split(keys, np.sort(rng.choice(np.arange(1, n), 60, replace=False)))
    for g in groups:  # each group a closed ring, its first key the node
        ring[g] = np.roll(g, -1)
    nodes = np.array([g[0] for g in groups[:30]], dtype=np.int64)
    sims = np.sort(rng.random(len(nodes)).astype(np.float32))[::-1]
    for allowed in (None, rng.random(n) < 0.3, np.zeros(n, dtype=bool)):
        for count in (1, 64, 5_000):
            got = vectors._expand(ring, nodes, sims, count, allowed)
            want = vectors.py_expand(ring, nodes, sims, count, allowed)
            assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    big = max(groups, key=len)
    broken = ring.copy()
    broken[big[-1]] = big[1]  # never back to its node
    with pytest.raises(ValueError, match="does not close"):
        vectors._expand(broken, big[:1].astype(np.int64), sims[:1], 10**6, None)
