"""``_scan.term_ids`` writes its ids straight into the bytes it returns and keeps its token cache's room
between calls (issue 28, round twenty-three): the numbers stay the Python oracle's whatever the calls
before it held — a token numbered by an earlier call with another vocabulary, a batch whose documents
outgrow the room first made for them, a batch of none."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan
from hindbrain.recall.tokenize import py_tokens

_WORDS = ["ticket", "IAM", "报销系统", "中文", "한국어", "😀ok", "İstanbul", "error-503", "a.b:c", "x_y", "",
          "\x00", "Straße", "ΟΔΟΣ", "42", "w1x", "é"]
_doc_text = st.lists(st.one_of(st.sampled_from(_WORDS), st.text(max_size=5)), max_size=90).map(" ".join)
_batch = st.lists(st.tuples(_doc_text, st.lists(st.sampled_from(["@entity:iam", "中文", "ticket", "😀"]), max_size=3)),
                  max_size=12)


def _oracle(docs, vocab, next_number):
    """The numbers ``term_ids`` gives: each document's Python tokens then its cue terms, a term the dict lacks
    numbered ``next_number``, + 1, ... in the order met (the dict takes it)."""
    numbers, lengths = [], []
    for text, cues in docs:
        terms = py_tokens(text) + cues
        for term in terms:
            if term not in vocab:
                vocab[term] = next_number
                next_number += 1
            numbers.append(vocab[term])
        lengths.append(len(terms))
    return numbers, lengths


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_batch, st.randoms(use_true_random=False)), min_size=1, max_size=4))
def test_calls_in_a_row_each_number_by_their_own_vocabulary(calls):
    """Call after call, each with a vocabulary of its own holding some of the same tokens under other numbers:
    a token the kept cache saw in an earlier call must be looked up again."""
    for docs, rng in calls:
        known = sorted({t for text, cues in docs for t in py_tokens(text) + cues})
        rng.shuffle(known)
        vocab = {term: 1000 + 3 * n for n, term in enumerate(known[: len(known) // 2])}
        oracle_vocab = dict(vocab)
        next_number = 10_000 + rng.randrange(100)
        flat, lengths = _scan.term_ids([t for t, _ in docs], [c for _, c in docs], vocab, next_number)
        numbers, counts = _oracle(docs, oracle_vocab, next_number)
        assert isinstance(flat, bytes) and isinstance(lengths, bytes)
        assert np.frombuffer(flat, dtype=np.int64).tolist() == numbers
        assert np.frombuffer(lengths, dtype=np.int64).tolist() == counts
        assert vocab == oracle_vocab


def test_documents_past_the_room_made_for_them_and_an_empty_batch():
    """Documents of ~300 tokens (past the 64 a document the ids' bytes start with: they grow in place), then a
    batch of none, then one document of one token: each exactly the oracle's, each bytes of its own length."""
    rng = random.Random(5)
    docs = [(" ".join(f"t{rng.randrange(2000)} 中{rng.randrange(50)}文" for _ in range(150)), ["@entity:iam"])
            for _ in range(40)]
    for batch in (docs, [], [("lone", [])]):
        vocab: dict[str, int] = {}
        flat, lengths = _scan.term_ids([t for t, _ in batch], [c for _, c in batch], vocab)
        numbers, counts = _oracle(batch, {}, 0)
        assert len(flat) == 8 * len(numbers) and len(lengths) == 8 * len(batch)
        assert np.frombuffer(flat, dtype=np.int64).tolist() == numbers
        assert np.frombuffer(lengths, dtype=np.int64).tolist() == counts


def test_a_failed_call_leaves_the_next_one_right():
    """A call that raises part-way (a text not a string) gives its cache back in whatever state; the next call's
    numbers are still the oracle's."""
    first = [("ticket in IAM 报销系统", ["@entity:iam"])] * 3
    _scan.term_ids([t for t, _ in first], [c for _, c in first], {})
    try:
        _scan.term_ids(["ticket 中文 more words", 7], None, {"ticket": 5})
    except TypeError:
        pass
    else:
        raise AssertionError("a text that is not a string must be refused")
    docs = [("ticket 中文 more words", ["ticket"]), ("IAM 报销系统 ticket", [])]
    vocab = {"ticket": 99, "中文": 98}
    flat, lengths = _scan.term_ids([t for t, _ in docs], [c for _, c in docs], vocab, 500)
    numbers, counts = _oracle(docs, {"ticket": 99, "中文": 98}, 500)
    assert np.frombuffer(flat, dtype=np.int64).tolist() == numbers
    assert np.frombuffer(lengths, dtype=np.int64).tolist() == counts
