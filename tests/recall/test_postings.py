"""A BM25 segment by ``_scan.postings`` (a counting sort in C) against ``_Segment.py_segment`` (numpy's
sorted keys, the oracle): the same terms, boundaries, documents and frequencies, dtypes included, for
documents with repeated terms, empty documents and terms never used (issue 28, ingest round nine)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan
from hindbrain.recall.lexical import _Segment

documents = st.integers(1, 60).flatmap(lambda n_terms: st.tuples(
    st.just(n_terms), st.lists(st.lists(st.integers(0, n_terms - 1), max_size=12), min_size=1, max_size=40),
    st.integers(0, 2**31 - 100)))


@settings(max_examples=400, deadline=None)
@given(documents)
def test_the_counting_sort_gives_numpys_segment(case):
    n_terms, docs, first = case
    flat = np.array([t for doc in docs for t in doc], dtype=np.int64)
    lengths = np.array([len(doc) for doc in docs], dtype=np.int64)
    if not len(flat):
        return  # add_texts makes no segment of no postings
    got, expected = _Segment.of_documents(flat, lengths, first, n_terms), _Segment.py_segment(flat, lengths, first)
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)


def test_bad_numbers_are_refused():
    flat, lengths = np.array([0, 5], dtype=np.int64), np.array([2], dtype=np.int64)
    with pytest.raises(ValueError, match="not below 5"):
        _scan.postings(flat, lengths, 0, 5)
    with pytest.raises(ValueError, match="add up"):
        _scan.postings(flat, np.array([3], dtype=np.int64), 0, 6)
    with pytest.raises(ValueError, match="negative"):
        _scan.postings(flat, np.array([3, -1], dtype=np.int64), 0, 6)
    with pytest.raises(ValueError, match="below 2\\*\\*31"):
        _scan.postings(flat, lengths, 2**31 - 1, 6)
