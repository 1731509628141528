"""``_OneOffs``' runs merged in C (``lexical.merged_runs``, ``_scan.merge_hash_runs``, issue 28 round twenty-two)
against numpy's ``np.insert`` of the newer run at its ``searchsorted`` places, kept here as the oracle: the same
hashes and entries in the same order (an equal hash's older entries first), over runs with repeated and
colliding hashes, empty runs and int64's extremes; and the index's one-off terms (unicode, zh, emoji, a term
seen once then again) found as before."""

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan, lexical
from hindbrain.recall.lexical import BM25Index, merged_runs


def _py_merged(older, newer):
    """The merge as ``_OneOffs.hold`` made it (the oracle)."""
    at = np.searchsorted(older[0], newer[0], side="right")
    return np.insert(older[0], at, newer[0]), np.insert(older[1], at, newer[1])


_hash = st.one_of(st.integers(-3, 3), st.sampled_from([-2**63, 2**63 - 1]), st.integers(-2**63, 2**63 - 1))


def _run(hashes: list[int], first: int):
    order = np.argsort(np.array(hashes, dtype=np.int64), kind="stable")
    return np.array(hashes, dtype=np.int64)[order], (first + order).astype(np.int32)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(_hash, max_size=60), st.lists(_hash, max_size=60))
def test_the_c_merge_is_numpys_insert(older, newer):
    a, b = _run(older, 0), _run(newer, len(older))
    got, expected = merged_runs(a, b), _py_merged(a, b)
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.dtype == theirs.dtype and mine.tolist() == theirs.tolist()


def test_runs_of_other_shapes_are_refused():
    a = _run([1, 2], 0)
    with pytest.raises(ValueError):
        _scan.merge_hash_runs(a[0], a[1][:1], *a)
    with pytest.raises(ValueError):
        _scan.merge_hash_runs(a[0][:1].tobytes() + b"x", a[1][:1], *a)


_WORDS = ["n1", "票据", "😀x", "İ", "a.b", "ticket"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.lists(st.sampled_from(_WORDS) | st.integers(0, 40).map(str), max_size=4).map(" ".join),
                         min_size=2, max_size=10), min_size=1, max_size=8))
def test_the_one_offs_are_found_as_with_numpys_merge(batches):
    """The merge changes where one-offs are held, not what an index answers (a colliding hash: every term on
    three hashes, so equal hashes from several runs meet)."""
    answers = []
    for merge in (lexical.merged_runs, _py_merged):
        real, hash_of = lexical.merged_runs, lexical.one_off_hash
        lexical.merged_runs, lexical.one_off_hash = merge, (lambda term: len(term) % 3)
        try:
            index = BM25Index()
            for batch in batches:
                index.add_texts(batch)
            terms = sorted({t for batch in batches for text in batch for t in text.split()} | {"nope"})
            answers.append([(index._one_offs.number(t), index.docs_with(t).tolist()) for t in terms])
        finally:
            lexical.merged_runs, lexical.one_off_hash = real, hash_of
    assert answers[0] == answers[1]
