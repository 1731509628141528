"""The C per-token loops of ingest (``recall/_scan.c``) against their pure-Python oracles: the
lexical tokens, the BM25 numbering and scores, the static tier's bags and vectors (issue 28)."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan
from hindbrain.recall.lexical import BM25Index, _Segment
from hindbrain.recall.static import default_static, py_static_ids
from hindbrain.recall.tokenize import SEPARATOR, estimate_tokens, joined_tokens, py_estimate_tokens, py_tokens, tokens

# Pieces that meet the tokenisers' edges: joiners, digits (decimal and not: "²", "٣"), an
# underscore, CJK of both classes (hangul is CJK for the lexical tokens, a word for the static
# tier), kana, the hexagram block beside the ideographs, letters whose lowercase changes length
# ("İ") or depends on context ("Σ"), combining marks, the event separator, a NUL.
_PIECES = ["error-503", "a.b:c/d@e", "x_y", "-", "_", ".", "..", "@", " ", SEPARATOR, "\x00", "²", "٣", "½",
           "İstanbul", "ΟΔΟΣ", "é", "e\u0301", "Straße", "中文", "报销系统", "关", "한국어", "カタカナ", "ー",
           "䷀", "〇", "ﬁ", "ǅ", "printers", "timeout", "the", "Refund", "ticket 42", "IAM", "3.5", "a-", "-b"]
texts = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=12).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(texts)
def test_tokens_are_the_oracles(text):
    assert tokens(text) == py_tokens(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(texts, st.lists(st.sampled_from(["@entity:iam", "@time:2026", "中文", "x"]), max_size=3)),
                max_size=8))
def test_term_ids_number_each_documents_tokens_then_terms(docs):
    vocab: dict[str, int] = {"the": 0}
    flat, lengths = _scan.term_ids([t for t, _ in docs], [c for _, c in docs], vocab)
    flat, lengths = np.frombuffer(flat, dtype=np.int64), np.frombuffer(lengths, dtype=np.int64)
    oracle = {"the": 0}
    expected = _oracle_numbers(docs, oracle)
    assert vocab == oracle
    assert lengths.tolist() == [len(e) for e in expected]
    assert flat.tolist() == [i for e in expected for i in e]


def _oracle_numbers(docs, vocab):
    """``term_ids``' numbers by the Python tokens and a dict."""
    expected = []
    for text, cues in docs:
        expected.append([vocab.setdefault(term, len(vocab)) for term in py_tokens(text) + cues])
    return expected


def test_term_ids_number_a_batch_of_many_distinct_tokens_met_again_in_other_scripts():
    """A batch's tokens are numbered through a table of the tokens met so far in the call (by code points, grown
    as it fills): thousands of distinct tokens, each met again in a text of another width (ASCII, Latin-1, CJK,
    an emoji's), a token first met as a cue term, and a term met first in a text then as a cue."""
    words = [f"w{n}x" for n in range(5000)] + [f"é{n}" for n in range(300)] + [f"中{n}文" for n in range(300)]
    docs = []
    for n, word in enumerate(words):
        docs.append((f"ticket {word} in IAM", ["@entity:iam"]))
        docs.append((f"{word} 报销 é 😀 ticket", [f"w{n + 1}x"] if n % 7 == 0 else []))
    docs.append(("w1x", ["ticket"]))
    vocab = {"the": 0}
    flat, lengths = _scan.term_ids([t for t, _ in docs], [c for _, c in docs], vocab)
    oracle = {"the": 0}
    expected = _oracle_numbers(docs, oracle)
    assert np.frombuffer(lengths, dtype=np.int64).tolist() == [len(e) for e in expected]
    assert np.frombuffer(flat, dtype=np.int64).tolist() == [i for e in expected for i in e]
    assert vocab == oracle


def test_term_ids_number_new_terms_from_the_next_number_given():
    vocab = {"a": 0, "b": 1}  # BM25Index holds some numbered terms outside the dict (its one-offs)
    flat, lengths = _scan.term_ids(["a c", "d c b"], [["e"], []], vocab, 7)
    assert np.frombuffer(flat, dtype=np.int64).tolist() == [0, 7, 8, 9, 7, 1]
    assert np.frombuffer(lengths, dtype=np.int64).tolist() == [3, 3]
    assert vocab == {"a": 0, "b": 1, "c": 7, "e": 8, "d": 9}


def test_term_ids_name_what_is_not_a_string():
    with pytest.raises(TypeError, match="a text must be str"):
        _scan.term_ids(["ok", 3], None, {})
    with pytest.raises(TypeError, match="a term must be str"):
        _scan.term_ids(None, [["ok", None]], {})
    with pytest.raises(ValueError, match="same length"):
        _scan.term_ids(["a"], [[], []], {})


class _OldSegment(_Segment):
    """``recall.lexical._Segment`` as it was: built and merged by sorting every posting."""

    @classmethod
    def from_postings(cls, term_ids, docs, tfs):
        order = np.argsort((term_ids << 32) | docs, kind="stable")
        term_ids = term_ids[order]
        terms, starts = np.unique(term_ids, return_index=True)
        return cls(terms, np.append(starts, len(term_ids)), docs[order].astype(np.int32), tfs[order])

    def merged(self, other):
        def triples(seg):
            return np.repeat(seg.terms, np.diff(seg.starts)), seg.docs.astype(np.int64), seg.tfs

        (ta, da, fa), (tb, db, fb) = triples(self), triples(other)
        return _OldSegment.from_postings(np.concatenate([ta, tb]), np.concatenate([da, db]),
                                         np.concatenate([fa, fb]))


def test_a_refused_batch_leaves_the_index_whole():
    index = BM25Index()
    with pytest.raises(TypeError, match="a text must be str"):
        index.add_texts(["fresh words here", None], [[], []])
    assert len(index) == 0 and len(index._tails) == len(index._terms)  # the numbered terms got their lists
    index.add_texts(["fresh words", "more words"], [["@x"], []])
    index.add(["words", "later"])
    assert index.top(["words"], 5) and [d for d, _ in index.top(["later"], 5)] == [2]


def _old_add_many(index: BM25Index, docs_terms: list[list[str]]) -> None:
    """``BM25Index.add_many`` as it was before the C numbering: the reference for scores."""
    first, m = index._n, len(docs_terms)
    if first + m > len(index._lengths):
        index._lengths = np.resize(index._lengths, max(2 * len(index._lengths), first + m))
    flat = []
    for terms in docs_terms:
        for term in terms:
            t = index._terms.get(term)
            if t is None:
                t = index._terms[term] = index._new_term()
            flat.append(t)
    lengths = np.array([len(t) for t in docs_terms], dtype=np.int64)
    index._lengths[first:first + m] = lengths
    index._total_length += int(lengths.sum())
    index._n += m
    if flat:
        docs = np.repeat(np.arange(first, first + m, dtype=np.int64), lengths)
        keys, counts = np.unique((np.asarray(flat, dtype=np.int64) << 32) | docs, return_counts=True)
        index._segments.append(_OldSegment.from_postings(keys >> 32, keys & 0xFFFFFFFF, counts.astype(np.float32)))
        while len(index._segments) >= 2 and 4 * len(index._segments[-1].docs) >= len(index._segments[-2].docs):
            newer = index._segments.pop()
            index._segments[-1] = index._segments[-1].merged(newer)


_WORDS = ["refund", "iam", "error-503", "中文报销", "ticket", "the", "vpn", "403", "権限", "a.b"]
_events = st.lists(st.lists(st.sampled_from(_WORDS), min_size=0, max_size=8).map(" ".join), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(_events, min_size=1, max_size=8), st.lists(st.sampled_from(_WORDS + ["nope"]), min_size=1, max_size=4))
def test_bm25_scores_and_rankings_equal_the_old_numbering(batches, query):
    new, old = BM25Index(), BM25Index()
    for batch in batches:
        cues = [[f"@entity:{len(t) % 3}"] for t in batch]
        new.add_texts(batch, cues)
        _old_add_many(old, [joined_tokens(t) + c for t, c in zip(batch, cues, strict=True)])
        new.add(tokens(batch[0]))  # single adds (the tails) interleave with the segments
        old.add(tokens(batch[0]))
    assert len(new._segments) == len(old._segments)
    for a, b in zip(new._segments, old._segments, strict=True):  # the same postings, laid out the same
        assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b, strict=True))
    q = tokens(" ".join(query))
    (s_new, idf_new), (s_old, idf_old) = new.scores(q), old.scores(q)
    assert np.array_equal(s_new, s_old) and idf_new == idf_old
    assert new.top(q, 5) == old.top(q, 5)


@pytest.fixture(scope="module")
def table():
    return default_static().table


def _bags(table, batch):
    flat, counts = table.batch_ids(batch)
    ends = np.cumsum(counts)
    return [sorted(flat[e - c : e].tolist()) for e, c in zip(ends, counts, strict=True)]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(texts, max_size=6))
def test_static_bags_are_the_oracles_text_by_text(table, batch):
    # the batch read at once gives each text its own bag: a rare ASCII word's ids went to the
    # wrong text before (the ids of rare words were appended after the batch's known words)
    assert _bags(table, batch) == [sorted(py_static_ids(table.vocab, text)) for text in batch]


def test_a_rare_word_keeps_to_its_own_text(table):
    assert "timeout" not in table.vocab and table.vocab.get("cat") is not None
    both = _bags(table, ["timeout the", "cat"])
    assert both == _bags(table, ["timeout the"]) + _bags(table, ["cat"])
    assert both[1] == [table.vocab["cat"]]


def test_static_vectors_are_the_oracles_pooled_rows(table):
    batch = ["ticket 7: issue a refund in IAM — 403 forbidden", "用户说页面一直转圈，提交后没有响应",
             "printers timeout"]
    got = table.embed(batch)
    for row, text in zip(got, batch, strict=True):
        pooled = table.full[py_static_ids(table.vocab, text)].sum(axis=0)
        assert np.allclose(row, pooled / np.linalg.norm(pooled), atol=1e-6)


@settings(max_examples=examples(200), deadline=None)
@given(texts)
def test_estimate_tokens_is_the_oracles(text):
    assert estimate_tokens(text) == py_estimate_tokens(text)


@settings(max_examples=50, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_pooled_rows_are_the_sparse_products(table, batch):
    # the C pooling against the sparse product it replaced: each text's rows of ``full`` summed
    # in the same order, then scaled to unit length (zero rows stay zero)
    from scipy.sparse import csr_matrix

    flat, counts = table.batch_ids(batch)
    indptr = np.concatenate(([0], np.cumsum(counts)))
    bags = csr_matrix((np.ones(len(flat), dtype=np.float32), flat, indptr), shape=(len(batch), len(table.tokens)))
    summed = np.asarray(bags @ table.full)
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    expected = np.divide(summed, norms, out=np.zeros_like(summed), where=norms > 0)
    assert np.allclose(table.embed(batch), expected, atol=1e-6, rtol=0)


def test_pool_refuses_what_would_read_out_of_bounds(table):
    out = np.empty((1, table.dim), dtype=np.float32)
    with pytest.raises(IndexError, match="not a row"):
        _scan.pool(np.array([len(table.tokens)], dtype=np.int64), np.array([1], dtype=np.int64), table.full, out)
    with pytest.raises(ValueError, match="more ids"):
        _scan.pool(np.array([0], dtype=np.int64), np.array([2], dtype=np.int64), table.full, out)


def _fnv1a(word: str) -> int:
    """The oracle of ``_scan.stable_hashes``: 64-bit FNV-1a over the code points, as a signed int."""
    h = 0xCBF29CE484222325
    for ch in word:
        h = ((h ^ ord(ch)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h - (1 << 64) if h >= 1 << 63 else h


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(texts, max_size=10))
def test_stable_hashes_are_the_oracles_and_refuse_what_is_not_a_word(words):
    assert _scan.stable_hashes(words) == {_fnv1a(w) for w in words}
    with pytest.raises(TypeError, match="must be str"):
        _scan.stable_hashes([*words, 7])
