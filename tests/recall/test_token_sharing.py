"""Tokens computed in parts (design.md §issue-28, round two): the index tokenizes an event's situation once
per distinct value (``joined_tokens``) and the learner hashes the text and each structured field apart
(``learner._word_hashes``, one C pass); both must equal tokenizing the whole joined text."""

from __future__ import annotations

from array import array

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.learning.learner import _word_hashes
from hindbrain.recall import _scan
from hindbrain.recall.tokenize import SEPARATOR, joined_tokens, tokens

PIECES = ["error-503", "ERR_CONN", "a.b", "工单系统", "权限", "x", "—", " — ", "-", "_", "/", "@", "İstanbul",
          "system: IAM", " / ", "ção", "ｶﾅ", "e-", "-e", "5", "\n", "日本語テキスト", "한국어"]
texts = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


@settings(max_examples=examples(500), deadline=None)
@given(texts, texts)
def test_joined_tokens_equal_the_whole(said, situation):
    text = f"{said}{SEPARATOR}{situation}"
    assert joined_tokens(text) == tokens(text)
    assert joined_tokens(said) == tokens(said)


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(st.none(), texts), st.lists(st.one_of(st.none(), texts), min_size=5, max_size=5),
       st.lists(texts, max_size=2))
def test_learner_words_equal_the_joined_text(text, structured, entities):
    record = dict(zip(("system", "identity", "action", "expected", "actual"), structured, strict=True))
    record.update(text=text, entities=entities)
    said = [record.get(k) for k in ("text", "system", "identity", "action", "expected", "actual")]
    joined = _scan.stable_hashes(tokens(" ".join([*filter(None, said), *entities])))
    assert list(array("q", _word_hashes(record))) == sorted(joined)


@settings(max_examples=examples(300), deadline=None)
@given(texts, texts)
def test_packed_word_sets_give_the_same_jaccard(a, b):
    words_a, words_b = frozenset(tokens(a)), frozenset(tokens(b))
    # what the hygiene keeps (``_word_hashes``' set, packed) and compares
    hashes_a, hashes_b = (set(array("q", _scan.token_hash_bytes(list(words)))) for words in (words_a, words_b))
    assert len(hashes_a) == len(words_a)
    if words_a | words_b:
        assert len(hashes_a & hashes_b) / len(hashes_a | hashes_b) == len(words_a & words_b) / len(words_a | words_b)
