"""A batch's message keys made in one C pass (``_scan.message_keys``, issue 28 round twenty-two, in ``to_messages``):
each is ``key_of``'s, kept as the oracle — the same str, or the same error, on drawn envelopes (zh, emoji, empty,
None and other falsy agents, values that are not str, missing keys, records that are not dicts)."""

from __future__ import annotations

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan
from hindbrain.streams.topics import key_of


class Named(str):
    """A str subclass: an f-string formats it (``format``), it is not taken as is."""

    def __format__(self, spec):
        return f"<{str(self)}>"


class Loud:
    def __format__(self, spec):
        raise ValueError("no format")


_TEXT = st.one_of(st.sampled_from(["", "acme", "客户-7", "🔥/🔥", "a\x00b", "x" * 200]), st.text(max_size=8))
_VALUE = st.one_of(_TEXT, st.none(), st.just(0), st.just(False), st.integers(), st.just(2.5),
                   _TEXT.map(Named), st.just(Loud()))


@st.composite
def records(draw):
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from([[], "text", 3, None]))  # not a dict: the subscript's error
    envelope = {}
    for name in ("tenant", "agent"):
        if kind == 1 and name == "tenant" or kind == 2 and name == "agent":
            continue  # a missing key: KeyError
        envelope[name] = draw(_VALUE)
    return {} if kind == 3 else {"envelope": envelope, "text": draw(_TEXT)}


def oracle(batch):
    try:
        return [key_of(r) for r in batch]
    except Exception as exc:  # noqa: BLE001 - compared with the C pass's
        return type(exc), str(exc)


def ours(batch):
    try:
        return _scan.message_keys(batch)
    except Exception as exc:  # noqa: BLE001 - compared with the oracle's
        return type(exc), str(exc)


@settings(max_examples=examples(600), deadline=None)
@given(st.lists(records(), max_size=8))
def test_message_keys_are_key_of(batch):
    got = ours(batch)
    assert got == oracle(batch)
    if isinstance(got, list):
        assert all(type(k) is str for k in got)


def test_message_keys_of_a_common_batch():
    batch = [{"envelope": {"tenant": "acme", "agent": agent}} for agent in ("a-1", None, "", "助手", "a-1")]
    assert _scan.message_keys(batch) == ["acme/a-1", "acme/", "acme/", "acme/助手", "acme/a-1"]
    assert _scan.message_keys([]) == []
