"""The reachability check of a saved usearch graph, and what ``VectorIndex.save`` does with it."""

from __future__ import annotations

import numpy as np
import pytest
from usearch.index import Index, MetricKind

from hindbrain.recall.graph_check import FREE_KEY, GraphFile, GraphLayoutError, unreachable_keys
from hindbrain.recall.vectors import VectorIndex, quantize

DIM = 64


def _crowded(seed: int = 3) -> np.ndarray:
    """300 spread vectors and 3 clumps of 200 near-duplicates: with 4 links a node, the clumps'
    links fill up with each other and some of their nodes end up with no link leading to them."""
    rng = np.random.default_rng(seed)
    spread = rng.normal(size=(300, DIM))
    clumps = np.repeat(spread[:3], 200, axis=0) + rng.normal(size=(600, DIM)) * 1e-3
    return np.concatenate([spread, clumps]).astype(np.float32)


def _never_found(index: Index, codes: np.ndarray, keys: np.ndarray) -> bool:
    """No search, however wide, returns any of ``keys`` (the oracle: usearch's own walk)."""
    index.expansion_search = len(codes)
    found = index.search(codes[keys], len(codes), threads=1)
    return not any(int(k) in set(found[i].keys.tolist()) for i, k in enumerate(keys))


def test_reads_keys_and_links_of_a_usearch_file(tmp_path):
    codes = quantize(np.random.default_rng(1).normal(size=(500, DIM)))
    index = Index(ndim=DIM, metric=MetricKind.Cos, dtype="i8", connectivity=8)
    index.add(np.arange(500) + 100, codes, threads=1)
    index.remove(np.array([105, 106]))
    index.save(str(tmp_path / "g.usearch"))
    graph = GraphFile(tmp_path / "g.usearch")
    keys = graph.keys()
    assert graph.size == 500 and graph.connectivity == 8 and graph.connectivity_base == 16
    assert sorted(int(k) for k in keys if k != FREE_KEY) == sorted(set(range(100, 600)) - {105, 106})
    assert int(np.count_nonzero(keys == FREE_KEY)) == 2
    assert graph.reached().all()  # random vectors: every node has links to it
    assert len(unreachable_keys(tmp_path / "g.usearch")) == 0


def test_finds_the_nodes_no_search_reaches(tmp_path):
    codes = quantize(_crowded())
    index = Index(ndim=DIM, metric=MetricKind.Cos, dtype="i8", connectivity=4, expansion_add=16)
    index.add(np.arange(len(codes)), codes, threads=1)
    index.save(str(tmp_path / "g.usearch"))
    lost = unreachable_keys(tmp_path / "g.usearch")
    assert len(lost) > 0  # the arranged case
    assert _never_found(index, codes, lost)
    # and a node the check calls reachable is found by a wide enough search of its own vector
    kept = np.setdiff1d(np.arange(300), lost)[:20]  # spread vectors: no exact ties
    index.expansion_search = len(codes)
    assert all(int(k) in index.search(codes[k], 50, threads=1).keys.tolist() for k in kept)


def test_a_changed_layout_is_refused(tmp_path):
    index = Index(ndim=DIM, metric=MetricKind.Cos, dtype="i8", connectivity=8)
    index.add(np.arange(50), quantize(np.random.default_rng(2).normal(size=(50, DIM))), threads=1)
    index.save(str(tmp_path / "g.usearch"))
    raw = bytearray((tmp_path / "g.usearch").read_bytes())
    (tmp_path / "short.usearch").write_bytes(bytes(raw[:-7]))
    with pytest.raises(GraphLayoutError, match="nodes end"):
        GraphFile(tmp_path / "short.usearch")
    raw[8 + 50 * DIM] ^= 0xFF  # the head's magic
    (tmp_path / "bad.usearch").write_bytes(bytes(raw))
    with pytest.raises(GraphLayoutError, match="no usearch head"):
        GraphFile(tmp_path / "bad.usearch")


def test_save_keeps_unreachable_vectors_searchable(tmp_path):
    vectors = _crowded()
    index = VectorIndex(DIM, exact_limit=0, connectivity=4, expansion_add=16)
    index.add(np.arange(len(vectors)), vectors)
    assert index.unbuilt == 0
    meta = index.save(tmp_path / "t0")
    lost = unreachable_keys(tmp_path / "t0.usearch")
    assert meta["unbuilt"] == 0 and index.check_saved(tmp_path / "t0") == len(lost) > 0
    assert index.requeued == len(lost)
    # a replica mapping the files scans the lost vectors exactly: each finds itself
    mapped = VectorIndex.mapped(tmp_path / "t0", meta)
    for key in lost:
        keys, sims = mapped.search(vectors[key], 1)
        assert sims[0] == pytest.approx(1.0, abs=1e-3)
        assert np.allclose(vectors[keys[0]], vectors[key], atol=1e-2)  # itself, or an exact twin
    hits = mapped.search(vectors[lost[0]], 600)[0]
    assert lost[0] in hits and len(set(hits.tolist())) == len(hits)  # found once, not twice
    # the owner has put them back on its queue; reinserting them works, as does an owner reopening
    assert index.unbuilt == len(lost)
    assert index.build_graph() == 0
    reopened = VectorIndex.mapped(tmp_path / "t0", meta, writable=True)
    assert reopened.unbuilt == len(lost)
    assert reopened.build_graph() == 0
    assert lost[0] in reopened.search(vectors[lost[0]], 600)[0]


def test_an_empty_graph_has_no_keys_and_none_lost(tmp_path):
    """A graph saved before any vector reached it (every vector still on the exact-scan list):
    no node, no key, nothing lost. The layout reader used to give an empty graph one phantom
    node starting at the file's end, and the owner's vector snapshot failed on it."""
    index = Index(ndim=DIM, metric=MetricKind.Cos, dtype="i8", connectivity=8)
    index.save(str(tmp_path / "g.usearch"))
    graph = GraphFile(tmp_path / "g.usearch")
    assert graph.size == 0 and len(graph.keys()) == 0 and not graph.reached().any()
    assert len(unreachable_keys(tmp_path / "g.usearch")) == 0
