"""A bulk add's one-off terms (a ticket or case number) leave ``BM25Index._terms`` for arrays of
hashes and bytes (``lexical._OneOffs``). The index answers as one that keeps them all in the dict:
the same scores (bit for bit), idfs and documents for every term, through one-offs that recur in
later batches or single adds, hash collisions, a refused batch, and a save that is mapped again;
and a one-off term costs a fraction of a dict entry."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain.recall import lexical
from hindbrain.recall.lexical import BM25Index

COMMON = ["ticket", "the", "vpn", "403", "権限", "@entity:iam"]


class KeepingAll(BM25Index):
    """The index as it was: every term stays in ``_terms``."""

    def _demote_one_offs(self, new, hashes, first_number, segment) -> None:
        pass


# a document: common words and numbers drawn from a small pool, so a one-off of one batch recurs in later ones
documents = st.lists(st.one_of(st.sampled_from(COMMON), st.integers(0, 400).map(lambda k: f"n{k}")), max_size=8)
steps = st.lists(st.one_of(st.tuples(st.just("batch"), st.lists(documents, min_size=1, max_size=30)),
                           st.tuples(st.just("single"), documents),
                           st.tuples(st.just("save"), st.none())), min_size=1, max_size=12)


def same_answers(index: BM25Index, reference: BM25Index, terms: list[str]) -> None:
    assert len(index) == len(reference)
    for term in terms:
        got, want = index.scores([term]), reference.scores([term])
        assert np.array_equal(got[0], want[0]) and got[1] == want[1], term
        assert np.array_equal(np.sort(index.docs_with(term)), np.sort(reference.docs_with(term))), term
        assert (index.docs_with(term, max_df=1) is None) == (reference.docs_with(term, max_df=1) is None), term
    query = terms[::3] + terms[:2]
    got, want = index.scores(query), reference.scores(query)
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]
    if len(index):
        mask = np.arange(len(index)) % 3 != 0
        for _ in range(2):  # the second time the mask recurs: its visible documents alone
            got, want = index.visible_scores(query, mask), reference.visible_scores(query, mask)
            assert (got[0] is None) == (want[0] is None) and np.array_equal(got[1], want[1]) and got[2] == want[2]


@pytest.mark.parametrize("collide", [False, True])
def test_one_off_terms_answer_as_the_dict_did(tmp_path_factory, monkeypatch, collide):
    if collide:  # every one-off shares one of 3 hashes: the bytes still tell them apart
        monkeypatch.setattr(lexical, "one_off_hash", lambda term: len(term) % 3)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(steps)
    def run(plan):
        folder = tmp_path_factory.mktemp("saved")
        index, reference = BM25Index(), KeepingAll()
        for i, (kind, docs) in enumerate(plan):
            if kind == "batch":
                index.add_many(docs)
                reference.add_many(docs)
            elif kind == "single":
                index.add(docs)
                reference.add(docs)
            else:  # the index saved and mapped again (a reopened owner, a replica), then added to
                index = BM25Index.mapped(folder / f"s{i}", index.save(folder / f"s{i}"))
        seen = sorted({term for kind, docs in plan if kind != "save"
                       for doc in (docs if kind == "batch" else [docs]) for term in doc})
        same_answers(index, reference, [*seen, "absent", "n999"])

    run()


def test_a_one_off_that_recurs_takes_its_number_back():
    index = BM25Index()
    index.add_many([["ticket", "n1"], ["ticket", "n2"], ["ticket"]])
    assert "n1" not in index._terms and index._one_offs.number("n1") >= 0
    number = index._one_offs.number("n1")
    index.add_many([["n1", "n3"], ["n3"]])  # in a later batch
    index.add(["n2"])  # in a single add
    assert index._terms["n1"] == number and index._terms["n2"] == index._one_offs.number("n2")
    assert len(index._tails) == 4  # ticket, n1, n2, n3: no number given twice
    assert sorted(index.docs_with("n1").tolist()) == [0, 3] and sorted(index.docs_with("n2").tolist()) == [1, 5]
    assert index._term_list() == ["ticket", "n1", "n2", "n3"]


def test_a_refused_batch_numbers_no_term_twice():
    index = BM25Index()
    index.add_many([["ticket", "n1"], ["ticket"]])
    with pytest.raises(TypeError, match="a term must be str"):
        index.add_many([["n1", "n5"], ["ok", None]])
    assert len(index._tails) == len(index._term_list()) == 4 and index._terms["n1"] == 1
    index.add_many([["n5", "n1"]])
    assert sorted(index.docs_with("n1").tolist()) == [0, 2] and index.docs_with("n5").tolist() == [2]


def test_a_one_off_term_is_no_python_object_of_its_own():
    """Two numbers no other event repeats, as bench/api.py's events have. In the dict each was a
    ``str`` and an ``int`` beside a slot: ~208 bytes a term of resident memory in all at 200k
    terms, against ~123 as a hash and bytes in arrays (the postings and the term's lists in both;
    docs/speed.md, round twelve). Counted here as the Python blocks allocated per term."""
    batches = [[["ticket", f"{n}", f"case-{n * 7919 % 10**9}"] for n in range(start, start + 2_000)]
               for start in range(0, 20_000, 2_000)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        index = BM25Index()
        for batch in batches:
            index.add_many(batch)
        grown = tracemalloc.take_snapshot().compare_to(before, "filename")
    finally:
        tracemalloc.stop()
    assert index.docs_with("12345").tolist() == [12345] and index.docs_with("ticket").tolist() == list(range(20_000))
    blocks = sum(stat.count_diff for stat in grown) / 40_000
    assert blocks < 0.05, f"{blocks:.3f} blocks a one-off term (a str each in the dict: 1.0)"
