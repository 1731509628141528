"""The lexical segments' merge on its own thread (issue 28, round twenty-two): readers between a bulk add and
its merge's end see the same postings as with the merge done in place, the policy merges the same segments as
the in-place loop did (the oracle), a merge's error reaches the next reader of its result, and a fold returns
with no merge left running."""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import lexical
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.index import event_columns as event_columns_of_rows
from hindbrain.recall.lexical import BM25Index, merge_from

_WORDS = ["refund", "iam", "error-503", "中文报销", "ticket", "the", "vpn", "403", "権限", "😀", "a.b", "İstanbul"]
_texts = st.lists(st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join), min_size=2, max_size=30)


def _in_place(segments: list) -> list:
    """The policy as ``_add_numbered`` ran it before: the last two merged while the newer holds at least a
    quarter of the older's postings."""
    segments = list(segments)
    while len(segments) >= 2 and 4 * len(segments[-1].docs) >= len(segments[-2].docs):
        newer = segments.pop()
        segments[-1] = segments[-1].merged(newer)
    return segments


def _layout(index: BM25Index) -> list:
    return [tuple(np.asarray(a).tobytes() for a in segment) for segment in index._segments]


class _Held:
    """Merges that wait until released: every read between an add and its merge's end is seen unmerged."""

    def __init__(self):
        self.release = threading.Event()
        self.real = lexical.merged_run

    def __call__(self, segments):
        assert self.release.wait(60)
        return self.real(segments)


@settings(max_examples=80, deadline=None)
@given(st.lists(_texts, min_size=1, max_size=8), st.lists(st.sampled_from(_WORDS + ["nope"]), min_size=1, max_size=4))
def test_reads_while_a_merge_runs_equal_the_merged_ones_and_the_layout_is_the_in_place_policys(batches, query):
    held, done = BM25Index(), BM25Index()
    expected: list = []
    for batch in batches:
        cues = [[f"@entity:{len(t) % 3}"] for t in batch]
        done.add_texts(batch, cues)
        expected = _in_place([*expected, done._segments[-1]])  # the batch's segment: in the list until the join
        done.finish_merge()
        assert _layout(done) == [tuple(np.asarray(a).tobytes() for a in s) for s in expected]
        hold = _Held()
        lexical.merged_run = hold
        try:
            held.add_texts(batch, cues)
        finally:
            lexical.merged_run = hold.real
        for term in (*query, "@entity:0"):  # read while the merge (if one started) waits
            assert np.array_equal(held.docs_with(term), done.docs_with(term))
            assert held._df(*held._lookup(term)) == done._df(*done._lookup(term))
        (a, idf_a), (b, idf_b) = held.scores(query), done.scores(query)
        assert np.array_equal(a, b) and idf_a == idf_b
        hold.release.set()
        held.finish_merge()
        assert _layout(held) == _layout(done)


def test_merge_from_is_the_in_place_loops_run():
    sizes = [[1], [4, 1], [5, 1], [5, 2], [100, 30, 8, 2], [100, 30, 8, 1], [3, 100, 30, 8, 2], [8, 8, 8, 8]]
    for docs in sizes:
        segments = [lexical._Segment(np.zeros(1, np.int64), np.array([0, n]), np.zeros(n, np.int32),
                                     np.ones(n, np.float32)) for n in docs]  # one term, n postings
        kept = len(_in_place(segments)) - 1
        assert merge_from(segments) == (None if kept == len(docs) - 1 else kept), docs


def test_a_merges_error_reaches_its_reader_and_leaves_the_postings_unmerged(monkeypatch):
    index = BM25Index()
    index.add_texts(["refund ticket"] * 8)

    def broken(segments):
        raise MemoryError("no room")

    monkeypatch.setattr(lexical, "merged_run", broken)
    index.add_texts(["refund vpn"] * 8)
    with pytest.raises(MemoryError):
        index.finish_merge()
    assert len(index._segments) == 2 and index._merging is None
    assert index.docs_with("refund").tolist() == list(range(16))
    index.finish_merge()  # nothing left to wait for


def test_a_fold_returns_with_no_merge_running(monkeypatch):
    """``RecallIndex.add_events`` waits for the merges its adds started (and ``add``, the units' fold)."""
    finished = []

    def merged_run(segments):
        finished.append(False)
        merged = real(segments)
        finished[-1] = True
        return merged

    real = lexical.merged_run
    monkeypatch.setattr(lexical, "merged_run", merged_run)
    recall = RecallIndex()
    for n in range(6):
        rows = [(f"ev_{n}_{k}", {"text": f"refund {k % 7} ticket {n}", "kind": "message", "scope": {}},
                 n * 100 + k, "a1") for k in range(20)]
        recall.add_events({"t": event_columns_of_rows(rows)})
        assert recall.tenants["t"].bm25._merging is None
    assert finished and all(finished)
    assert len(recall.tenants["t"].bm25._segments) < 6
