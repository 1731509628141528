"""The texts ``recall/_scan.c``'s walks read lowered (``term_ids``, ``static_ids``, ``tokens``, the learner's token
hashes) lowered without ``str.lower`` where the text is plain: ASCII and caseless characters only (issue 28, round
eighteen). Held to ``str.lower`` itself, over every code point and over random mixes of plain and cased text."""

from __future__ import annotations

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan
from hindbrain.recall.static import default_static, py_static_ids
from hindbrain.recall.tokenize import py_tokens, tokens


def test_every_code_point_is_lowered_as_str_lower_lowers_it_between_letters_of_both_cases():
    # a character the C counts caseless but str.lower changes (a cased letter, "İ", final "Σ") differs here
    texts = [f"A{chr(c)}Zb{chr(c)}" for c in range(0x110000)]
    assert [_scan.lowered(t) for t in texts] == [t.lower() for t in texts]


# Plain pieces (ASCII of both cases, CJK, kana, hangul, punctuation, fullwidth digits and marks) and cased ones
# that send a text to str.lower (Latin-1 and Greek letters, the final sigma, "İ" which lowers to two characters,
# a Roman numeral, fullwidth capitals).
_PIECES = ["Ticket 50000: ", "提交报销单", " in IAM — ", "(case 882409841)", "カタカナ", "한국어", "、。", "？！",
           "０１２", "«»", "µ", "ΟΔΟΣ", "Σ", "İstanbul", "Straße", "Ⅰ", "ＡＢ", "ǅ", "É", "x", "ID-42", "\x00", "\t"]
texts = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=10).map("".join)


@settings(max_examples=examples(500), deadline=None)
@given(texts)
def test_a_text_is_lowered_as_str_lower_and_walked_as_the_oracles_walk_it(text):
    assert _scan.lowered(text) == text.lower()
    assert tokens(text) == py_tokens(text)
    table = default_static().table
    flat, _ = table.batch_ids([text])
    assert sorted(flat.tolist()) == sorted(py_static_ids(table.vocab, text))


def test_a_plain_text_with_nothing_to_lower_is_read_as_it_is_and_any_other_str_through_str_lower():
    plain = "ticket 50000: 提交报销单 in iam — nothing happened"
    assert _scan.lowered(plain) is plain  # no copy made: the fast path was taken

    class Loud(str):
        def lower(self):
            return "LOUD"

    assert _scan.lowered(Loud("abc")) == "LOUD"  # a subclass's own lower, as the method call gave it
    assert _scan.lowered("ΟΔΟΣ Α") == "οδος α"  # final sigma: str.lower's context
