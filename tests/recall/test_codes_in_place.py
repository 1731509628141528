"""The vector index's codes stored without copies of them (issue 28, round twenty-three): a batch whose keys one
block holds is stored as given (no selection copied a block), and the switch to graph mode quantises chunk after
chunk into one reused set of buffers. The blocks, states and tail are the per-block loop's (kept here as the
oracle) and the codes ``quantize`` makes of each row."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import sorted_sets, vectors
from hindbrain.recall.vectors import VectorIndex, from_half, py_quantize, quantize

DIM = 8


def _per_block_store(index: VectorIndex, keys: np.ndarray, codes: np.ndarray) -> None:
    """``_store_codes`` as it was: each block's keys and codes selected, then stored (the oracle)."""
    top = int(keys.max()) // vectors._BLOCK
    while len(index._blocks) <= top:
        index._blocks.append(np.zeros((vectors._BLOCK, index.dim), dtype=np.int8))
    index._state = vectors._grow(index._state, (top + 1) * vectors._BLOCK)
    block_of = keys // vectors._BLOCK
    for b in sorted_sets.unique(block_of):
        sel = block_of == b
        index._blocks[b][keys[sel] - b * vectors._BLOCK] = codes[sel]


def _graph_index() -> VectorIndex:
    index = VectorIndex(DIM, exact_limit=0)
    index.add(np.array([0]), np.ones((1, DIM), dtype=np.float32), defer_graph=True)
    return index


def _same(a: VectorIndex, b: VectorIndex) -> None:
    assert len(a._blocks) == len(b._blocks)
    for x, y in zip(a._blocks, b._blocks, strict=True):
        assert np.array_equal(x, y)
    assert np.array_equal(a._state, b._state)
    assert np.array_equal(a._tail[a._tail_head:], b._tail[b._tail_head:])


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(1, 40), st.booleans()), min_size=1, max_size=6),
       st.integers(0, 2**32 - 1))
def test_batches_stored_as_given_are_the_per_block_loops(batches, seed):
    """Batches of keys (a run from ``start``, or scattered), in one block of 64 or across several, some keys
    added again: every block, state and the tail equal to the per-block loop's."""
    rng = np.random.default_rng(seed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vectors, "_BLOCK", 64)
        new, old = _graph_index(), _graph_index()
        mp.setattr(old, "_store_codes", lambda keys, codes: _per_block_store(old, keys, codes))
        for start, n, scattered in batches:
            keys = rng.choice(400, size=n, replace=False) if scattered else np.arange(start, start + n)
            codes = rng.integers(-127, 128, size=(n, DIM), dtype=np.int8)
            new.add_codes(keys, codes, defer_graph=True)
            old.add_codes(keys, codes, defer_graph=True)
            _same(new, old)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_the_switch_to_graph_mode_quantises_each_chunk_as_quantize_does(rows, chunk, seed):
    """Exact mode's float16 rows (zero rows among them), switched to graph mode in chunks of ``chunk`` rows
    (the last one short): each key's codes are ``quantize`` of its half row (numpy's oracle: ``py_quantize``
    of the widened rows), in blocks of 16 rows."""
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((rows, DIM)).astype(np.float32)
    data[:: 5] = 0
    keys = rng.choice(200, size=rows, replace=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vectors, "_BLOCK", 16)
        mp.setattr(vectors, "_SWITCH_ROWS", chunk)
        index = VectorIndex(DIM, exact_limit=rows)
        index.add(keys, data, defer_graph=True)
        halves = index._rows.take(np.sort(keys))
        index.add(np.array([500]), np.ones((1, DIM), dtype=np.float32), defer_graph=True)  # past the limit
        assert index.takes_codes()
        for key, half in zip(np.sort(keys).tolist(), halves, strict=True):
            want = py_quantize(from_half(half[None, :]))[0]
            assert np.array_equal(index._blocks[key // 16][key % 16], want)
            assert np.array_equal(quantize(half[None, :])[0], want)


def test_quantize_into_given_buffers_returns_them():
    """``quantize(x, out, wide)`` of float16 rows writes the codes into ``out`` (returned) through ``wide``."""
    x = np.random.default_rng(3).standard_normal((5, DIM)).astype(np.float16)
    out, wide = np.empty((5, DIM), dtype=np.int8), np.empty((5, DIM), dtype=np.float32)
    codes = quantize(x, out, wide)
    assert codes is out
    assert np.array_equal(codes, py_quantize(x.astype(np.float32)))
    assert np.array_equal(wide, x.astype(np.float32))
