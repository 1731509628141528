"""``BM25Index.visible_scores`` (the lexical stage under a recall's mask) is ``scores`` at the
visible documents, bit for bit: with common terms (rows over a mask's documents) and rare ones
(postings renumbered), repeated masks (rows kept), more masks than are kept, a small row budget,
and after the corpus changes."""

import random
from collections import Counter

import numpy as np
import pytest

from hindbrain.recall import lexical
from hindbrain.recall.lexical import BM25Index

QUERIES = [["the"], ["the", "ticket", "w0", "w1"], ["ticket", "ticket", "w3", "r17"], ["w5", "w5", "w5", "the"],
           ["r1", "r2", "r3", "unknown"], ["unknown"], [], ["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "the"],
           ["r5", "the", "r9", "ticket", "w2"]]  # rare and common terms interleaved


def corpus(rng: random.Random, n: int) -> list[list[str]]:
    """Every document holds "the"; "ticket" is in ~half, each w<i> in ~1/(i + 2); rare r<j> once or
    twice; every 7th document is a copy of an earlier one (ties)."""
    docs = []
    for d in range(n):
        if d % 7 == 6:
            docs.append(list(docs[rng.randrange(d)]))
            continue
        doc = ["the"] * rng.randint(1, 3) + (["ticket"] if rng.random() < 0.5 else [])
        doc += [f"w{i}" for i in range(40) if rng.random() < 1 / (i + 2)]
        doc += [f"r{rng.randrange(n)}" for _ in range(rng.randint(0, 3))]
        docs.append(doc)
    return docs


def expected(index: BM25Index, terms: list[str], mask: np.ndarray):
    scores, idfs = index.scores(terms)
    docs = np.flatnonzero(mask[: len(index)])
    return docs, scores[docs], idfs


def assert_same(index: BM25Index, terms: list[str], mask: np.ndarray) -> bool:
    """``visible_scores`` against its definition; returns whether it scored the visible documents alone."""
    docs, scores, idfs = index.visible_scores(terms, mask)
    want_docs, want_scores, want_idfs = expected(index, terms, mask)
    assert scores.dtype == np.float32 and idfs == want_idfs
    if docs is None:  # a mask not seen lately: every document's score, the hidden ones zeroed
        full, _ = index.scores(terms)
        assert np.array_equal(scores, full * mask[: len(index)]), terms
        return False
    assert np.array_equal(docs, want_docs)
    assert np.array_equal(scores, want_scores), terms
    return True


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> BM25Index:
    """A mapped base, then bulk segments and single adds (as ``test_lexical_exact``)."""
    docs = corpus(random.Random(30), 4000)
    first = BM25Index()
    first.add_many(docs[:2000])
    stem = tmp_path_factory.mktemp("bm25") / "x"
    mapped = BM25Index.mapped(stem, first.save(stem))
    mapped.add_many(docs[2000:3800])
    for doc in docs[3800:]:
        mapped.add(doc)
    return mapped


def masks(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random(n) < 0.34, rng.random(n) < 0.01, np.ones(n, dtype=bool), np.zeros(n, dtype=bool),
            np.concatenate([rng.random(n) < 0.5, np.ones(7, dtype=bool)])]  # longer than the index: the rest unread


@pytest.mark.parametrize("query", QUERIES)
def test_visible_scores_are_the_scores_at_the_visible_documents(index, query):
    for mask in masks(len(index), 3):
        assert not assert_same(index, query, mask)  # a mask not seen lately: scored whole
        assert assert_same(index, query, mask)  # recurring: over its documents, its common terms' rows kept
        assert assert_same(index, query, mask)  # those rows read back


def test_more_masks_than_are_kept_and_a_small_row_budget_stay_exact(monkeypatch):
    index = BM25Index()
    index.add_many(corpus(random.Random(32), 2000))
    monkeypatch.setattr(lexical, "VIEW_ROW_BYTES", 3 * 4 * len(index) // 10)  # ~ three rows of a 30 % mask
    rng = random.Random(8)
    pool = masks(len(index), 4) + masks(len(index), 5)  # 10 masks, 4 kept
    for _ in range(200):
        assert_same(index, rng.choice(QUERIES), rng.choice(pool))
        assert index._view_rows.nbytes <= lexical.VIEW_ROW_BYTES and len(index._views) <= lexical.VISIBLE_VIEWS


def test_a_changed_corpus_is_scored_anew():
    docs = corpus(random.Random(31), 1500)
    index = BM25Index()
    index.add_many(docs[:1000])
    mask = np.random.default_rng(6).random(1500) < 0.4
    query = ["the", "ticket", "w0", "w3", "r17"]
    assert_same(index, query, mask)
    assert_same(index, query, mask)
    index.add_many(docs[1000:1400])
    for doc in docs[1400:]:
        index.add(doc)
    assert not assert_same(index, query, mask)  # the kept view and rows were of 1,000 documents
    assert assert_same(index, query, mask)  # the new view's rows, made as it recurs
    # ... and the old ones are gone, not kept beside the new ones until the budget pushes them out
    assert len(index._views) == 1 and {key[0] for key in index._view_rows} == {index._views[0].number}


def test_an_empty_index_scores_nothing():
    docs, scores, idfs = BM25Index().visible_scores(["the"], np.zeros(0, dtype=bool))
    assert docs is None and len(scores) == 0 and idfs == {}


def test_a_mask_that_is_not_bool_is_refused(index):
    with pytest.raises(TypeError, match="bool mask"):
        index.visible_scores(["the"], np.ones(len(index), dtype=np.float32))


@pytest.mark.parametrize("terms", QUERIES[:5])
def test_documents_past_a_short_mask_are_hidden(index, terms):
    """A recall takes its mask, then a bulk import beside it adds documents before its lexical stage
    (a Brain serving recalls while it ingests: this raised ``ValueError`` and the recall failed): the
    documents past the mask's end are not the recall's to see, as for the vector index's ``allowed``."""
    short = np.random.default_rng(len(terms)).random(len(index) - 37) < 0.4
    padded = np.concatenate([short, np.zeros(37, dtype=bool)])
    for _ in range(2):  # a mask not seen lately (every document scored), then the kept view's documents
        docs, scores, _ = index.visible_scores(terms, short)
        if docs is None:
            assert not scores[len(short):].any()
        assert_same(index, terms, padded)


def test_rows_over_a_mask_leave_the_whole_rows_to_scores():
    """A recurring mask's common terms keep their rows over its documents, not the whole rows those
    are taken from: only ``scores`` (a mask not seen lately, no mask) keeps whole rows. Kept for
    every term a view used, they held ~380 B a document at 100k beside the views' own rows."""
    docs = corpus(random.Random(33), 3000)
    index, twin = BM25Index(), BM25Index()
    index.add_many(docs)
    twin.add_many(docs)
    mask = np.random.default_rng(7).random(len(index)) < 0.34
    assert index.visible_scores(["the"], mask)[0] is None  # first sight: scored whole, "the"'s whole row kept
    assert list(index._rows) == [("the", 1)]
    for query in QUERIES:  # recurring: common terms' rows over the mask, made from whole rows then dropped
        got, scores, idfs = index.visible_scores(query, mask)
        want, want_idfs = twin.scores(query)
        assert np.array_equal(got, np.flatnonzero(mask)) and np.array_equal(scores, want[got]) and idfs == want_idfs
    assert list(index._rows) == [("the", 1)]
    common = {(t, q) for query in QUERIES for t, q in Counter(query).items() if (t, q) in twin._rows}
    assert {(t, q) for _, t, q in index._view_rows} == common and len(common) > 5


def test_a_common_term_few_visible_documents_hold_is_kept_as_its_postings_there():
    """A common term in a quarter to an eighth of the documents keeps its postings over a recurring mask
    (8 bytes a holder), not a dense row (4 bytes a visible document, mostly zeros): api.py's common query
    terms are in 12-37 % of the documents. A term most visible documents hold keeps its dense row. The
    scores keep their bits either way."""
    docs = corpus(random.Random(34), 3000)
    index = BM25Index()
    index.add_many(docs)
    mask = np.random.default_rng(9).random(len(index)) < 0.34
    sparse = ["w2", "w3", "w4", "w6"]  # each in ~1/4 .. 1/8 of the documents (ROW_SHARE 1/16: common)
    assert not assert_same(index, sparse + ["the"], mask)
    for _ in range(2):  # the recurring mask: its common terms' parts kept, then read back
        assert assert_same(index, sparse + ["the"], mask)
    visible = int(np.count_nonzero(mask))
    assert index._view_rows.nbytes < 4 * visible * (1 + len(sparse) / 2)  # dense rows: 4 * visible * 5
    kept = {term: part for (_, term, _), part in index._view_rows.items()}
    assert set(kept) == set(sparse) | {"the"}
    assert kept["the"].row is not None and kept["the"].nbytes == 4 * visible
    assert all(kept[t].row is None for t in sparse)


def test_a_common_term_under_half_the_documents_hold_keeps_its_postings_as_its_whole_part(monkeypatch):
    """``scores`` keeps a common term's postings, gathered, rather than a dense row over every document
    when under half of them hold it; the scores are those of its postings added one by one."""
    docs = corpus(random.Random(35), 3000)
    index, plain = BM25Index(), BM25Index()
    index.add_many(docs)
    plain.add_many(docs)
    sparse = ["w2", "w3", "w4", "w6"]
    first, _ = index.scores(sparse + ["the"])
    assert index._rows.nbytes < 4 * len(index) * (1 + len(sparse) / 2)  # dense rows: 4 * n * 5
    assert index._rows[("the", 1)].row is not None and all(index._rows[(t, 1)].row is None for t in sparse)
    again, _ = index.scores(sparse + ["the"])
    monkeypatch.setattr(lexical, "ROW_SHARE", 2.0)  # no term is common: every posting added by bm25_add
    want, _ = plain.scores(sparse + ["the"])
    assert np.array_equal(first, want) and np.array_equal(again, want)


def test_a_recurring_masks_documents_are_kept_as_int32(index):
    # flatnonzero's int64 numbers took 8 bytes a visible document in each of the kept views (272 kB at a 34 %
    # mask of 100k); the postings number documents in int32, which is searched in them without a cast
    mask = masks(len(index), 9)[0]
    index.visible_scores(["the", "w1"], mask)
    docs, scores, _ = index.visible_scores(["the", "w1"], mask)
    assert docs.dtype == np.int32 and np.array_equal(docs, np.flatnonzero(mask[: len(index)]))
    view = next(v for v in index._views if np.array_equal(v.mask, mask[: len(index)]))
    assert view.docs.dtype == np.int32 and view.docs.nbytes == 4 * len(docs)
    assert np.array_equal(scores, expected(index, ["the", "w1"], mask)[1])


def test_a_read_only_mask_is_kept_as_itself_and_a_writable_one_as_a_copy(index):
    """A read-only mask that owns its data (``TenantIndex.visible_mask``'s, kept per agent) is kept by
    its view as itself, and known again by identity; a writable one is copied, so the caller's later
    change in place is a new mask, not a stale view of the old one."""
    query = ["the", "ticket", "w0", "r17"]
    shared = np.random.default_rng(9).random(len(index)) < 0.3
    shared.flags.writeable = False
    assert_same(index, query, shared)
    assert any(view.mask is shared for view in index._views)
    assert assert_same(index, query, shared)  # recurring: its documents' view, found by identity
    mine = np.random.default_rng(10).random(len(index)) < 0.3
    assert_same(index, query, mine)
    assert assert_same(index, query, mine)
    mine[: len(index) // 2] = ~mine[: len(index) // 2]  # the caller reuses its array for another agent
    assert not assert_same(index, query, mine)  # a mask not seen lately: scored whole, as it now stands
