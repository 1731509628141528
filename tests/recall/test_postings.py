"""A BM25 segment by ``_scan.postings`` (a counting sort in C) against ``_Segment.py_segment`` (numpy's
sorted keys, the oracle): the same terms, boundaries, documents and frequencies, dtypes included, for
documents with repeated terms, empty documents and terms never used (issue 28, ingest round nine)."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan
from hindbrain.recall.lexical import _Segment

documents = st.integers(1, 60).flatmap(lambda n_terms: st.tuples(
    st.just(n_terms), st.lists(st.lists(st.integers(0, n_terms - 1), max_size=12), min_size=1, max_size=40),
    st.integers(0, 2**31 - 100)))


@settings(max_examples=examples(400), deadline=None)
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


def _segment(n_terms: int, docs: list[list[int]], first: int) -> _Segment:
    flat = np.array([t for doc in docs for t in doc], dtype=np.int64)
    return _Segment.py_segment(flat, np.array([len(doc) for doc in docs], dtype=np.int64), first)


two_segments = st.integers(1, 80).flatmap(lambda n_terms: st.tuples(
    st.just(n_terms),
    *[st.lists(st.lists(st.integers(0, n_terms - 1), min_size=1, max_size=10), min_size=1, max_size=30)] * 2,
    st.integers(0, 2**30)))


@settings(max_examples=examples(400), deadline=None)
@given(two_segments)
def test_the_merge_in_c_gives_numpys_merged_segment(case):
    """``_Segment.merged`` (``_scan.merge_postings``) against ``py_merged`` (numpy, the oracle): the same
    union of terms, boundaries, documents and frequencies, dtypes included, for vocabularies that overlap,
    nest or are disjoint (issue 28, round fifteen)."""
    n_terms, older_docs, newer_docs, first = case
    older = _segment(n_terms, older_docs, first)
    newer = _segment(n_terms, newer_docs, first + len(older_docs))
    got, expected = older.merged(newer), older.py_merged(newer)
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
    # a merged segment merges again (the LSM policy merges merged segments)
    third = _segment(n_terms, older_docs, first + len(older_docs) + len(newer_docs))
    for mine, theirs in zip(got.merged(third), expected.py_merged(third), strict=True):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)


def test_a_malformed_segment_is_refused_by_the_merge():
    good = _segment(5, [[0, 1], [1, 4]], 0)
    later = _segment(5, [[2]], 2)
    broken = {
        "not ascending": good._replace(terms=good.terms[::-1].copy()),
        "do not bound": good._replace(starts=good.starts + 1),
        "starts fall": good._replace(starts=np.array([0, 2, 1, 4], dtype=np.int64)),
        "not int64": good._replace(docs=good.docs[:-1].copy()),
    }
    for words, segment in broken.items():
        with pytest.raises(ValueError, match=words):
            _scan.merge_postings(*segment, *later)
        with pytest.raises(ValueError, match=words):
            _scan.merge_postings(*later, *segment)
