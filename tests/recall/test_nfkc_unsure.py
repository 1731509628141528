"""NFKC's quick check a text at a time (``_cues.nfkc_unsure`` over ``disguise._nfkc_plain_bits``, issue 28 round
nineteen): a text it is sure of is its own NFKC, and ``revealed_many`` gives what the batch-joined check gave."""

from __future__ import annotations

import unicodedata

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _cues, _scan, disguise

BITS = disguise._nfkc_plain_bits()
PLAIN = [point for point in range(0x10000) if BITS[point >> 3] >> (point & 7) & 1]
# characters something composes with after them: Latin, Hangul leading jamo and LV syllable, Devanagari,
# Oriya, Tamil, Kannada, Malayalam, Sinhala, Myanmar, Balinese bases, Greek, Cyrillic, kana
FIRSTS = "aeoAEOu\u0391\u03b1\u0415\u0435\u1100\uac00\u0915\u0b47\u0bc6\u0cbf\u0d46\u0dd9\u1025\u1b05\u304b\u30ab"


def former_revealed_many(texts: list[str]) -> list[str]:
    """``revealed_many`` before round nineteen: NFKC's quick check once over the batch joined by NUL (the oracle)."""
    out = list(texts)
    suspects = set(_scan.maybe_disguised(out, disguise._masking_bits()))
    if not unicodedata.is_normalized("NFKC", "\x00".join(out)):
        suspects.update(k for k, text in enumerate(out) if not unicodedata.is_normalized("NFKC", text))
    for k in suspects:
        out[k] = disguise.revealed(out[k])
    return out


def test_every_plain_character_is_its_own_nfkc_alone_and_after_what_composes():
    assert 50_000 < len(PLAIN) < 0x10000  # ASCII, the ideographs, most letters: not everything
    for before, point in zip([0, *PLAIN], PLAIN, strict=False):
        char = chr(point)
        # a plain neighbour on either side: neighbours in code order hold the marks that would reorder
        for text in (char, char * 2, chr(before) + char, char + chr(before), *(first + char for first in FIRSTS)):
            assert unicodedata.normalize("NFKC", text) == text, hex(point)


def test_no_pair_composes_past_the_planes_the_bitmap_reads():
    for point in range(disguise._PAIRED_BELOW, 0x110000):
        parts = unicodedata.decomposition(chr(point)).split()
        assert len(parts) < 2 or parts[0].startswith("<"), hex(point)


def test_what_nfkc_changes_is_not_plain():
    for char in ("\u00a0", "\u2011", "\uff0c", "\u3000", "\ufb01", "\u0301", "\u0307", "\u1161", "\u11a8", "\u212a",
                 "\u2460", "\u00bd", "\u0958", "\u0b3e"):
        assert not BITS[ord(char) >> 3] >> (ord(char) & 7) & 1, hex(ord(char))


pieces = st.sampled_from(["ticket 12: refund", "报销系统权限不足", "—", "é", "e\u0301", "\u1100\u1161\u11a8",
                          "가\u11a8", "ﬁ", "ＡＢＣ", "，", "\u3000", "\u00a0", "½", "K", "\u212a", "😀", "\U0001d400",
                          "\ud800", "İ", "&amp;", "al\u200bways", "\u0915\u093c", "\u0b47\u0b3e", ""])
texts = st.lists(st.one_of(pieces, st.text(max_size=4), st.characters(max_codepoint=0xFFFF).map(str)),
                 max_size=8).map("".join)


@settings(max_examples=examples(1500), deadline=None)
@given(st.lists(texts, max_size=8))
def test_a_text_left_unasked_is_its_own_nfkc_and_the_batch_reads_as_before(batch):
    unsure = set(_cues.nfkc_unsure(batch, BITS))
    assert all(unicodedata.is_normalized("NFKC", text) for k, text in enumerate(batch) if k not in unsure)
    assert all(not text.isascii() for k, text in enumerate(batch) if k in unsure)
    assert disguise.revealed_many(batch) == former_revealed_many(batch) == [disguise.revealed(t) for t in batch]


def test_the_check_names_bad_input():
    with pytest.raises(TypeError, match="a text must be str"):
        _cues.nfkc_unsure(["a", None], BITS)
    with pytest.raises(ValueError, match="8192 bytes"):
        _cues.nfkc_unsure(["a"], BITS[:-1])
