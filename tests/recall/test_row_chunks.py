"""RowChunks: rows by key in chunks that never move; only a short last chunk is ever copied."""

import numpy as np

from hindbrain.recall.row_chunks import FIRST_ROWS, RowChunks
from hindbrain.recall.vectors import VectorIndex


def test_rows_put_across_chunks_read_back_and_unset_rows_are_zero():
    rows = RowChunks(4, np.float16, chunk=8)
    keys = np.array([0, 7, 8, 19, 3])
    values = np.arange(20, dtype=np.float32).reshape(5, 4)
    rows.put(keys, values)
    assert rows.capacity >= 20 and rows.capacity % 8 == 0
    np.testing.assert_array_equal(rows.take(keys), values.astype(np.float16))
    assert not rows.take(np.array([1, 9, 18])).any()
    spans = list(rows.spans(20))
    assert [start for start, _ in spans] == [0, 8, 16] and sum(len(r) for _, r in spans) == 20


def test_whole_chunks_never_move_and_the_first_grows_from_small():
    rows = RowChunks(2, np.float16, chunk=256)
    rows.put(np.array([0]), np.ones((1, 2)))
    assert rows.capacity == FIRST_ROWS  # a tenant of a few memories holds a few rows
    rows.put(np.array([255]), np.ones((1, 2)))
    first = rows._chunks[0]
    rows.put(np.array([1000]), np.full((1, 2), 2.0))
    assert rows._chunks[0] is first  # a whole chunk stays where it is: no doubling copy
    assert rows.take(np.array([0, 255, 1000])).tolist() == [[1, 1], [1, 1], [2, 2]]


def test_over_a_loaded_matrix_views_it_and_grows_past_its_end():
    matrix = np.arange(30, dtype=np.float16).reshape(10, 3)
    rows = RowChunks.over(matrix, chunk=4)
    assert np.shares_memory(rows._chunks[0], matrix)
    rows.put(np.array([12]), np.full((1, 3), 7.0))
    np.testing.assert_array_equal(rows.take(np.arange(10)), matrix)
    assert rows.take(np.array([12])).tolist() == [[7, 7, 7]]


def test_exact_vectors_hold_two_bytes_a_dimension_without_doubling():
    """The exact mode's rows: float16, and at most one chunk beyond what is stored (a float32
    matrix grown by doubling held up to 8 bytes a dimension)."""
    dim, n = 512, 5000
    index = VectorIndex(dim)
    rng = np.random.default_rng(0)
    for start in range(0, n, 1000):
        index.add(np.arange(start, start + 1000), rng.standard_normal((1000, dim)).astype(np.float32))
    assert index.exact and len(index) == n
    assert n * dim * 2 <= index._rows.nbytes <= (n + 4096) * dim * 2
