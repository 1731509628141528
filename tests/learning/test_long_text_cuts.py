"""``runtime._long_text_parts`` cuts a batch before each record holding a long text in one C pass
(``_scan.long_text_cuts``, issue 28 round twenty-three). It must cut where the comprehension it replaced did, kept
here as the oracle, on drawn batches: texts absent, None, empty, short, at and around the limit, in zh and emoji
(code points counted, not bytes), a str subclass, a truthy non-str with a length, one without (the same error), and
records that are not dicts (their own ``get``)."""

from __future__ import annotations

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.learning import runtime
from hindbrain.recall import _scan
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded

LIMIT = 12  # a small limit: the drawn texts reach it and pass it


def oracle_cuts(batch: list, limit: int) -> list[int]:
    """Round twenty-two's comprehension."""
    return [n for n, d in enumerate(batch) if len(d.record.get("text") or "") >= limit]


class Said(str):
    """A str subclass: measured as the str it is."""


class OwnGet:
    """A record that is not a dict: its own ``get`` answers."""

    def __init__(self, text):
        self.text = text

    def get(self, name, default=None):
        return self.text if name == "text" else default


PIECES = st.sampled_from(("a", "x y", "报销单", "🙂", "—", "\u0130", "ticket 42: "))
TEXT = st.one_of(
    st.none(), st.just(""), st.lists(PIECES, max_size=8).map("".join),
    st.integers(LIMIT - 2, LIMIT + 2).map(lambda n: "字" * n),
    st.integers(LIMIT - 2, LIMIT + 2).map(lambda n: "🙂" * n),
    st.integers(0, 2 * LIMIT).map(lambda n: Said("s" * n)), st.lists(st.just(1), max_size=2 * LIMIT),
    st.just(0), st.just(()))


@st.composite
def batches(draw) -> list:
    out = []
    for n in range(draw(st.integers(0, 12))):
        text, shape = draw(TEXT), draw(st.sampled_from(("dict", "absent", "own get")))
        record = {"text": text} if shape == "dict" else {"kind": "action"} if shape == "absent" else OwnGet(text)
        out.append(Decoded(Position("perceptions", 0, n), "perception", record))
    return out


def outcome(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared by type and message
        return type(exc), str(exc)


@settings(max_examples=examples(500), deadline=None)
@given(batches(), st.sampled_from((0, 1, LIMIT, 8_192)))
def test_the_cuts_are_the_comprehensions(batch, limit):
    assert outcome(_scan.long_text_cuts, batch, limit) == outcome(oracle_cuts, batch, limit)


def test_a_text_without_a_length_is_refused_as_before():
    batch = [Decoded(Position("p", 0, 0), "perception", {"text": 5})]
    assert outcome(_scan.long_text_cuts, batch, 1) == outcome(oracle_cuts, batch, 1) == (
        TypeError, "object of type 'int' has no len()")


def test_the_parts_are_cut_where_they_were():
    limit = runtime.LONG_TEXT_CHARS
    texts = ["a", "字" * limit, None, "b" * (limit - 1), "🙂" * limit, ""]
    batch = [Decoded(Position("p", 0, n), "perception", {"text": t}) for n, t in enumerate(texts)]
    assert _scan.long_text_cuts(batch, limit) == oracle_cuts(batch, limit) == [1, 4]
    assert [(gives_way, [d.position.offset for d in part]) for gives_way, part in runtime._long_text_parts(batch)] == [
        (False, [0]), (True, [1, 2, 3]), (True, [4, 5])]
