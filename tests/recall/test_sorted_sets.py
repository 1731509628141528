"""``recall.sorted_sets`` against numpy's ``unique`` and ``union1d`` (issue 28, ingest round nine):
the same sorted distinct values, by a sort instead of numpy 2.3+'s hash table."""

from __future__ import annotations

import numpy as np
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hindbrain.recall import sorted_sets

ints = hnp.arrays(st.sampled_from([np.int64, np.int32, np.uint64]), st.integers(0, 300),
                  elements=st.integers(0, 2**31 - 1) | st.sampled_from([0, 1, 2**31 - 1]))


@settings(max_examples=examples(300), deadline=None)
@given(ints)
def test_unique_is_numpys(values):
    got = sorted_sets.unique(values)
    assert got.dtype == values.dtype and np.array_equal(got, np.unique(values))


@settings(max_examples=examples(300), deadline=None)
@given(ints, ints)
def test_union_of_sorted_vocabularies_is_numpys(a, b):
    a, b = np.unique(a), np.unique(b.astype(a.dtype))  # what a segment holds: sorted distinct terms
    got = sorted_sets.union(a, b)
    assert got.dtype == a.dtype and np.array_equal(got, np.union1d(a, b))
