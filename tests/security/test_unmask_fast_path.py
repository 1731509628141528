"""``unmasked`` skips the confusables table for a text that holds none of its characters (issue
28, round two: an em dash or Chinese made every event pay the full ``translate``). The result
must be the table's own, disguised or not."""

from __future__ import annotations

import html
import unicodedata

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall.disguise import _table, unmasked

# Latin, an em dash, Chinese, and characters the table rewrites: Cyrillic and Greek look-alikes,
# zero-width and bidi controls, the soft hyphen, full-width letters (NFKC).
CHARS = st.sampled_from(list("abc acct 42 —工单系统") + ["а", "о", "і", "α", "\u200b", "\u202e", "\u00ad", "Ａ", "ｃ"])


def reference(text: str) -> str:
    if "&" in text:
        text = html.unescape(html.unescape(text))
    return unicodedata.normalize("NFKC", text).translate(_table())


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(CHARS, max_size=30).map("".join))
def test_unmasked_is_the_table_applied(text):
    assert unmasked(text) == reference(text)


def test_a_look_alike_beside_chinese_is_still_replaced():
    assert unmasked("工单 аccount — 403") == "工单 account — 403"
