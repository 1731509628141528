"""The common-shape check of a perception (``schemas.api.common_perceive``, issue 28) accepts only what
``PerceiveInput`` accepts, with the model's values; anything else is left to the model (None)."""

from __future__ import annotations

import math
from collections import UserDict
from datetime import UTC, datetime

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.schemas.api import (
    MAX_NAME_CHARS,
    MAX_TEXT_BYTES,
    PerceiveInput,
    common_perceive,
    common_perceive_many,
    py_common_perceive,
)

WEIRD_STRINGS = ["", " ", "\t\n", "x", "bob", "a" * MAX_NAME_CHARS, "a" * (MAX_NAME_CHARS + 1), "工单系统", "\ud800",
                 "ev\n1", "ev\x00", "ev\u2028", "é" * 300, "Ｘ", "—"]
strings = st.one_of(st.sampled_from(WEIRD_STRINGS), st.text(max_size=12))
values = st.one_of(st.none(), strings, st.booleans(), st.integers(-2, 2), st.floats(allow_nan=True),
                   st.just([]), st.just(()), st.lists(strings, max_size=3),
                   st.dictionaries(strings, strings, max_size=2), st.just(datetime(2024, 1, 1, tzinfo=UTC)),
                   st.sampled_from(["message", "anomaly", "explicit", "tool"]))
NAMES = ["tenant", "agent", "task", "kind", "text", "system", "identity", "action", "expected", "actual", "entities",
         "scope", "signal", "success", "polarity", "session", "speaker", "emotion", "origin", "ts", "event_id", "extra"]
fields = st.dictionaries(st.sampled_from(NAMES), values, max_size=8)


def _model(fields: dict) -> dict | None:
    try:
        return PerceiveInput(**fields).__dict__
    except ValueError:
        return None


@settings(max_examples=examples(800), deadline=None)
@given(fields, st.sampled_from(["t", "acme", " ", "工单"]), st.sampled_from(["ticket 1", "", None, " ", "x" * 10]))
def test_what_the_check_accepts_the_model_accepts_with_the_same_values(given_fields, tenant, text):
    one = {"tenant": tenant, "text": text, **given_fields}
    fast = common_perceive(one)
    if fast is not None:
        assert fast == _model(one)


def test_the_common_shape_is_taken_without_the_model():
    one = {"tenant": "bench", "agent": "agent-1", "task": "t1", "kind": "anomaly", "text": "ticket 1: 登录 — 403",
           "system": "IAM", "action": "submit", "success": False, "scope": {"user": "bob"}, "entities": ["CR-1"],
           "event_id": "ev-1", "polarity": -0.5, "signal": "explicit", "origin": "user", "session": "s-1"}
    assert common_perceive(one) == PerceiveInput(**one).__dict__


@pytest.mark.parametrize("change", [
    {"tenant": " "}, {"text": None, "action": " "}, {"kind": "chat"}, {"success": 0}, {"polarity": 2.0},
    {"polarity": math.nan}, {"event_id": "ev\n1"}, {"text": "x" * (MAX_TEXT_BYTES + 1)}, {"text": "\ud800"},
    {"entities": ["ok", ""]}, {"scope": {"k": 1}}, {"extra": 1}, {"ts": datetime(2024, 1, 1, tzinfo=UTC)},
    {"agent": "a" * (MAX_NAME_CHARS + 1)}, {"entities": ("CR-1",)},
])
def test_anything_else_is_left_to_the_model(change):
    assert common_perceive({"tenant": "t", "text": "hello", **change}) is None


# The batch in C (``common_perceive_many``, ``recall/_scan.c`` ``common_perceives``) against the Python oracle
# (``py_common_perceive``): the same values, type for type, for mixed scripts, emoji, NUL, long repeats,
# whitespace of every kind and texts at the byte limit.
class _Key(str):
    """A str subclass key: equal to a field's name, not exactly a ``str``."""


TEXTS = ["工单 😀 ok", "\x00", "x\x00y", "\u3000", "\x1c\x1d", "\u200b", "é" * (MAX_TEXT_BYTES // 2),
         "é" * (MAX_TEXT_BYTES // 2 + 1), "😀" * (MAX_TEXT_BYTES // 4), "😀" * (MAX_TEXT_BYTES // 4) + "x",
         "x" * MAX_TEXT_BYTES, "x" * (MAX_TEXT_BYTES + 1), "工" * 700, "a\ud83d", "Ａ\u0301", " ticket 1 "]
ODD = [None, [], "tenant", UserDict({"tenant": "t", "text": "x"}), {1: "x", "tenant": "t", "text": "x"},
       {_Key("tenant"): "t", "text": "x"}, {"tenant": "t", "text": "x", "ts": None}, {"tenant": "t", "action": "x"}]
texts = st.one_of(strings, st.sampled_from(TEXTS), st.text(max_size=40), st.none())
EDGES = [{"tenant": "t", "text": "x", "polarity": p} for p in (math.nan, 1.0, -1.0, 1.0000001, -math.inf, 1)] + [
    {"tenant": "t", "text": "x", "success": s} for s in (0, 1, True)]
events = st.one_of(
    st.sampled_from(EDGES),
    st.builds(lambda tenant, text, more: {"tenant": tenant, "text": text, **more},
              st.sampled_from(["t", "acme", " ", "工单", "\x00", "a" * MAX_NAME_CHARS]), texts, fields),
    st.sampled_from(ODD))


def _typed(values: dict | None):
    return None if values is None else {k: (type(v), v) for k, v in values.items()}


@settings(max_examples=examples(600), deadline=None)
@given(st.lists(events, max_size=12))
def test_the_batch_in_c_is_the_oracle_of_each_event(batch):
    fast = common_perceive_many(batch)
    assert [_typed(v) for v in fast] == [_typed(py_common_perceive(e)) for e in batch]
    for values, event in zip(fast, batch, strict=True):
        if values is not None:  # copies: the caller's list and dict changed later change nothing here
            assert values["entities"] is not event.get("entities") and values["scope"] is not event.get("scope")


@pytest.mark.parametrize("scope", [{"user": "bob "}, {"session": "s  1"}, {"user": "b\u043eb"}, {"user": " bob"}])
def test_a_scope_identity_not_plainly_an_identifier_goes_to_the_model_in_c_and_in_the_oracle(scope):
    event = {"tenant": "t", "text": "x", "scope": scope}
    assert common_perceive_many([event]) == [None] and py_common_perceive(event) is None
    other = {"tenant": "t", "text": "x", "scope": {"region": next(iter(scope.values()))}}  # not an identity: kept
    assert common_perceive_many([other]) == [py_common_perceive(other)] != [None]


def test_the_batch_takes_the_common_shape_and_leaves_the_rest():
    good = {"tenant": "bench", "agent": "agent-1", "task": "t1", "kind": "anomaly", "text": "ticket 1: 登录 — 403 😀",
            "system": "IAM", "action": "submit", "success": False, "scope": {"user": "bob"}, "entities": ["CR-1"],
            "event_id": "ev-1", "polarity": -0.5, "signal": "explicit", "origin": "user", "session": "s-1"}
    out = common_perceive_many([good, *ODD, {**good, "ts": None}])
    assert out[0] == PerceiveInput(**good).__dict__
    assert out[1:7] == [None] * 6  # not a dict, a key not exactly a str: the model decides
    assert out[7] == PerceiveInput(tenant="t", text="x").__dict__  # ts None is the default
    assert out[8] == PerceiveInput(tenant="t", action="x").__dict__
    assert out[9] == out[0]
    with pytest.raises(TypeError):
        common_perceive_many((good,))  # a list only
